import Foundation
import HeraldActivities
import HeraldCore
import Hummingbird
import Logging

/// The long polls of `GET /activities/{slug}?wait=N`, one key per activity (device and slug): a waiter wakes once the
/// approval card is settled (``ApprovalRules/isSettled(_:)``: answered, no longer ongoing, gone, or not an approval
/// card), when its time is up, or at once at shutdown. With several instances the store is read for every activity
/// waited on here once a second (one read per activity).
typealias ApprovalWaiters = LongPollWaiters<ActivityKey, Bool>

extension LongPollWaiters where Key == ActivityKey, Value == Bool {
    convenience init(store: any ActivityStore, pollInterval: Duration? = nil) {
        self.init(pollInterval: pollInterval) { keys in
            var settled: [ActivityKey: Bool] = [:]
            for key in keys {
                let record = try await store.activity(deviceID: key.deviceID, slug: key.slug)
                let activity = record.flatMap { $0.isTombstone ? nil : try? $0.decodedActivity() }
                if ApprovalRules.isSettled(activity) { settled[key] = true }
            }
            return settled
        }
    }
}

/// The app's side of approval cards, with the device owner's credentials (HTTP Basic `user_id:device_secret`), the
/// answers' reporting path for activities:
/// - `POST /api/push/activities/{slug}/answer` `{"option": "<id>"}` → 204: the person tapped that option. The first
///   answer wins: a later one is 409 `already_answered` with the first in `answer`.
///
/// 400 `invalid_field` `option` for an id that is not one of the card's options (`unknown_field` for another member),
/// 404 `not_found` for a slug the device has no activity for, 409 `activity_not_answerable` for an activity that is not
/// an approval card or that ended unanswered. Errors are Herald's (`{"error", "code", "field"}`).
struct ApprovalAnswerController<Context: RemoteAddressRequestContext>: Sendable {
    let service: ActivityService
    let directory: DeviceDirectory
    let credentials: CredentialGuard
    let bodyLimit: Int

    func addRoutes(to group: RouterGroup<Context>) {
        group.post("activities/:slug/answer", use: answer)
    }

    @Sendable func answer(_ request: Request, context: Context) async throws -> Response {
        let device = try await credentials.check(.basic(of: request), of: request, context: context) {
            try await directory.owner(of: request)
        }
        let slug = context.parameters.get("slug") ?? ""
        guard ActivitySlug.isValid(slug) else { throw APIError.invalidField("slug", "slug must be an activity's slug.") }
        let fields = FieldReader(try await JSONBody.object(of: request, limit: bodyLimit))
        try fields.refuseUnknownMembers(allowed: ["option"])
        let option = try fields.requiredNonEmptyString("option")
        do throws(ApprovalAnswerFailure) {
            try await service.answer(option, slug: slug, of: device)
        } catch {
            throw Self.apiError(error)
        }
        context.logger.info("Approval answered", metadata: ["device": "\(device.id)", "slug": "\(slug)"])
        return Response(status: .noContent)
    }

    /// Herald's answers for each refusal.
    static func apiError(_ failure: ApprovalAnswerFailure) -> APIError {
        switch failure {
        case .notFound: APIError(.notFound, message: "This device has no activity with that slug.")
        case .storeUnavailable(let cause): APIError.storeUnavailable(cause)
        case .refused(.unknownOption(let allowed)):
            APIError.invalidField("option", "option must be the id of one of the card's options: \(allowed.joined(separator: ", ")).")
        case .refused(.alreadyAnswered(let first)):
            APIError(
                .alreadyAnswered, message: "This approval card was answered before; the first answer stays.",
                extra: ["answer": ActivityJSON.answer(first)])
        case .refused(.notApproval):
            APIError(.activityNotAnswerable, message: "This activity is not an approval card; it takes no answer.")
        case .refused(.notOngoing):
            APIError(.activityNotAnswerable, message: "This approval card ended unanswered; it takes no answer.")
        }
    }
}
