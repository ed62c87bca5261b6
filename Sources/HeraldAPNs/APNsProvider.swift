import AsyncHTTPClient
import CoreMetrics
import Foundation
import HeraldCore
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL

/// Delivers notifications to Apple devices through the APNs provider API (HTTP/2, token authentication).
///
/// Each notification becomes `POST /3/device/<token>` on the endpoint of the device's environment, with
/// `authorization`, `apns-push-type`, `apns-topic`, `apns-priority`, `apns-expiration`, `apns-id` and, when set,
/// `apns-collapse-id`; the body is the stored payload, byte for byte.
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
/// Call ``shutdown()`` before dropping the provider: AsyncHTTPClient requires its clients to be shut down.
public final class APNsProvider: PushProvider {
    /// Always ``Platform/apns``.
    public let platform: Platform = .apns
    /// The configuration the provider was built from.
    public let configuration: APNsConfiguration
    /// The provider-token cache shared by all connections.
    public let tokenIssuer: ProviderTokenIssuer

    private let pool: APNsClientPool
    private let baseURLs: [PushEnvironment: String]
    private let requestTimeout: TimeAmount
    private let logger: Logger
    private let metrics: ProviderMetrics

    /// Loads the key and the extra CA certificates and prepares (but does not open) the connections.
    ///
    /// - Parameters:
    ///   - configuration: Key, ids, topic, endpoints and pool settings.
    ///   - clock: The time for the provider token's `iat` and age.
    ///   - logger: Where requests and connection trouble are logged (never full device tokens or JWTs).
    ///   - eventLoopGroup: The NIO event loops of the HTTP clients.
    ///   - metrics: Where request latencies and answers are counted (``ProviderMetrics``); swift-metrics' global
    ///     factory by default.
    /// - Throws: ``APNsConfigurationError``, one line naming the option at fault.
    public init(
        configuration: APNsConfiguration,
        clock: any WallClock = SystemClock(),
        logger: Logger = Logger(label: "herald.apns"),
        eventLoopGroup: any EventLoopGroup = HTTPClient.defaultEventLoopGroup,
        metrics: any MetricsFactory = MetricsSystem.factory
    ) throws(APNsConfigurationError) {
        if let problem = configuration.settingProblems().first { throw problem }
        let key = try configuration.loadSigningKey()
        let extraRoots = try configuration.loadTrustedCertificates()
        guard let production = HTTPSBaseURL.normalized(configuration.productionURL),
            let sandbox = HTTPSBaseURL.normalized(configuration.sandboxURL)
        else { throw APNsConfigurationError(.productionURL, "is not an https:// URL") }

        self.configuration = configuration
        self.logger = logger
        self.metrics = ProviderMetrics(provider: "apns", factory: metrics)
        self.baseURLs = [.production: production, .sandbox: sandbox]
        self.requestTimeout = TimeAmount(configuration.requestTimeout)
        self.tokenIssuer = ProviderTokenIssuer(
            key: key, keyID: configuration.keyID, teamID: configuration.teamID,
            refreshInterval: configuration.tokenRefreshInterval, clock: clock)

        var tls = TLSConfiguration.makeClientConfiguration()
        if !extraRoots.isEmpty { tls.additionalTrustRoots = [.certificates(extraRoots)] }
        var clientConfiguration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(10)),
            // Apple: keep connections open for hours; AHC's default closes them after 60 s idle.
            connectionPool: .init(idleTimeout: .hours(1)),
            decompression: .disabled
        )
        clientConfiguration.httpVersion = .automatic  // HTTP/2 via ALPN over TLS
        let backgroundLogger = logger
        let httpConfiguration = clientConfiguration
        self.pool = APNsClientPool(connectionsPerEnvironment: configuration.connectionsPerEnvironment) {
            HTTPClient(
                eventLoopGroup: eventLoopGroup, configuration: httpConfiguration,
                backgroundActivityLogger: backgroundLogger)
        }
    }

    /// Sends one notification and classifies the answer; see the type's documentation for the rules.
    public func send(_ notification: PushNotification, to device: Device) async -> DeliveryResult {
        let apnsID = notification.id.uuidString.lowercased()
        guard let deviceToken = device.token, !deviceToken.isEmpty else {
            return .failed(reason: "MissingDeviceToken")
        }
        // Built only when a line is logged (swift-log takes metadata as an autoclosure).
        func context(_ more: Logger.Metadata = [:]) -> Logger.Metadata {
            more.merging(["apns-id": "\(apnsID)", "device-token": "\(deviceToken.prefix(8))…"]) { new, _ in new }
        }
        // A token that is not hex would not survive the URL, and APNs would call it BadDeviceToken anyway.
        guard Secrets.isHex(deviceToken), let baseURL = baseURLs[device.environment] else {
            return .deadToken(reason: APNsErrorReason.badDeviceToken.rawValue)
        }
        let url = "\(baseURL)/3/device/\(deviceToken)"

        var providerToken = tokenIssuer.currentToken()
        var hasRenewedToken = false
        var hasResentAfterConnectionLoss = false
        while true {
            guard let lease = pool.lease(device.environment) else {
                return .retry(reason: "APNs provider is shut down", after: nil)
            }
            let request = makeRequest(notification, url: url, apnsID: apnsID, providerToken: providerToken)
            let outcome = await execute(request, on: lease.client, logger: logger)
            if APNsClassification.replacesConnection(after: outcome), pool.recycle(lease) {
                // A fresh client guarantees that a re-send goes out on a new connection (AsyncHTTPClient may not
                // have noticed the closed one yet), and that TooManyProviderTokenUpdates stops.
                logger.info("APNs: replacing a connection", metadata: context())
            }
            await pool.release(lease)

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
        try await pool.shutdown()
    }

    private func makeRequest(
        _ notification: PushNotification, url: String, apnsID: String, providerToken: ProviderTokenIssuer.Token
    ) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "authorization", value: "bearer \(providerToken.jwt)")
        request.headers.add(name: "apns-push-type", value: notification.pushType.rawValue)
        request.headers.add(name: "apns-topic", value: configuration.topic)
        request.headers.add(name: "apns-priority", value: String(notification.priority))
        let expiration = max(0, Int(notification.expiresAt.timeIntervalSince1970.rounded(.down)))
        request.headers.add(name: "apns-expiration", value: String(expiration))
        if let collapseID = notification.collapseID {
            request.headers.add(name: "apns-collapse-id", value: collapseID)
        }
        request.headers.add(name: "apns-id", value: apnsID)
        request.body = .bytes(notification.payload)
        return request
    }

    private func execute(_ request: HTTPClientRequest, on client: HTTPClient, logger: Logger) async -> APNsAttemptOutcome {
        let started = ContinuousClock.now
        let outcome = await attempt(request, on: client, logger: logger)
        metrics.record(APNsMetrics.labels(of: outcome), duration: ContinuousClock.now - started)
        return outcome
    }

    private func attempt(_ request: HTTPClientRequest, on client: HTTPClient, logger: Logger) async -> APNsAttemptOutcome {
        do {
            let response = try await client.execute(request, timeout: requestTimeout, logger: logger)
            let body = try await response.body.collect(upTo: 64 * 1024)
            return .answered(
                APNsResponse(
                    status: Int(response.status.code), apnsID: response.headers.first(name: "apns-id"),
                    body: Data(body.readableBytesView)))
        } catch {
            return APNsClassification.outcome(of: error)
        }
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
