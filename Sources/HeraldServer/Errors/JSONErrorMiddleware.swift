import HTTPTypes
import HeraldCore
import Hummingbird
import Logging

/// Turns every failure into a JSON answer in the shape its dialect chose (``ErrorShape``). `APIError`s render as they
/// are; Hummingbird's own errors (unknown route, wrong method, body too large) and anything unexpected become
/// `APIError`s first. What the answer does not say (a store's error, an unexpected error's type) is logged here, once,
/// at most one line per code every 10 s (``ErrorCauseLog``). Nothing leaves the server as an empty or HTML body.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let causes = ErrorCauseLog()

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            var apiError = APIError(converting: error)
            causes.log(apiError, to: context.logger)
            // An error that is not an APIError yet was raised outside any route's group (an unknown path, Hummingbird's
            // own): only its path tells its dialect.
            if !(error is APIError) { apiError.shape = ErrorShape(unroutedPath: request.uri.path) }
            return apiError.shape.response(to: apiError)
        }
    }

    /// `error` as the APIError it is answered with, its cause logged to `logger` (the dashboard's pages, which render
    /// errors themselves).
    static func apiError(for error: any Error, logger: Logger) -> APIError {
        let apiError = APIError(converting: error)
        apiError.logCause(to: logger)
        return apiError
    }
}

extension APIError {
    /// `error` as an APIError: itself; Hummingbird's errors by their status; anything else a 500 `internal_error` whose
    /// ``cause`` is the error's type.
    init(converting error: any Error) {
        switch error {
        case let error as APIError:
            self = error
        case let error as HTTPError:
            self.init(hummingbirdStatus: error.status, message: error.body, headers: error.headers)
        case let error as any HTTPResponseError:
            self.init(hummingbirdStatus: error.status)
        default:
            self.init(.internalError)
            cause = String(reflecting: type(of: error))
        }
    }

    /// Logs what the answer does not say: an unexpected error's type, a store failure's cause.
    func logCause(to logger: Logger) {
        guard let cause else { return }
        logger.error(
            "Answered \(status.code) \(code.text(status: status)): \(message)", metadata: ["cause": .string(cause)])
    }
}
