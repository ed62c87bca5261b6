import CoreMetrics
import HTTPTypes
import HeraldAPNs
import HeraldCore
import HeraldDelivery
import Hummingbird
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle

/// Herald's metrics for one application: the Prometheus registry, the swift-metrics factory every component reports
/// to, and `GET /metrics`. Each application has its own registry (nothing is bootstrapped globally), so that every
/// server a test process starts counts for itself.
///
/// ```swift
/// let metrics = HeraldMetrics(enabled: configuration.metrics)
/// let engine = DeliveryEngine(..., metrics: DeliveryMetrics(factory: metrics.factory), logger: logger)
/// ```
struct HeraldMetrics: Sendable {
    /// The registry; `nil` when metrics are off.
    let registry: PrometheusCollectorRegistry?
    /// Where components report: the registry's factory, or swift-metrics' no-op one when metrics are off.
    let factory: any MetricsFactory
    /// The server's own instruments.
    let server: ServerMetrics

    init(enabled: Bool) {
        if enabled {
            let registry = PrometheusCollectorRegistry()
            self.registry = registry
            factory = DescribedMetricsFactory(registry: registry, descriptions: ServerMetrics.all)
        } else {
            registry = nil
            factory = NOOPMetricsHandler.instance
        }
        server = ServerMetrics(factory: factory)
    }
}

/// `GET /metrics`: the Prometheus text exposition (format 0.0.4). The gauges that describe the present (outbox depth,
/// delivery slots, WebSocket connections, devices, process) are read when it is scraped: two bounded counts in the
/// store, the rest in memory.
struct MetricsEndpoint: Sendable {
    let registry: PrometheusCollectorRegistry
    let metrics: ServerMetrics
    let store: any DeviceStore & NotificationStore
    let engine: DeliveryEngine
    let hub: WebSocketHub
    let clock: any WallClock

    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    func addRoute<Context: RequestContext>(to router: Router<Context>) {
        router.get("metrics") { request, _ in
            // Only the path itself: the router also matches `/metrics/` and `//metrics`, which a reverse proxy's rule
            // for `/metrics` may not cover (docs/operations.md, "Metrics").
            guard request.uri.path == "/metrics" else { throw APIError.notFound() }
            return Response(
                status: .ok, headers: [.contentType: Self.contentType],
                body: ResponseBody(byteBuffer: await exposition()))
        }
    }

    /// The exposition text, after reading the scrape-time gauges.
    func exposition() async -> ByteBuffer {
        let outbox = try? await store.outboxDepth(at: clock.now(), limit: ServerMetrics.outboxCountLimit)
        let devices = try? await store.deviceCount()
        metrics.update(outbox: outbox, load: engine.load, webSocketConnections: hub.subscriberCount, devices: devices)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16_384)
        registry.emit(into: &bytes)
        ProcessMetrics.current().emit(into: &bytes)
        return ByteBuffer(bytes: bytes)
    }

    /// The listener of its own that serves `/metrics` when `HERALD_METRICS_PORT` is set. Its start-up line is Herald's
    /// ("Metrics listening on HOST:PORT"), not Hummingbird's, so that the main listener's stays the only one. It
    /// writes no access lines.
    func separateListener(host: String, port: Int, logger: Logger) -> some Service {
        let router = Router(context: HeraldRequestContext.self)
        router.add(middleware: JSONErrorMiddleware())
        addRoute(to: router)
        var quiet = logger
        quiet.logLevel = max(logger.logLevel, .warning)
        return Application(
            router: router,
            // Scrapers keep their connection open between scrapes; one silent for a minute is closed.
            server: .http1(configuration: .init(idleTimeout: .seconds(60))),
            configuration: .init(address: .hostname(host, port: port), serverName: "Herald"),
            onServerRunning: { channel in
                let address = channel.localAddress
                logger.notice("Metrics listening on \(address?.ipAddress ?? host):\(address?.port ?? port)")
            },
            logger: quiet)
    }
}

/// Counts what the send APIs answer (accepted, or refused with the answer's error code) and every 429, as the error
/// leaves the routes (inside ``JSONErrorMiddleware``, which renders it).
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: ServerMetrics

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let dialect = request.method == .post ? ServerMetrics.Dialect(path: request.uri.path) : nil
        do {
            let response = try await next(request, context)
            if let dialect {
                if (200..<300).contains(response.status.code) {
                    metrics.accepted(dialect)
                } else {
                    metrics.rejected(dialect, reason: ErrorCode.otherHTTPStatus.text(status: response.status))
                }
            }
            return response
        } catch {
            let (code, status): (ErrorCode, HTTPResponse.Status) =
                switch error {
                case let error as APIError: (error.code, error.status)
                case let error as any HTTPResponseError: (ErrorCode(hummingbirdStatus: error.status), error.status)
                default: (.internalError, .internalServerError)
                }
            if let dialect { metrics.rejected(dialect, reason: code.text(status: status)) }
            if let limit = ServerMetrics.RateLimit(code) { metrics.rateLimited(limit) }
            throw error
        }
    }
}
