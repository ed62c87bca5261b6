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
        for record in writes.upserts { rows[record.slug] = Self.kept(record, over: rows[record.slug]) }
        activityRows[deviceID] = rows
        return result
    }

    public func changeActivity<Result: Sendable>(
        deviceID: Device.ID, slug: String, _ change: @escaping @Sendable (ActivityNeighbourhood) throws -> (ActivityWrites, Result)
    ) async throws -> Result {
        guard try await device(id: deviceID) != nil else { throw StoreError.notFound("device") }
        let rows = activityRows[deviceID] ?? [:]
        let neighbourhood = ActivityNeighbourhood(
            record: rows[slug],
            otherOngoing: rows.values.filter { $0.slug != slug && $0.state == ActivityRecord.ongoingState }.sorted { $0.slug < $1.slug }
                .map(\.withoutExtras),
            activityCount: rows.values.count { $0.state != ActivityRecord.tombstoneState })
        let (writes, result) = try change(neighbourhood)
        var changed = rows
        for deleted in writes.deletions { changed[deleted] = nil }
        for record in writes.upserts where record.deviceID == deviceID { changed[record.slug] = Self.kept(record, over: rows[record.slug]) }
        activityRows[deviceID] = changed
        return result
    }

    /// An upsert of a record read without its extras keeps the stored ones (as the databases' upserts do).
    private static func kept(_ record: ActivityRecord, over stored: ActivityRecord?) -> ActivityRecord {
        guard !record.extrasRead else { return record }
        var kept = record
        kept.extras = stored?.extras
        kept.extrasRead = true
        return kept
    }

    public func releaseActivityLeases(owner: String) async throws {
        for (deviceID, rows) in activityRows {
            activityRows[deviceID] = rows.mapValues { record in
                guard record.lease?.owner == owner else { return record }
                var released = record
                released.lease = nil
                return released
            }
        }
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
            return claimed.withoutExtras
        }
    }

    public func nextActivityDue() async throws -> Date? {
        activityRows.values.flatMap(\.values).compactMap(\.dueAt).min()
    }

    public func nextLiveActivityTimestamp(token: String, now: Date) async throws -> Int {
        let seconds = LiveActivityTimestamp.seconds(now)
        let timestamp = LiveActivityTimestamp.next(after: liveActivityTimestamps[token], nowSeconds: seconds)
        liveActivityTimestamps[token] = timestamp
        let forgetBefore = seconds.subtractingReportingOverflow(liveActivityTimestampMemory).partialValue
        if liveActivityTimestamps.count > 1_000 { liveActivityTimestamps = liveActivityTimestamps.filter { $0.value >= forgetBefore } }
        return timestamp
    }
}

extension ActivityRecord {
    /// This record as read without its extras.
    fileprivate var withoutExtras: ActivityRecord {
        var record = self
        record.extras = nil
        record.extrasRead = false
        return record
    }
}
