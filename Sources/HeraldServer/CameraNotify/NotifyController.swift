import Foundation
import HeraldCore
import HeraldDelivery
import Hummingbird

/// `POST /api/push/notify`: the camera app's send API. An unknown USER_ID counts as a failed credential check.
struct NotifyController<Context: RemoteAddressRequestContext>: Sendable {
    let pipeline: SendPipeline
    let directory: DeviceDirectory
    let credentials: CredentialGuard
    let clock: any WallClock
    let bodyLimit: Int
    /// Topic ids as targets (issue 42); `nil`: only USER_IDs.
    var topics: TopicDirectory? = nil

    func addRoutes(to group: RouterGroup<Context>) {
        group.post("notify", use: notify)
    }

    @Sendable func notify(_ request: Request, context: Context) async throws -> Response {
        let notify = try NotifyRequest(try await JSONBody.object(of: request, limit: bodyLimit))
        let recipient: NotifyRequest.Recipient
        if let given = notify.recipient {
            recipient = given
        } else if let bearer = Credentials.bearer(request) {
            recipient = try NotifyRequest.Recipient(bearer)
        } else {
            throw APIError.invalidField("user_id", "user_id is required (in the body or as Authorization: Bearer).")
        }
        let userID: UserID
        switch recipient {
        case .user(let parsed):
            userID = parsed
        case .topic(let topicID):
            guard let topics else { throw UserIDRule.refusal }  // without topics, a topic id is no USER_ID
            let topic = try await topics.topic(sender: topicID, field: "user_id", request: request, context: context)
            let targets = try await topics.targets(of: topic)
            let receipt: FanoutReceipt
            do throws(SendError) {
                receipt = try await pipeline.send(notify.draft, toMembers: targets)
            } catch {
                throw SendAnswers.apiError(error, now: clock.now())
            }
            return try TopicAnswers.created(receipt, now: clock.now())
        }
        let device = try await credentials.check(.userID(userID), of: request, context: context) {
            try await directory.device(userID: userID)
        }
        return try await SendAnswers.withRateLimitHeaders(of: device, pipeline: pipeline, clock: clock) {
            do throws(SendError) {
                let receipt = try await pipeline.send(notify.draft, to: device)
                return SendAnswers.created(receipt, now: clock.now())
            } catch {
                throw SendAnswers.apiError(error, now: clock.now())
            }
        }
    }
}
