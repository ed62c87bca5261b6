import Foundation
import GRDB
import Logging
import Synchronization

/// Watches the store's writes for failures of the disk (full, read-only, I/O errors): remembers whether the last
/// write failed, for `/readyz`, and logs such failures without letting a full disk fill the log too. A disk that is
/// nearly full lets some writes through and not others, so failures and recoveries are each logged at most once per
/// ``logInterval``; a failure report counts the failures since the previous one.
final class StoreWriteHealth: Sendable {
    static let logInterval: Duration = .seconds(60)

    private struct State {
        /// The last failure, while no write has succeeded since.
        var failure: String?
        var failuresSinceReport = 0
        var lastFailureReport: ContinuousClock.Instant?
        var lastRecoveryReport: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    /// The failure that makes the store unable to write, while it lasts.
    var failure: String? { state.withLock { $0.failure } }

    /// Whether `error` says that the disk, not the request, is at fault.
    static func isDiskFailure(_ error: any Error) -> Bool {
        guard let error = error as? DatabaseError else { return false }
        return [.SQLITE_FULL, .SQLITE_IOERR, .SQLITE_READONLY, .SQLITE_CANTOPEN, .SQLITE_CORRUPT, .SQLITE_NOTADB]
            .contains(error.resultCode)
    }

    func failed(_ error: any Error) {
        guard Self.isDiskFailure(error) else { return }
        let description = (error as? DatabaseError).map { "\($0.resultCode): \($0.message ?? "no message")" } ?? "\(error)"
        let now = ContinuousClock.now
        let failures: Int? = state.withLock { state in
            state.failure = description
            state.failuresSinceReport += 1
            if let last = state.lastFailureReport, now - last < Self.logInterval { return nil }
            defer { state.failuresSinceReport = 0 }
            state.lastFailureReport = now
            return state.failuresSinceReport
        }
        guard let failures else { return }
        if failures == 1 {
            logger.error("Store writes fail: sends and registrations are answered 503", metadata: ["error": "\(description)"])
        } else {
            logger.error("Store writes still fail", metadata: ["error": "\(description)", "failed_writes": "\(failures)"])
        }
    }

    func succeeded() {
        let now = ContinuousClock.now
        let report: Bool = state.withLock { state in
            guard state.failure != nil else { return false }
            state.failure = nil
            if let last = state.lastRecoveryReport, now - last < Self.logInterval { return false }
            state.lastRecoveryReport = now
            return true
        }
        if report { logger.notice("Store writes work again") }
    }
}
