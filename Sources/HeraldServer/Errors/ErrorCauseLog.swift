import HTTPTypes
import Logging
import Synchronization

/// Logs what an answer does not say (``APIError/cause``: a store's error, an unexpected error's type), at most one line
/// per error code every ``interval``, with the number of answers of that code left out since the last line. A database
/// that stops answering refuses every request: one line per request would flood the log just when it is read (as
/// missed store deadlines are logged at most once every 10 s, docs/operations.md).
///
/// ```swift
/// causes.log(apiError, to: context.logger)   // "Answered 503 store_unavailable: …" with `cause`
/// ```
final class ErrorCauseLog: Sendable {
    /// The shortest time between two lines of one code.
    let interval: Duration
    private let lines = Mutex<[String: (last: ContinuousClock.Instant, leftOut: Int)]>([:])

    init(interval: Duration = .seconds(10)) {
        self.interval = interval
    }

    /// Logs `error`'s cause to `logger` unless a line of its code went out less than ``interval`` ago.
    func log(_ error: APIError, to logger: Logger, now: ContinuousClock.Instant = .now) {
        guard let cause = error.cause else { return }
        let code = error.code.text(status: error.status)
        let leftOut: Int? = lines.withLock { lines in
            let previous = lines[code]
            if let previous, now - previous.last < interval {
                lines[code] = (previous.last, previous.leftOut + 1)
                return nil
            }
            lines[code] = (now, 0)
            return previous?.leftOut ?? 0
        }
        guard let leftOut else { return }
        var metadata: Logger.Metadata = ["cause": .string(cause)]
        if leftOut > 0 { metadata["left_out"] = "\(leftOut)" }
        logger.error("Answered \(error.status.code) \(code): \(error.message)", metadata: metadata)
    }
}
