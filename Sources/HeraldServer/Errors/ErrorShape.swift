import HTTPTypes
import HeraldCore
import Hummingbird

/// The JSON shape of an error body: Herald's own (``standard``), or a dialect's that its clients read (Home Assistant's,
/// ``homeAssistant``). Each dialect's controller chooses its shape for its route group (``ErrorShapeMiddleware``); an
/// ``APIError`` carries the shape it is answered in, and ``JSONErrorMiddleware`` renders it.
///
/// ```swift
/// let group = api.group("homeassistant").add(middleware: ErrorShapeMiddleware(.homeAssistant))
/// ```
public struct ErrorShape: Sendable, Equatable {
    /// A name for the shape, its identity.
    public let name: String
    /// The path prefix whose requests no route took (an unknown path, a method the path does not take) are answered in
    /// this shape: a request without a route has only its path to tell its dialect by. A plain string prefix, as before
    /// the shapes were chosen by the dialects (`/api/push/homeassistantx` included).
    let unroutedPathPrefix: String?
    /// The body of an answer to `error`.
    let body: @Sendable (APIError) -> JSONObject
    /// The answer's `Content-Type`.
    let contentType: String

    init(
        name: String, unroutedPathPrefix: String? = nil, contentType: String = "application/json; charset=utf-8",
        body: @escaping @Sendable (APIError) -> JSONObject
    ) {
        self.name = name
        self.unroutedPathPrefix = unroutedPathPrefix
        self.contentType = contentType
        self.body = body
    }

    public static func == (lhs: ErrorShape, rhs: ErrorShape) -> Bool { lhs.name == rhs.name }

    /// `{"error", "code", "field"?, ...extra}`: every dialect's but those that name their own.
    public static let standard = ErrorShape(name: "standard") { $0.body }

    /// The shapes of the dialects that have their own; a new one is added here and in its dialect's folder.
    static let dialects: [ErrorShape] = [.homeAssistant, .problemDetails]

    /// The shape of a request that no route took, from its path.
    init(unroutedPath path: String) {
        self =
            Self.dialects.first { shape in
                shape.unroutedPathPrefix.map { path.hasPrefix($0) } ?? false
            } ?? .standard
    }

    /// The answer to `error` in this shape: its status, its headers, this shape's body.
    func response(to error: APIError) -> Response {
        var headers = error.headers
        headers[.contentType] = contentType
        return JSONResponse.make(status: error.status, body: body(error), headers: headers)
    }
}

/// Answers the errors of the routes it is added to in `shape`: the dialect's controller adds it to its route group.
/// The errors still leave as ``APIError``s (the request metrics read their codes); ``JSONErrorMiddleware`` renders them.
struct ErrorShapeMiddleware<Context: RequestContext>: RouterMiddleware {
    let shape: ErrorShape

    init(_ shape: ErrorShape) {
        self.shape = shape
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            var apiError = APIError(converting: error)
            apiError.shape = shape
            throw apiError
        }
    }
}
