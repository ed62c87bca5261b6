import Foundation
import HeraldCore
import PostgresNIO

extension PostgresStore {
    /// One transaction of a fixed number of statements, whatever the batch's size (``PostgresBatchStatements``): the
    /// outcomes saved, the counters locked and read, the backlogs counted, then the counters written back and the
    /// accepted notifications inserted; the accepts are decided in between, in order (``BatchQuotaLedger``). The
    /// counter rows stay locked until the commit, so concurrent batches for one device (from any instance, on any
    /// connection) queue there and the quota is exact.
    public func commit(_ batch: WriteBatch) async throws -> [AcceptDecision] {
        let (decisions, deactivated): ([AcceptDecision], [Device.ID])
        let notifications = batch.accepts.map(\.notification)
        try await ensurePartitions(for: notifications)
        let body: @Sendable (PostgresConnection) async throws -> ([AcceptDecision], [Device.ID]) = { [self] connection in
            let result = try await write(batch, connection)
            try batch.gate?.pass()  // throws: rolled back; passed: COMMIT follows
            return result
        }
        do {
            do {
                (decisions, deactivated) = try await transaction(body)
            } catch let error as PostgresStoreError where error.sqlState == "23514" && !notifications.isEmpty {
                // No partition for a notification's day: another instance dropped it (PostgresPartitions.swift).
                try await ensurePartitions(for: notifications, force: true)
                (decisions, deactivated) = try await transaction(body)
            }
        } catch let error as PostgresStoreError where error.sqlState == "23503" {
            throw StoreError.notFound("device")  // an accept for a device that is gone: nothing of the batch is written
        }
        for id in deactivated { devices.invalidate(id: id) }
        await presence.devicesChanged(deactivated)
        return decisions
    }

    private func write(_ batch: WriteBatch, _ connection: PostgresConnection) async throws -> ([AcceptDecision], [Device.ID]) {
        typealias Key = BatchQuotaLedger.Key
        // Outcomes: one per notification (a second one for the same notification would find its lease released).
        var seen: Set<PushNotification.ID> = []
        let outcomes = batch.outcomes.filter { seen.insert($0.notification.id).inserted }
        var saved: [PushNotification.ID: String?] = [:]
        if !outcomes.isEmpty {
            let statement = PostgresBatchStatements.SaveOutcomes(outcomes: outcomes, owner: batch.owner)
            for (id, day) in try await run(statement, on: connection) { saved.updateValue(day, forKey: id) }
        }
        let released: [Key] = outcomes.compactMap { outcome in
            guard outcome.releasesQuota, case let day?? = saved[outcome.notification.id] else { return nil }
            return Key(deviceID: outcome.notification.deviceID, day: day)
        }
        let counted = Set(batch.accepts.map { Key(deviceID: $0.notification.deviceID, day: $0.quota.day) })
        let keys = counted.union(released).sorted()
        var rows: [Key: BatchQuotaLedger.Row] = [:]
        if !keys.isEmpty {
            for (key, row, created) in try await run(PostgresBatchStatements.LockCounters(keys: keys), on: connection) {
                // A counter created only to be released was not there: releasing it changes nothing, as before.
                if !created || counted.contains(key) { rows[key] = row }
            }
        }
        var bounds: [Device.ID: Int] = [:]
        for request in batch.accepts {
            if let bound = request.quota.pendingMaximum { bounds[request.notification.deviceID] = max(bounds[request.notification.deviceID] ?? 0, bound) }
        }
        var pending: [Device.ID: Int] = [:]
        if !bounds.isEmpty {
            for (deviceID, count) in try await run(PostgresBatchStatements.CountPending(bounds: bounds), on: connection) {
                pending[deviceID] = count
            }
        }
        var ledger = BatchQuotaLedger(counters: rows, pending: pending)
        let decisions = batch.accepts.map { ledger.decide($0) }
        for key in released { ledger.release(key) }
        let accepted = zip(batch.accepts, decisions).compactMap { request, decision in
            if case .accepted = decision { request } else { nil }
        }
        let changed = ledger.changed.sorted().compactMap { key in ledger.counters[key].map { (key: key, row: $0) } }
        if !changed.isEmpty || !accepted.isEmpty {
            try await run(PostgresBatchStatements.WriteCountersAndInsert(counters: changed, accepted: accepted), on: connection)
        }
        var deactivated: [Device.ID] = []
        for outcome in outcomes where saved[outcome.notification.id] != nil {
            guard let token = outcome.deadToken else { continue }
            let notification = outcome.notification
            let deactivation = Self.deactivation(
                token: token, usedFor: notification.deviceID, reason: notification.lastError ?? "dead token", at: notification.updatedAt)
            deactivated += try await execute(deactivation, on: connection).map { try $0.decode(UUID.self) }
        }
        return (decisions, deactivated)
    }

    /// Runs one prepared statement of a transaction (prepared on the connection the first time) and returns its rows.
    @discardableResult
    func run<Statement: PostgresPreparedStatement>(_ statement: Statement, on connection: PostgresConnection) async throws -> [Statement.Row] {
        statements.count()
        var rows: [Statement.Row] = []
        for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
        return rows
    }
}

extension PostgresStore {
    /// Batches written at once, each on a connection of its own (the pool has more): while one waits for its
    /// round trips, the next is being written. Batches meet only at the counter rows they share, which they lock in
    /// one order.
    public var concurrentBatches: Int { 4 }
}
