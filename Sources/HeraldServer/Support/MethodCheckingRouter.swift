import HTTPTypes
import Hummingbird

/// Hummingbird's router answers a path it knows, asked with a method it does not take, as it answers a path it does
/// not know: 404. This builder wraps the router so that such a request is answered 405 with an `Allow` header listing
/// the path's methods (HEAD with GET, as the router is built with `.autoGenerateHeadEndpoints`) and the JSON error body
/// of the path's dialect (``ErrorShape/init(unroutedPath:)``). It covers every route and every method, `QUERY` or `PROPFIND` included.
///
/// ```swift
/// Application(router: MethodCheckingRouter(router: router), ...)
/// ```
struct MethodCheckingRouter<Context: RequestContext>: HTTPResponderBuilder {
    let router: Router<Context>

    /// Reads the routes when the server builds its responder, after every route was added.
    func buildResponder() -> MethodCheckingResponder<Context> {
        let routes = Dictionary(grouping: router.routes, by: \.path.description).values.map { routes in
            var methods = Set(routes.map(\.method))
            if methods.contains(.get) { methods.insert(.head) }
            return MethodCheckingResponder<Context>.Route(
                path: routes[0].path, methods: methods, allow: methods.map(\.rawValue).sorted().joined(separator: ", "))
        }
        return MethodCheckingResponder(routes: routes, router: router.buildResponder())
    }
}

struct MethodCheckingResponder<Context: RequestContext>: HTTPResponder {
    struct Route: Sendable {
        var path: RouterPath
        var methods: Set<HTTPRequest.Method>
        /// The `Allow` header.
        var allow: String

        func matches(_ segments: [Substring]) -> Bool {
            path.components.count == segments.count && zip(path.components, segments).allSatisfy { $0 ~= $1 }
        }

        /// Components that are written out, not captured (`cancel` in `receipts/cancel`, not `{id}`).
        var literals: Int {
            path.components.count { element in
                let text = element.description
                return !text.contains("{") && !text.hasPrefix(":") && !text.contains("*")
            }
        }
    }

    let routes: [Route]
    let router: RouterResponder<Context>

    func respond(to request: Request, context: Context) async throws -> Response {
        let response = try await router.respond(to: request, context: context)
        // Only a 404 can be a known path asked with another method; other answers pass untouched.
        guard response.status == .notFound else { return response }
        let segments = request.uri.path.split(separator: "/")
        // The most specific path that matches: `GET /notifications/receipts/cancel` is the POST-only `receipts/cancel`
        // (405), not `receipts/{id}` with the id "cancel" (its handler's 404).
        let route = routes.filter { $0.matches(segments) }.max { $0.literals < $1.literals }
        guard let route, !route.methods.contains(request.method) else {
            return response
        }
        return ErrorShape(unroutedPath: request.uri.path).response(to: .methodNotAllowed(allow: route.allow))
    }
}
