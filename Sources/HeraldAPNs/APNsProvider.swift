import AsyncHTTPClient
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
/// Answers are classified once:
/// - `200` → ``DeliveryResult/delivered(providerMessageID:)`` with the `apns-id`.
/// - `410 Unregistered`/`ExpiredToken`, `400 BadDeviceToken`/`DeviceTokenNotForTopic`
///   → ``DeliveryResult/deadToken(reason:)``.
/// - `429`, `5xx`, timeouts and connection failures → ``DeliveryResult/retry(reason:after:)``
///   (`TooManyRequests` no earlier than 60 s).
/// - `403 ExpiredProviderToken` → the token is renewed once and the push re-sent at once; a second refusal is a retry.
/// - `429 TooManyProviderTokenUpdates` → the token is kept, the connection that saw it replaced, and a retry returned.
/// - A connection closed (or GOAWAY) before the answer → the client is replaced and the push re-sent once at once on
///   a fresh connection; a second loss is a retry.
/// - `413` and every other `4xx` → ``DeliveryResult/failed(reason:)``.
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

    /// Loads the key and the extra CA certificates and prepares (but does not open) the connections.
    ///
    /// - Parameters:
    ///   - configuration: Key, ids, topic, endpoints and pool settings.
    ///   - clock: The time for the provider token's `iat` and age.
    ///   - logger: Where requests and connection trouble are logged (never full device tokens or JWTs).
    ///   - eventLoopGroup: The NIO event loops of the HTTP clients.
    /// - Throws: ``APNsConfigurationError``, one line naming the option at fault.
    public init(
        configuration: APNsConfiguration,
        clock: any WallClock = SystemClock(),
        logger: Logger = Logger(label: "herald.apns"),
        eventLoopGroup: any EventLoopGroup = HTTPClient.defaultEventLoopGroup
    ) throws(APNsConfigurationError) {
        if let problem = configuration.settingProblems().first { throw problem }
        let key = try configuration.loadSigningKey()
        let extraRoots = try configuration.loadTrustedCertificates()
        guard let production = APNsConfiguration.normalizedBaseURL(configuration.productionURL),
            let sandbox = APNsConfiguration.normalizedBaseURL(configuration.sandboxURL)
        else { throw APNsConfigurationError(.productionURL, "is not an https:// URL") }

        self.configuration = configuration
        self.logger = logger
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
        var logger = self.logger
        logger[metadataKey: "apns-id"] = "\(apnsID)"
        guard let deviceToken = device.token, !deviceToken.isEmpty else {
            return .failed(reason: "MissingDeviceToken")
        }
        logger[metadataKey: "device-token"] = "\(deviceToken.prefix(8))…"
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
            switch outcome {
            case .answered(let response) where response.reason == .tooManyProviderTokenUpdates:
                if pool.recycle(lease) {
                    logger.warning("APNs: TooManyProviderTokenUpdates, replacing the connection")
                }
            case .connectionLost:
                // AsyncHTTPClient may not have noticed the closed connection yet when the failed stream reports;
                // a fresh client guarantees the re-send goes out on a new connection.
                pool.recycle(lease)
            default:
                break
            }
            await pool.release(lease)

            switch outcome {
            case .answered(let response):
                if response.status == 403, response.reason == .expiredProviderToken, !hasRenewedToken,
                    let renewed = tokenIssuer.renewAfterExpiry(of: providerToken)
                {
                    logger.warning("APNs: ExpiredProviderToken, renewing the provider token and re-sending")
                    hasRenewedToken = true
                    providerToken = renewed
                    continue
                }
                let result = response.deliveryResult
                log(result, status: response.status, logger: logger)
                return result
            case .connectionLost(let description):
                guard hasResentAfterConnectionLoss else {
                    logger.info("APNs: connection closed before the answer (\(description)), re-sending once")
                    hasResentAfterConnectionLoss = true
                    continue
                }
                return .retry(reason: "connection closed before the answer: \(description)", after: nil)
            case .timedOut:
                logger.warning("APNs: no answer within \(configuration.requestTimeout.heraldDescription)")
                return .retry(reason: "no answer within \(configuration.requestTimeout.heraldDescription)", after: nil)
            case .failed(let description):
                logger.warning("APNs: request failed: \(description)")
                return .retry(reason: description, after: nil)
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
        do {
            let response = try await client.execute(request, timeout: requestTimeout, logger: logger)
            let body = try await response.body.collect(upTo: 64 * 1024)
            return .answered(
                APNsResponse(
                    status: Int(response.status.code), apnsID: response.headers.first(name: "apns-id"),
                    body: Data(body.readableBytesView)))
        } catch {
            return APNsAttemptOutcome(error)
        }
    }

    private func log(_ result: DeliveryResult, status: Int, logger: Logger) {
        switch result {
        case .delivered:
            logger.debug("APNs: delivered")
        case .deadToken(let reason):
            logger.info("APNs: dead device token", metadata: ["status": "\(status)", "reason": "\(reason)"])
        case .retry(let reason, _):
            logger.warning("APNs: will retry", metadata: ["status": "\(status)", "reason": "\(reason)"])
        case .failed(let reason):
            logger.error("APNs: refused", metadata: ["status": "\(status)", "reason": "\(reason)"])
        }
    }
}
