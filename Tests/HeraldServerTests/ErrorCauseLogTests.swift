import HeraldCore
import Logging
import Testing

@testable import HeraldServer

/// What an answer leaves out is logged once per code and interval: a store's error with its cause, not a line per
/// refused request while the database is down.
@Suite("Error cause log")
struct ErrorCauseLogTests {
    @Test func aStoreFailureIsLoggedWithItsCauseOncePerIntervalWithTheCountLeftOut() {
        let records = RecordingLogHandler.Records()
        let logger = Logger(label: "herald") { _ in RecordingLogHandler(records: records) }
        let causes = ErrorCauseLog(interval: .seconds(10))
        let start = ContinuousClock.now
        let failure = APIError.storeUnavailable(StoreUnavailable(cause: "SQLite error 10: disk I/O error"))

        causes.log(failure, to: logger, now: start)
        causes.log(failure, to: logger, now: start + .seconds(1))
        causes.log(failure, to: logger, now: start + .seconds(9))
        causes.log(APIError(.unknownUser), to: logger, now: start + .seconds(9))  // says all there is: no line
        #expect(records.all.count == 1)
        causes.log(failure, to: logger, now: start + .seconds(10))

        #expect(records.all.map(\.level) == [.error, .error])
        #expect(records.messages.allSatisfy { $0 == "Answered 503 store_unavailable: The store is not available; try again shortly." })
        #expect(records.all.map { $0.metadata["cause"] } == ["SQLite error 10: disk I/O error", "SQLite error 10: disk I/O error"])
        #expect(records.all.map { $0.metadata["left_out"] } == [nil, "2"])
    }

    @Test func anUnexpectedErrorIsAnsweredAsAnInternalErrorThatNamesItsTypeInTheLogOnly() {
        struct Surprise: Error {}
        let apiError = APIError(converting: Surprise())
        #expect(apiError.code == .internalError)
        #expect(apiError.cause?.hasSuffix("Surprise") == true)
        #expect(apiError.body["error"] == "Herald hit an internal error; the request was not completed.")
        #expect(apiError.body.keys.sorted() == ["code", "error"])
    }
}
