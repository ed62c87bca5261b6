import CoreMetrics
import Foundation
import HeraldCore
import Logging
import NIOCore
import NIOHPACK
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
/// Every answer and transport error is classified once, by ``APNsClassification`` (its table lists the rules); the
/// verdict travels back to the delivery worker and from there to the sender's HTTP answer.
///
/// ```swift
/// let provider = try APNsProvider(configuration: configuration, logger: logger)
/// let result = await provider.send(notification, to: device)
/// try await provider.shutdown()
/// ```
///
/// Call ``shutdown()`` before dropping the provider: it closes the connections.
public final class APNsProvider: PushProvider {
    /// Always ``Platform/apns``.
    public let platform: Platform = .apns
    /// The configuration the provider was built from.
    public let configuration: APNsConfiguration
    /// The provider-token cache shared by all connections.
    public let tokenIssuer: ProviderTokenIssuer

    private let pool: APNsConnectionPool
    private let requestTimeout: TimeAmount
    private let logger: Logger
    private let metrics: ProviderMetrics

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
        self.logger = logger
        self.metrics = ProviderMetrics(provider: "apns", factory: metrics)
        self.requestTimeout = TimeAmount(configuration.requestTimeout)
        self.tokenIssuer = ProviderTokenIssuer(
            key: key, keyID: configuration.keyID, teamID: configuration.teamID,
            refreshInterval: configuration.tokenRefreshInterval, clock: clock)

        let tlsContext: NIOSSLContext
        do {
            tlsContext = try APNsTLSContexts.context(trusting: extraRoots)
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

    static let renderer = APNsRenderer()

    /// Sends one notification and classifies the answer; see the type's documentation for the rules.
    public func send(_ notification: PushNotification, to device: Device) async -> DeliveryResult {
        let apnsID = notification.id.lowercasedText
        // A Live Activity push goes to the activity's token, in the device's environment.
        guard let deviceToken = notification.liveActivityToken ?? device.token, !deviceToken.isEmpty else {
            return .failed(reason: "MissingDeviceToken")
        }
        // Built only when a line is logged (swift-log takes metadata as an autoclosure).
        func context(_ more: Logger.Metadata = [:]) -> Logger.Metadata {
            more.merging(["apns-id": "\(apnsID)", "device-token": "\(deviceToken.prefix(8))…"]) { new, _ in new }
        }
        // A token that is not hex would not survive the path, and APNs would call it BadDeviceToken anyway.
        guard Secrets.isHex(deviceToken) else {
            return .deadToken(reason: APNsErrorReason.badDeviceToken.rawValue)
        }
        let path = "/3/device/\(deviceToken)"
        // The stored payload; rendered again from the content when it was rendered for another provider.
        let body: ByteBuffer
        do {
            body = ByteBuffer(bytes: try Self.renderer.payload(of: notification))
        } catch {
            return .failed(reason: "the notification does not fit APNs' payload limit: \(error)")
        }
        // A collapse id HTTP/2 refuses as a header value fails for good without a connection: swift-nio-http2 would
        // refuse it on every attempt, and the stream it opened would keep its place among the connection's streams.
        if let collapseID = notification.collapseID, APNsClassification.isRefusedHeaderValue(collapseID) {
            let reason = "apns-collapse-id has a character HTTP/2 refuses in a header value (CR, LF or NUL)"
            log(.failed(reason: reason), outcome: .refusedLocally(reason), context: context)
            return .failed(reason: reason)
        }

        var providerToken = tokenIssuer.currentToken()
        var hasRenewedToken = false
        var hasResentAfterConnectionLoss = false
        while true {
            let headers = makeHeaders(notification, apnsID: apnsID, providerToken: providerToken)
            guard let (outcome, connection) = await attempt(path: path, headers: headers, body: body, environment: device.environment)
            else { return .retry(reason: "APNs provider is shut down", after: nil) }
            if APNsClassification.replacesConnection(after: outcome), connection?.retire() == true {
                // A fresh connection guarantees that a re-send goes out on a new connection, and that
                // TooManyProviderTokenUpdates stops.
                logger.info("APNs: replacing a connection", metadata: context())
            }

            let step = APNsClassification.nextStep(
                after: outcome, hasRenewedToken: hasRenewedToken, hasResent: hasResentAfterConnectionLoss,
                timeout: configuration.requestTimeout.heraldDescription)
            switch step {
            case .renewTokenAndResend:
                guard let renewed = tokenIssuer.renewAfterExpiry(of: providerToken) else {
                    return .retry(reason: APNsErrorReason.expiredProviderToken.rawValue, after: nil)
                }
                logger.warning("APNs: ExpiredProviderToken, renewing the provider token and re-sending", metadata: context())
                hasRenewedToken = true
                providerToken = renewed
            case .resendOnFreshConnection:
                logger.info("APNs: connection closed before the answer, re-sending once", metadata: context())
                hasResentAfterConnectionLoss = true
            case .finish(let result):
                log(result, outcome: outcome, context: context)
                return result
            }
        }
    }

    /// Closes every connection; sends after this return a retry.
    public func shutdown() async throws {
        await pool.shutdown()
    }

    /// The request's headers after the pseudo-headers, HPACK-coded as Apple asks: `authorization` and the values
    /// that change with every notification as literals without indexing, the others indexed.
    private func makeHeaders(
        _ notification: PushNotification, apnsID: String, providerToken: ProviderTokenIssuer.Token
    ) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(7)
        headers.add(name: "authorization", value: "bearer \(providerToken.jwt)", indexing: .nonIndexable)
        headers.add(name: "apns-push-type", value: notification.pushType.rawValue)
        headers.add(name: "apns-topic", value: Self.topic(configuration.topic, for: notification.pushType))
        headers.add(name: "apns-priority", value: String(notification.priority))
        let expiration = max(0, Int(notification.expiresAt.timeIntervalSince1970.rounded(.down)))
        headers.add(name: "apns-expiration", value: String(expiration), indexing: .nonIndexable)
        if let collapseID = notification.collapseID {
            headers.add(name: "apns-collapse-id", value: collapseID, indexing: .nonIndexable)
        }
        headers.add(name: "apns-id", value: apnsID, indexing: .nonIndexable)
        return headers
    }

    /// The `apns-topic` for a push type: the app's bundle id, with Apple's suffix for Live Activities.
    static func topic(_ bundleID: String, for pushType: PushType) -> String {
        pushType == .liveactivity ? bundleID + ".push-type.liveactivity" : bundleID
    }

    /// One request on the next connection of the environment, timed for the metrics; `nil` once shut down. The
    /// connection is `nil` when none could be made.
    private func attempt(
        path: String, headers: HPACKHeaders, body: ByteBuffer, environment: PushEnvironment
    ) async -> (APNsAttemptOutcome, APNsConnection?)? {
        let started = ContinuousClock.now
        var connection: APNsConnection?
        let outcome: APNsAttemptOutcome
        do {
            guard let leased = try await pool.connection(for: environment) else { return nil }
            connection = leased
            let answer = try await leased.post(path: path, headers: headers, body: body, timeout: requestTimeout)
            outcome = .answered(
                APNsResponse(status: answer.status, apnsID: answer.apnsID, body: Data(answer.body.readableBytesView)))
        } catch {
            outcome = APNsClassification.outcome(of: error)
        }
        metrics.record(APNsMetrics.labels(of: outcome), duration: ContinuousClock.now - started)
        return (outcome, connection)
    }

    private func log(_ result: DeliveryResult, outcome: APNsAttemptOutcome, context: (Logger.Metadata) -> Logger.Metadata) {
        let status = if case .answered(let response) = outcome { "\(response.status)" } else { "none" }
        switch result {
        case .delivered:
            logger.debug("APNs: delivered", metadata: context([:]))
        case .deadToken(let reason):
            logger.info("APNs: dead device token", metadata: context(["status": "\(status)", "reason": "\(reason)"]))
        case .retry(let reason, _):
            logger.warning("APNs: will retry", metadata: context(["status": "\(status)", "reason": "\(reason)"]))
        case .failed(let reason):
            logger.error("APNs: refused", metadata: context(["status": "\(status)", "reason": "\(reason)"]))
        }
    }
}
