import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird

/// The paths ntfy and Bark put a topic or device key first in (`/<topic>`, `/<topic>/publish`, `/<key>/<body>`, …),
/// which share the root with Herald's own routes. Added to the router after every route, so it wraps only the router's
/// "no route" answer: a request that a route of Herald's takes never reaches it. It takes a request only when the
/// path's first segment has the form of a USER_ID (64 hexadecimal characters) or a topic id (`tp_` and 60), which no
/// route of Herald's starts with,
/// and at most four segments; any other request goes on to the 404 (or 405) it had before.
///
/// | Method and path | Dialect |
/// |---|---|
/// | `PUT /<id>` | ntfy |
/// | `POST /<id>` with a form or a JSON object that has a `body` member | Bark (`/:key` with its parameters) |
/// | `POST /<id>` with anything else | ntfy: the body is the message, byte for byte |
/// | `GET/PUT/POST /<id>/publish`, `/send`, `/trigger` | ntfy |
/// | `GET /<id>/json`, `/sse`, `/raw`, `/ws`, `/auth` | ntfy's subscriptions: 404 in ntfy's shape (Herald delivers to apps) |
/// | `GET/POST /<id>/<body>`, `/<id>/<title>/<body>`, `/<id>/<title>/<subtitle>/<body>` | Bark |
/// | `GET /<id>` (the parameters in the query) | Bark |
/// | any other method | 405 with `Allow` |
///
/// `curl -d "text"` sends its text as a form (`application/x-www-form-urlencoded`): such a body is Bark's only when it
/// parses as form fields with `body` among them, so ntfy's `curl -d "Backup done" herald/<id>` stays ntfy's.
struct SenderPathMiddleware<Context: RemoteAddressRequestContext>: RouterMiddleware {
    let ntfy: NtfyController<Context>
    let bark: BarkController<Context>
    let bodyLimit: Int

    static var ntfyPublishVerbs: Set<String> { ["publish", "send", "trigger"] }
    static var ntfySubscribeVerbs: Set<String> { ["json", "sse", "raw", "ws", "auth"] }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let raw = request.uri.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        guard let first = raw.first.map(String.init), UserID.accepts(first) || TopicID.accepts(first), raw.count <= 4 else {
            return try await next(request, context)
        }
        let segments = raw.map { $0.removingPercentEncoding ?? String($0) }
        let verb = segments.count == 2 ? segments[1].lowercased() : nil
        let isNtfyVerb = verb.map(Self.ntfyPublishVerbs.contains) ?? false
        // These paths are the senders': another method is a 405 that says which ones they take, as for Herald's routes.
        let allowed: [HTTPRequest.Method] = segments.count == 1 || isNtfyVerb ? [.get, .post, .put] : [.get, .post]
        guard allowed.contains(request.method) else {
            throw APIError.methodNotAllowed(allow: allowed.map(\.rawValue).joined(separator: ", "))
        }
        // The access log and the metrics name the route's template, never the USER_ID in the path (a credential).
        context.coreContext.endpointPath.value = Self.template(segments: segments.count, ntfyVerb: isNtfyVerb)
        if let verb, Self.ntfySubscribeVerbs.contains(verb), request.method == .get {
            throw Self.shaped(
                APIError.notFound("Herald does not serve ntfy subscriptions: it delivers to its apps, browsers and WebSocket clients."),
                .ntfy)
        }
        if segments.count == 1 && request.method == .put || isNtfyVerb {
            return try await shaping(.ntfy) {
                let input = try await SenderRequest.read(request, limit: bodyLimit)
                return try await ntfy.publish(topic: segments[0], input: input, request: request, context: context)
            }
        }
        if segments.count == 1 && request.method == .post {
            let input = try await shaping(.ntfy) { try await SenderRequest.read(request, limit: bodyLimit) }
            if Self.isBark(input) {
                return try await shaping(.bark) { try await bark.pathPush(segments: segments, input: input, request: request, context: context) }
            }
            return try await shaping(.ntfy) { try await ntfy.publish(topic: segments[0], input: input, request: request, context: context) }
        }
        return try await shaping(.bark) {
            let input = try await SenderRequest.read(request, limit: bodyLimit)
            return try await bark.pathPush(segments: segments, input: input, request: request, context: context)
        }
    }

    /// The route template of a sender's path with `segments` segments, as the access log shows it.
    static func template(segments: Int, ntfyVerb: Bool) -> String {
        switch segments {
        case 1: "/{topic}"
        case 2: ntfyVerb ? "/{topic}/publish" : "/{key}/{body}"
        case 3: "/{key}/{title}/{body}"
        default: "/{key}/{title}/{subtitle}/{body}"
        }
    }

    /// Bark's when the body is form fields with `body` among them, or a JSON object with a `body` member.
    static func isBark(_ input: SenderRequest) -> Bool {
        if let form = input.form { return form["body"] != nil }
        if let json = input.jsonObject { return json["body"] != nil }
        return false
    }

    private func shaping<Value>(_ shape: ErrorShape, _ body: () async throws -> Value) async throws -> Value {
        do {
            return try await body()
        } catch {
            throw Self.shaped(APIError(converting: error), shape)
        }
    }

    private static func shaped(_ error: APIError, _ shape: ErrorShape) -> APIError {
        var error = error
        error.shape = shape
        return error
    }
}
