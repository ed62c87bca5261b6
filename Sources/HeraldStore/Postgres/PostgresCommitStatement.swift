import Foundation
import HeraldCore
import PostgresNIO

/// A whole group-commit batch as one call of `herald_commit_batch` (migration 21, PostgresMigrations+CommitBatch.swift):
/// one round trip, atomic as every single statement is, prepared once per connection. It returns one row per accept,
/// in order: the decision and the counters after it.
struct PostgresCommitStatement: PostgresPreparedStatement {
    static let name = "herald_commit_batch_v21"
    static let sql = """
        SELECT decision_index, decision_kind, decision_attempts, decision_successful, decision_errors, decision_total,
            decision_used_up
        FROM herald_commit_batch($1::uuid[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::float8[],
            $7::float8[], $8::float8[], $9::boolean[], $10::boolean[], $11::text,
            $12::text[], $13::boolean[], $14::bigint[], $15::bigint[], $16::bigint[], $17::boolean[],
            $18::uuid[], $19::uuid[], $20::text[], $21::bigint[], $22::text[], $23::bytea[], $24::text[], $25::text[],
            $26::bigint[], $27::text[], $28::text[], $29::float8[], $30::float8[], $31::float8[], $32::float8[],
            $33::text[], $34::bytea[], $35::text[], $36::text[], $37::float8[], $38::float8)
        """
    typealias Row = (index: Int, decision: AcceptDecision)

    /// At most one outcome per notification; none with a dead token (their devices are deactivated in the batch's
    /// transaction: ``PostgresStore/commit(_:)`` writes such a batch with its statements one by one).
    var outcomes: [DeliveryOutcome]
    var owner: String
    var accepts: [AcceptRequest]
    /// Seconds since 1970 past which the database refuses to write the batch (rolls it back), or `nil`.
    var deadline: Double?

    /// A bound as the function takes it: -1 for none; a negative bound means what 0 means.
    private static func bound(_ value: Int?) -> Int { value.map { max($0, 0) } ?? -1 }

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 38)
        let saved = outcomes.map(\.notification)
        bindings.append(saved.map(\.id))
        bindings.append(saved.map(\.status.rawValue))
        bindings.append(saved.map(\.attempts))
        try bindings.append(PostgresColumn(saved.map(\.lastError)))
        try bindings.append(PostgresColumn(saved.map(\.providerMessageID)))
        bindings.append(saved.map(\.updatedAt.timeIntervalSince1970))
        bindings.append(saved.map(\.nextAttemptAt.timeIntervalSince1970))
        bindings.append(saved.map(\.expiresAt.timeIntervalSince1970))
        bindings.append(outcomes.map(\.isParked))
        bindings.append(outcomes.map(\.releasesQuota))
        bindings.append(owner)
        bindings.append(accepts.map(\.quota.day))
        bindings.append(accepts.map(\.quota.countsAttempt))
        bindings.append(accepts.map { Self.bound($0.quota.maximum) })
        bindings.append(accepts.map { Self.bound($0.quota.exemptMaximum) })
        bindings.append(accepts.map { Self.bound($0.quota.pendingMaximum) })
        bindings.append(accepts.map { $0.notification.status == .pending })
        try bindings.appendNotificationColumns(accepts.map(\.notification), leases: accepts.map(\.lease))
        if let deadline { bindings.append(deadline) } else { bindings.appendNull() }
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let (index, kind, attempts, successful, errors, total, usedUp) = try row.decode((Int32, Int32, Int, Int, Int, Int, Bool).self)
        let counters = QuotaCounters(attempts: attempts, successful: successful, errors: errors, total: total)
        let decision: AcceptDecision
        switch kind {
        case 0: decision = .accepted(counters, usedUpQuota: usedUp)
        case 1: decision = .quotaExceeded(counters)
        case 2: decision = .exemptQuotaExceeded(counters)
        case 3: decision = .backlogFull(counters)
        default: throw CorruptPostgresRow(detail: "unknown decision \(kind) from herald_commit_batch")
        }
        return (Int(index), decision)
    }
}
