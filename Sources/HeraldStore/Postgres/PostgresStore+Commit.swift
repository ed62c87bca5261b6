import Foundation
import HeraldCore
import PostgresNIO

extension PostgresStore {
    /// A batch in one round trip: one call of `herald_commit_batch` (``PostgresCommitStatement``, migration 21), which
    /// saves the outcomes, locks and reads the counters, counts the backlogs, decides the accepts in order, writes the
    /// counters back and inserts the accepted notifications, atomically as every single statement is. The counter rows
    /// stay locked until it ends, so concurrent batches for one device (from any instance, on any connection) queue
    /// there and the quota is exact. The gate is passed just before the statement is sent (it is the commit); with a
    /// call deadline (`callTimeout`) the database refuses to write a statement that reaches it after that deadline
    /// (see ``commitInOneStatement(_:outcomes:)``). A batch with a dead token (its devices are deactivated in the
    /// same transaction; rare) is written as before: `BEGIN`, the statements of ``PostgresBatchStatements``, `COMMIT`.
    public func commit(_ batch: WriteBatch) async throws -> [AcceptDecision] {
        // Outcomes: one per notification (a second one for the same notification would find its lease released).
        var seen: Set<PushNotification.ID> = []
        let outcomes = batch.outcomes.filter { seen.insert($0.notification.id).inserted }
        let notifications = batch.accepts.map(\.notification)
        try await ensurePartitions(for: notifications)
        let inTransaction = outcomes.contains { $0.deadToken != nil }
        let body: @Sendable (PostgresConnection) async throws -> ([AcceptDecision], [Device.ID]) = { [self] connection in
            let result = try await write(batch, outcomes: outcomes, connection)
            try batch.gate?.pass()  // throws: rolled back; passed: COMMIT follows
            return result
        }
        let once: @Sendable () async throws -> ([AcceptDecision], [Device.ID]) = { [self] in
            if inTransaction { return try await transaction(body) }
            return (try await commitInOneStatement(batch, outcomes: outcomes), [])
        }
        let (decisions, deactivated): ([AcceptDecision], [Device.ID])
        do {
            do {
                (decisions, deactivated) = try await once()
            } catch let error as PostgresStoreError where error.sqlState == "23514" && !notifications.isEmpty {
                // No partition for a notification's day: another instance dropped it (PostgresPartitions.swift).
                try await ensurePartitions(for: notifications, force: true)
                (decisions, deactivated) = try await once()
            }
        } catch let error as PostgresStoreError where error.sqlState == "23503" {
            throw StoreError.notFound("device")  // an accept for a device that is gone: nothing of the batch is written
        }
        for id in deactivated { devices.invalidate(id: id) }
        await presence.devicesChanged(deactivated)
        return decisions
    }

    /// The batch as one statement. A deadlock or serialization failure rolled it back entirely: it is sent again, as a
    /// transaction is. The deadline passed to the database is the earlier of this call's own (now + `callTimeout`)
    /// and the batch's (``CommitGate/deadline``: when the group commit gives up on it), as seconds since 1970 by this
    /// machine's clock (instances and the database keep their clocks in step already, for the leases): a statement
    /// that ends after it (a network that held it, a database that stopped answering) is rolled back there instead of
    /// being written for a caller who was answered 503 meanwhile, as a transaction given up before its gate was.
    private func commitInOneStatement(_ batch: WriteBatch, outcomes: [DeliveryOutcome]) async throws -> [AcceptDecision] {
        let now = ContinuousClock.now
        let deadline = [callTimeout.map { now + $0 }, batch.gate?.deadline].compactMap { $0 }.min().map { instant in
            let (seconds, attoseconds) = (instant - now).components
            return Date().timeIntervalSince1970 + Double(seconds) + Double(attoseconds) / 1e18
        }
        let statement = PostgresCommitStatement(outcomes: outcomes, owner: batch.owner, accepts: batch.accepts, deadline: deadline)
        var attempt = 1
        while true {
            try batch.gate?.pass()  // throws: nothing sent; passed: the statement is the commit
            do {
                let rows = try await write(statement)
                guard rows.count == batch.accepts.count, rows.enumerated().allSatisfy({ $0.offset + 1 == $0.element.index }) else {
                    throw CorruptPostgresRow(detail: "herald_commit_batch answered \(rows.count) decisions for \(batch.accepts.count) accepts")
                }
                return rows.map(\.decision)
            } catch let error as PostgresStoreError where ["40P01", "40001"].contains(error.sqlState) && attempt < 5 {
                attempt += 1
            }
        }
    }

    /// The batch as statements of one transaction (``PostgresBatchStatements``): a batch with a dead token.
    private func write(
        _ batch: WriteBatch, outcomes: [DeliveryOutcome], _ connection: PostgresConnection
    ) async throws -> ([AcceptDecision], [Device.ID]) {
        typealias Key = BatchQuotaLedger.Key
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
