import Foundation
import HeraldCore
import HeraldDelivery
import Hummingbird

extension SenderDelivery {
    /// Sends `draft` to every member of the topic a sender names (an ntfy topic or a Bark device key that is a topic
    /// id): one accept, one notification per member (``SendPipeline/send(_:toMembers:)``). An unknown topic is 404 and
    /// a failed credential check; a send none of whose notifications was stored throws the first member's refusal
    /// (``TopicAnswers/refusal(_:now:)``), which the dialect renders in its own error shape.
    func send(
        _ draft: NotificationDraft, toTopic text: String, field: String, request: Request, context: some RemoteAddressRequestContext
    ) async throws -> FanoutReceipt {
        guard let topics else {
            throw APIError.invalidField(field, "\(field) must be a USER_ID (64 hexadecimal characters) of a device registered with Herald.")
        }
        let topic = try await topics.topic(sender: text, field: field, request: request, context: context)
        let targets = try await topics.targets(of: topic)
        let receipt: FanoutReceipt
        do throws(SendError) {
            receipt = try await pipeline.send(draft, toMembers: targets)
        } catch {
            throw SendAnswers.apiError(error, now: clock.now())
        }
        guard receipt.delivery != .none else { throw TopicAnswers.refusal(receipt, now: clock.now()) }
        return receipt
    }
}
