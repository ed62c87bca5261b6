import HTTPTypes
import Hummingbird
import Logging

/// Wraps the application's responder: every answer carries an `X-Request-ID` header (the request id Hummingbird puts
/// on every log line of the request, `hb.request.id`), and every request gets one access-log line at info: method,
/// route template (`/api/push/notifications/{id}`, never the concrete path or the query), status and duration. Never
/// a body, a header or a credential.
///
/// ```swift
/// Application(router: AccessLog(MethodCheckingRouter(router: router), logsRequests: true), ...)
/// ```
struct AccessLog<Base: HTTPResponderBuilder>: HTTPResponderBuilder where Base.Responder.Context: RequestContext {
    let base: Base
    /// `HERALD_ACCESS_LOG`: `false` keeps the header and drops the log line.
    let logsRequests: Bool

    init(_ base: Base, logsRequests: Bool) {
        self.base = base
        self.logsRequests = logsRequests
    }

    func buildResponder() -> AccessLogResponder<Base.Responder> {
        AccessLogResponder(base: base.buildResponder(), logsRequests: logsRequests)
    }
}

struct AccessLogResponder<Base: HTTPResponder>: HTTPResponder where Base.Context: RequestContext {
    typealias Context = Base.Context

    static var requestIDHeader: HTTPField.Name { HTTPField.Name("X-Request-ID")! }

    let base: Base
    let logsRequests: Bool

    func respond(to request: Request, context: Context) async throws -> Response {
        let start = ContinuousClock.now
        do {
            var response = try await base.respond(to: request, context: context)
            response.headers[Self.requestIDHeader] = context.id
            if logsRequests { log(request, context, status: response.status.code, since: start) }
            return response
        } catch {
            if logsRequests { log(request, context, status: 500, since: start) }
            throw error
        }
    }

    private func log(_ request: Request, _ context: Context, status: Int, since start: ContinuousClock.Instant) {
        let elapsed = (ContinuousClock.now - start).components
        let milliseconds = Double(elapsed.seconds) * 1_000 + Double(elapsed.attoseconds) / 1e15
        context.logger.info(
            "Request",
            metadata: [
                "method": "\(request.method.rawValue)", "route": "\(context.endpointPath ?? "NotFound")",
                "status": "\(status)", "duration_ms": "\((milliseconds * 1_000).rounded() / 1_000)",
            ])
    }
}
