import Foundation
import Logging
import Synchronization

/// Watches the store's writes for failures of the storage (a full disk, a read-only database, I/O errors): remembers
/// that writes fail, for `/readyz`, and logs such failures without letting a full disk fill the log too. Only the
/// readiness probe's write (8 KiB, rolled back) clears a failure (``succeeded()``), not any write that succeeds: on a
/// full disk a small write (a registration updated in place) still finds room in a page where a notification does
/// not, and `/readyz` would say ready while sends fail.
/// Each backend says which of its errors are such failures (``StorageFailure``). A disk that is
/// nearly full lets some writes through and not others, so failures and recoveries are each logged at most once per
/// ``logInterval``; a failure report counts the failures since the previous one.
final class StoreWriteHealth: Sendable {
    static let logInterval: Duration = .seconds(60)

    private struct State {
        /// The last failure, while no write has succeeded since.
        var failure: String?
        var failureReports = LogThrottle(interval: StoreWriteHealth.logInterval)
        var lastRecoveryReport: ContinuousClock.Instant?
    }

    /// A backend's reading of one of its errors: the storage's fault (with a description for the log and `/readyz`),
    /// or `nil` when the request, not the storage, is at fault.
    typealias StorageFailure = @Sendable (any Error) -> String?

    private let state = Mutex(State())
    private let logger: Logger
    private let storageFailure: StorageFailure

    init(logger: Logger, storageFailure: @escaping StorageFailure) {
        self.logger = logger
        self.storageFailure = storageFailure
    }

    /// The failure that makes the store unable to write, until the readiness probe writes again.
    var failure: String? { state.withLock { $0.failure } }

    func failed(_ error: any Error) {
        guard let description = storageFailure(error) else { return }
        let now = ContinuousClock.now
        let failures: Int? = state.withLock { state in
            state.failure = description
            return state.failureReports.record(at: now)
        }
        guard let failures else { return }
        if failures == 1 {
            logger.error("Store writes fail: sends and registrations are answered 503", metadata: ["error": "\(description)"])
        } else {
            logger.error("Store writes still fail", metadata: ["error": "\(description)", "failed_writes": "\(failures)"])
        }
    }

    /// The readiness probe's write succeeded: the storage takes writes again.
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
