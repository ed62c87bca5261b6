import Foundation
import Testing

@testable import HeraldStore

/// Herald's clock against PostgreSQL's, read once at start (`PostgresClockCheck`): batches carry their deadline by
/// Herald's clock, so a database clock far off is a warning in the log.
@Suite("PostgreSQL: the clocks checked at start")
struct PostgresClockCheckTests {
    let sent = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aDatabaseClockWithinTheRoundTripAndTheToleranceIsNoWarning() {
        let answered = sent.addingTimeInterval(0.2)
        for database in [sent.timeIntervalSince1970 - 0.5, sent.timeIntervalSince1970 + 0.1, answered.timeIntervalSince1970 + 0.5] {
            #expect(PostgresClockCheck.warning(sent: sent, answered: answered, database: database) == nil, "\(database)")
        }
    }

    @Test func aDatabaseClockAheadOrBehindIsAWarningThatSaysHowFar() throws {
        let answered = sent.addingTimeInterval(0.2)
        let ahead = try #require(PostgresClockCheck.warning(sent: sent, answered: answered, database: answered.timeIntervalSince1970 + 0.501))
        #expect(ahead.contains("0.601 s ahead of Herald's"))
        let behind = try #require(PostgresClockCheck.warning(sent: sent, answered: answered, database: sent.timeIntervalSince1970 - 4))
        #expect(behind.contains("4.100 s behind Herald's"))
    }

    @Test func aReadingThatIsNotATimeIsNoWarning() {
        #expect(PostgresClockCheck.warning(sent: sent, answered: sent, database: .nan) == nil)
        #expect(PostgresClockCheck.warning(sent: sent, answered: sent, database: .infinity) == nil)
        #expect(PostgresClockCheck.warning(sent: sent.addingTimeInterval(1), answered: sent, database: 0) == nil)
    }
}
