import HeraldCore
import Logging
import Synchronization
import Testing

@testable import HeraldServer

/// Start-up's store steps wait for a slow store (``StartUpStep``): a missed deadline is tried again, up to five tries;
/// any other error ends start-up at once.
@Suite("Start-up steps")
struct StartUpStepTests {
    let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    struct Refused: Error {}

    @Test func aMissedDeadlineIsTriedAgainUntilTheStoreAnswers() async throws {
        let tries = Mutex(0)
        let value = try await StartUpStep.run("a step", logger: logger) { () async throws -> Int in
            let count = tries.withLock { count in
                count += 1
                return count
            }
            if count < 3 { throw StoreDeadlineExceeded("a connection", after: .seconds(1)) }
            return 42
        }
        #expect(value == 42)
        #expect(tries.withLock { $0 } == 3)
    }

    @Test func aStoreThatNeverAnswersEndsStartUpAfterFiveTries() async throws {
        let tries = Mutex(0)
        await #expect(throws: StoreDeadlineExceeded.self) {
            try await StartUpStep.run("a step", logger: logger) { () async throws -> Int in
                tries.withLock { $0 += 1 }
                throw StoreDeadlineExceeded("a connection", after: .seconds(1))
            }
        }
        #expect(tries.withLock { $0 } == StartUpStep.attempts)
    }

    @Test func anyOtherErrorEndsStartUpAtOnce() async throws {
        let tries = Mutex(0)
        await #expect(throws: Refused.self) {
            try await StartUpStep.run("a step", logger: logger) { () async throws -> Int in
                tries.withLock { $0 += 1 }
                throw Refused()
            }
        }
        #expect(tries.withLock { $0 } == 1)
    }
}
