import HTTPTypes
import HeraldCore
import Hummingbird
import Logging

/// Turns every failure into a JSON answer: `APIError`s render themselves (through `render`, so a dialect can
/// choose its own shape), Hummingbird's own errors (unknown route, body too large) and anything unexpected
/// become `APIError`s first. Nothing leaves the server as an empty or HTML body.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Renders an error as this dialect's response.
    var render: @Sendable (APIError) -> Response = { error in
        JSONResponse.make(status: error.status, body: error.body, headers: error.headers)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            let response = try await next(request, context)
            return response
        } catch let error as APIError {
            return render(error)
        } catch let error as HTTPError {
            return render(APIError(error.status, code: Self.code(error.status), message: error.body ?? Self.sentence(error.status), headers: error.headers))
        } catch let error as any HTTPResponseError {
            return render(APIError(error.status, code: Self.code(error.status), message: Self.sentence(error.status)))
        } catch {
            context.logger.error("Unhandled error", metadata: ["error": "\(String(reflecting: type(of: error)))"])
            return render(APIError(.internalServerError, code: "internal_error", message: "Herald hit an internal error; the request was not completed."))
        }
    }

    static func code(_ status: HTTPResponse.Status) -> String {
        switch status {
        case .notFound: "not_found"
        case .methodNotAllowed: "method_not_allowed"
        case .contentTooLarge: "body_too_large"
        default: "http_\(status.code)"
        }
    }

    static func sentence(_ status: HTTPResponse.Status) -> String {
        switch status {
        case .notFound: "There is nothing at this address."
        case .methodNotAllowed: "This address does not take that method."
        case .contentTooLarge: "The request body is too large."
        default: "The request failed: \(status.reasonPhrase)."
        }
    }
}
