import Foundation
import HeraldCore

extension InMemoryStore {
    public func activities(deviceID: Device.ID) async throws -> [ActivityRecord] {
        (activityRows[deviceID] ?? [:]).values.sorted { $0.slug < $1.slug }
    }

    public func activity(deviceID: Device.ID, slug: String) async throws -> ActivityRecord? {
        activityRows[deviceID]?[slug]
    }

    public func changeActivities<Result: Sendable>(
        deviceID: Device.ID, _ change: @escaping @Sendable ([ActivityRecord]) throws -> (ActivityWrites, Result)
    ) async throws -> Result {
        guard try await device(id: deviceID) != nil else { throw StoreError.notFound("device") }
        let (writes, result) = try change(try await activities(deviceID: deviceID))
        var rows = activityRows[deviceID] ?? [:]
        for slug in writes.deletions { rows[slug] = nil }
        for record in writes.upserts { rows[record.slug] = record }
        activityRows[deviceID] = rows
        return result
    }

    public func claimDueActivities(at now: Date, lease: Lease, limit: Int) async throws -> [ActivityRecord] {
        let due = activityRows.values.flatMap(\.values)
            .filter { record in
                guard let dueAt = record.dueAt, dueAt <= now else { return false }
                return record.lease.map { $0.expiresAt <= now } ?? true
            }
            .sorted { ($0.dueAt ?? now, $0.slug) < ($1.dueAt ?? now, $1.slug) }
            .prefix(limit)
        return due.map { record in
            var claimed = record
            claimed.lease = lease
            activityRows[record.deviceID]?[record.slug] = claimed
            return claimed
        }
    }

    public func nextActivityDue() async throws -> Date? {
        activityRows.values.flatMap(\.values).compactMap(\.dueAt).min()
    }
}
