import Foundation
import Logging
import PostgresNIO

/// Herald's clock against PostgreSQL's, checked once at start: a batch carries its deadline as seconds since 1970 by
/// Herald's clock and PostgreSQL refuses a batch that ends after it by its own (`herald_commit_batch`,
/// docs/operations.md "A database that does not answer"), so clocks further apart than the store's call deadline
/// would refuse (or keep) batches wrongly. A difference over ``tolerance`` is logged as a warning at start.
enum PostgresClockCheck {
    /// The difference logged: far below the 3 s call deadline, far above what NTP leaves.
    static let tolerance: TimeInterval = 0.5

    /// The warning for a reading of PostgreSQL's clock (`database`, seconds since 1970) taken between `sent` and
    /// `answered` by Herald's; `nil` within ``tolerance`` (the round trip's half counts in Herald's favour).
    static func warning(sent: Date, answered: Date, database: Double) -> String? {
        guard database.isFinite, answered >= sent else { return nil }
        let earliest = sent.timeIntervalSince1970 - tolerance
        let latest = answered.timeIntervalSince1970 + tolerance
        guard database < earliest || database > latest else { return nil }
        let middle = (sent.timeIntervalSince1970 + answered.timeIntervalSince1970) / 2
        let difference = database - middle
        let direction = difference > 0 ? "ahead of" : "behind"
        return "PostgreSQL's clock is \(String(format: "%.3f", abs(difference))) s \(direction) Herald's: batches carry their deadline by "
            + "Herald's clock and PostgreSQL refuses one that ends after it by its own; keep both clocks synchronised (NTP)"
    }

    /// Reads PostgreSQL's clock once and logs ``warning(sent:answered:database:)`` if there is one.
    static func check(_ client: PostgresClient, logger: Logger) async throws {
        let sent = Date()
        let rows = try await client.query("SELECT extract(epoch FROM clock_timestamp())::float8").collect()
        let answered = Date()
        guard let database = try rows.first?.decode(Double.self) else { return }
        if let warning = warning(sent: sent, answered: answered, database: database) { logger.warning("\(warning)") }
    }
}
