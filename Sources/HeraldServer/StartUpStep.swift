import HeraldCore
import Logging

/// A step of start-up that uses the store, tried again while the store misses its deadline: `HERALD_STORE_TIMEOUT_MS`
/// bounds what a request waits for, and a database slow to answer while an instance starts (a loaded machine, a
/// database that is itself starting) is waited for rather than ending the process. Five tries, each bounded by the
/// store's deadline; any other error ends start-up at once. The steps are idempotent (a secret made by a try that timed
/// out after it committed is found by the next).
///
/// ```swift
/// try await StartUpStep.run("checking the stored tokens", logger: logger) { try await sweep() }
/// ```
enum StartUpStep {
    static let attempts = 5

    @discardableResult
    static func run<Value>(_ what: String, logger: Logger, _ body: () async throws -> Value) async throws -> Value {
        for attempt in 1..<attempts {
            do {
                return try await body()
            } catch let error as StoreDeadlineExceeded {
                logger.warning(
                    "The store missed its deadline at start-up: trying again", metadata: ["step": "\(what)", "try": "\(attempt)", "cause": "\(error)"])
            }
        }
        return try await body()
    }
}
