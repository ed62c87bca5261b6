import Foundation
import HeraldCore

/// Why the app's answer to an approval card was not recorded.
public enum ApprovalAnswerFailure: Error, Sendable {
    /// The device has no activity with the slug.
    case notFound
    /// The rules refused it (not an approval card, an unknown option, answered before, ended).
    case refused(ApprovalRefusal)
    /// The store did not answer (`cause`: its error, logged with the answer).
    case storeUnavailable(cause: String)
}

extension ActivityService {
    /// `POST /api/push/activities/{slug}/answer`: records the person's tap on an approval card of `device` (the first
    /// answer wins) and wakes the card's long polls. Nothing is pushed now: the server ends the card
    /// ``ApprovalRules/endDelay`` later, from the store's schedule (``ActivityDispatcher``).
    public func answer(_ option: String, slug: String, of device: Device) async throws(ApprovalAnswerFailure) {
        let now = clock.now()
        typealias Recorded = Result<Void, ApprovalAnswerFailure>
        let recorded: Recorded
        do {
            recorded = try await store.changeActivity(deviceID: device.id, slug: slug) { neighbourhood in
                guard let record = neighbourhood.record, !record.isTombstone, let activity = try? record.decodedActivity() else {
                    return (ActivityWrites(), Recorded.failure(.notFound))
                }
                let answered: Activity
                do throws(ApprovalRefusal) {
                    answered = try ApprovalRules.answer(activity, option: option, now: now)
                } catch {
                    return (ActivityWrites(), Recorded.failure(.refused(error)))
                }
                return (ActivityWrites(upserts: [try record.recording(answered, push: nil, now: now)]), Recorded.success(()))
            }
        } catch {
            throw .storeUnavailable(cause: "\(error)")
        }
        try recorded.get()
        settled(ActivityKey(deviceID: device.id, slug: slug))
    }
}
