import CoreMetrics
import Foundation
import HeraldCore
import HeraldProviderKit
import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// Delivers notifications to Apple devices through the APNs provider API (HTTP/2, token authentication).
///
/// Each notification becomes `POST /3/device/<token>` on the endpoint of the device's environment (a Live Activity push:
/// the activity's token, topic `<topic>.push-type.liveactivity`), with
/// `authorization`, `apns-push-type`, `apns-topic`, `apns-priority`, `apns-expiration`, `apns-id` and, when set,
/// `apns-collapse-id`; the body is the stored payload, byte for byte. Requests go over ``APNsConnection``s (HTTP/2 on
/// swift-nio-http2), `connectionsPerEnvironment` per environment, opened on first use.
///
/// Every answer and transport error is classified once, by ``APNsClassification`` (its table lists the rules), inside
/// the attempt loop every provider shares (``ProviderAttempts``: renewal, resend once, metrics, logs); the verdict
/// travels back to the delivery engine and from there to the sender's HTTP answer.
///
/// ```swift
/// let provider = try APNsProvider(configuration: configuration, logger: logger)
/// let result = await provider.send(notification, to: device)
/// try await provider.shutdown()
/// ```
///
/// Call ``shutdown()`` before dropping the provider: it closes the connections.
public final class APNsProvider: ClosablePushProvider {
    /// Always ``Platform/apns``.
    public let platform: Platform = .apns
    /// The configuration the provider was built from.
    public let configuration: APNsConfiguration
    /// The provider-token cache shared by all connections.
    public let tokenIssuer: ProviderTokenIssuer

    private let pool: APNsConnectionPool
    private let requestTimeout: TimeAmount
    /// `10 s`: the deadline as reasons name it.
    private let timeoutDescription: String
    private let attempts: ProviderAttempts

    /// Loads the key and the extra CA certificates and prepares (but does not open) the connections.
    ///
    /// - Parameters:
    ///   - configuration: Key, ids, topic, endpoints and pool settings.
    ///   - clock: The time for the provider token's `iat` and age.
    ///   - logger: Where requests and connection trouble are logged (never full device tokens or JWTs).
    ///   - eventLoopGroup: The NIO event loops of the connections.
    ///   - metrics: Where request latencies and answers are counted (``ProviderMetrics``); swift-metrics' global
    ///     factory by default.
    /// - Throws: ``APNsConfigurationError``, one line naming the option at fault.
    public init(
        configuration: APNsConfiguration,
        clock: any WallClock = SystemClock(),
        logger: Logger = Logger(label: "herald.apns"),
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        metrics: any MetricsFactory = MetricsSystem.factory
    ) throws(APNsConfigurationError) {
        if let problem = configuration.settingProblems().first { throw problem }
        let key = try configuration.loadSigningKey()
        let extraRoots = try configuration.loadTrustedCertificates()
        guard let production = HTTPSBaseURL.normalized(configuration.productionURL).flatMap(APNsConnection.Endpoint.init)
        else { throw APNsConfigurationError(.productionURL, "is not an https:// URL") }
        guard let sandbox = HTTPSBaseURL.normalized(configuration.sandboxURL).flatMap(APNsConnection.Endpoint.init)
        else { throw APNsConfigurationError(.sandboxURL, "is not an https:// URL") }

        self.configuration = configuration
        self.attempts = ProviderAttempts(description: APNsModule.description, logger: logger, metrics: metrics)
        self.requestTimeout = TimeAmount(configuration.requestTimeout)
        self.timeoutDescription = configuration.requestTimeout.heraldDescription
        self.tokenIssuer = ProviderTokenIssuer(
            key: key, keyID: configuration.keyID, teamID: configuration.teamID,
            refreshInterval: configuration.tokenRefreshInterval, clock: clock)

        let tlsContext: NIOSSLContext
        do {
            tlsContext = try ProviderTLS.sharedContext(trusting: extraRoots, applicationProtocols: ["h2"])
        } catch {
            throw APNsConfigurationError(.trustedCAPath, "cannot set up TLS: \(error)")
        }
        let endpoints: [PushEnvironment: APNsConnection.Endpoint] = [.production: production, .sandbox: sandbox]
        // The connect deadline (TCP, TLS, the server's SETTINGS) is the request deadline, as for a request.
        let readyWithin = self.requestTimeout
        self.pool = APNsConnectionPool(connectionsPerEnvironment: configuration.connectionsPerEnvironment) { environment in
            APNsConnection.connect(
                to: endpoints[environment] ?? production, tls: tlsContext, group: eventLoopGroup, readyWithin: readyWithin)
        }
    }

    /// Sends one notification and classifies the answer; see the type's documentation for the rules.
    public func send(_ notification: PushNotification, to device: Device) async -> DeliveryResult {
        // A Live Activity push goes to the activity's token, in the device's environment.
        guard let deviceToken = notification.liveActivityToken ?? device.token, !deviceToken.isEmpty else {
            return .failed(reason: "MissingDeviceToken")
        }
        // A token that is not hex would not survive the path, and APNs would call it BadDeviceToken anyway.
        guard Secrets.isHex(deviceToken) else {
            return .deadToken(reason: APNsErrorReason.badDeviceToken.rawValue)
        }
        // The stored payload; rendered again from the content when it was rendered for another provider.
        let body: ByteBuffer
        do {
            body = ByteBuffer(bytes: try APNsModule.renderer.payload(of: notification))
        } catch {
            return .failed(reason: "the notification does not fit APNs' payload limit: \(error)")
        }
        let exchange = APNsExchange(
            notification: notification, deviceToken: deviceToken, body: body, environment: device.environment,
            topic: configuration.topic, pool: pool, tokenIssuer: tokenIssuer, requestTimeout: requestTimeout,
            timeoutDescription: timeoutDescription)
        // A collapse id HTTP/2 refuses as a header value fails for good without a connection: swift-nio-http2 would
        // refuse it on every attempt, and the stream it opened would keep its place among the connection's streams.
        if let collapseID = notification.collapseID, APNsClassification.isRefusedHeaderValue(collapseID) {
            let result = DeliveryResult.failed(
                reason: "apns-collapse-id has a character HTTP/2 refuses in a header value (CR, LF or NUL)")
            attempts.logRefusedBeforeSending(result, metadata: exchange.logMetadata)
            return result
        }
        return await attempts.deliver(exchange)
    }

    /// Closes every connection; sends after this return a retry.
    public func shutdown() async throws {
        await pool.shutdown()
    }

    /// The `apns-topic` for a push type: the app's bundle id, with Apple's suffix for Live Activities.
    static func topic(_ bundleID: String, for pushType: PushType) -> String {
        pushType == .liveactivity ? bundleID + ".push-type.liveactivity" : bundleID
    }
}
