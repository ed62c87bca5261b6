import HTTPTypes
import HeraldCore
import Hummingbird
import Logging

/// Turns every failure into a JSON answer in the shape of the API dialect the request was for.
/// `APIError`s render as they are; Hummingbird's own errors (unknown route, wrong method, body too large) and
/// anything unexpected become `APIError`s first. Nothing leaves the server as an empty or HTML body.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            let apiError = Self.apiError(for: error, logger: context.logger)
            return ErrorDialect(path: request.uri.path).render(apiError)
        }
    }

    static func apiError(for error: any Error, logger: Logger) -> APIError {
        switch error {
        case let error as APIError:
            return error
        case let error as HTTPError:
            return APIError(hummingbirdStatus: error.status, message: error.body, headers: error.headers)
        case let error as any HTTPResponseError:
            return APIError(hummingbirdStatus: error.status)
        default:
            logger.error("Unhandled error", metadata: ["error": "\(String(reflecting: type(of: error)))"])
            return APIError(.internalError)
        }
    }
}

/// The error body shapes Herald speaks: its own, and the one Home Assistant's `mobile_app` reads.
enum ErrorDialect {
    /// `{"error", "code", "field"?, ...}`.
    case standard
    /// `{"message"}` or `{"errorMessage"}` plus `errorType`, `target`, `rateLimits` where they apply.
    case homeAssistant

    static let homeAssistantPrefix = "/api/push/homeassistant"

    init(path: String) {
        self = path.hasPrefix(Self.homeAssistantPrefix) ? .homeAssistant : .standard
    }

    func render(_ error: APIError) -> Response {
        switch self {
        case .standard:
            return JSONResponse.make(status: error.status, body: error.body, headers: error.headers)
        case .homeAssistant:
            // Home Assistant logs `message` verbatim and appends `errorMessage` to "Internal server error, please try
            // again later:"; it crashes on an empty `message`, which APIError never has.
            var body = error.extra
            if error.status == .forbidden || error.status == .notFound && error.code == .unknownUser {
                body["errorMessage"] = .string(error.message)
            } else {
                body["message"] = .string(error.message)
            }
            // Home Assistant reads `message`; `field` names the offending member for anyone else reading the answer.
            if let field = error.field, error.status == .badRequest { body["field"] = .string(field) }
            return JSONResponse.make(status: error.status, body: body, headers: error.headers)
        }
    }
}
