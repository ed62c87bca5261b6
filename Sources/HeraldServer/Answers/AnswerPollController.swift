import Foundation
import HeraldCore
import Hummingbird

/// `GET /notifications/answers/{id}?wait=N`: the answer to a notification the calling API token sent
/// (`Authorization: Bearer hrd_…`, scope `notifications`), held up to N seconds (at most 25; a larger N waits 25) until
/// the answer lands. Another token's notification, one that is not answerable, or none is 404.
struct AnswerPollController<Context: RemoteAddressRequestContext>: Sendable {
    static var maximumWait: Int { 25 }

    let store: any NotificationStore
    let authorizer: PushWardAuthorizer
    let waiters: AnswerWaiters

    func addRoutes(to router: some RouterMethods<Context>) {
        router.get("notifications/answers/{id}", use: show)
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        let (token, device) = try await authorizer.authorize(request, context: context, scope: .notifications)
        let wait = try Self.wait(request.uri.queryParameters["wait"].map(String.init))
        let notFound = APIError.notFound("No answerable notification with this id was sent with this token.")
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else { throw notFound }
        guard let notification = try await storeCall({ try await store.notification(id: id) }), notification.deviceID == device.id,
            notification.content?.meta["sender_token"] == .string(token.id.lowercasedText), AnswerJSON.isAnswerable(notification.content)
        else { throw notFound }
        let answer = try await storeCall { try await waiters.wait(for: id, upTo: .seconds(wait)) }
        return JSONResponse.make(status: .ok, body: AnswerJSON.state(of: id, answer))
    }

    /// `wait`: absent for 0, else a whole number of seconds, at least 0; more than ``maximumWait`` waits that long.
    static func wait(_ given: String?) throws -> Int {
        guard let given, !given.isEmpty else { return 0 }
        // All digits but past Int: as long as any larger number.
        if given.utf8.allSatisfy({ (48...57).contains($0) }), Int(given) == nil { return maximumWait }
        guard let seconds = Int(given), seconds >= 0 else {
            throw APIError.invalidField("wait", "wait must be a whole number of seconds, 0 or more (at most \(maximumWait) are waited); got \"\(given)\".")
        }
        return min(seconds, maximumWait)
    }
}
