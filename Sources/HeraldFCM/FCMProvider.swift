import AsyncHTTPClient
import CoreMetrics
import Foundation
import HeraldCore
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL

/// Delivers notifications to FCM devices (Android, and apps that use Firebase on every platform) through the FCM
/// HTTP v1 API: `POST {base}/v1/projects/{project_id}/messages:send` over HTTP/2, authorised by an OAuth access token
/// that ``FCMAccessTokens`` obtains from the service account.
///
/// Sends go out over ``FCMConfiguration/connections`` HTTP/2 connections, in turn. The stored payload is the FCM
/// `message` without its target (docs/payloads.md); the provider adds `token` (the
/// device's current registration token) and, unless the message sets one, `android.ttl` = the time left until the
/// notification expires, and sends `{"message": …}`.
///
/// Every answer and transport error is classified once, by ``FCMClassification``.
///
/// ```swift
/// let provider = try FCMProvider(configuration: FCMConfiguration(serviceAccount: .file(path: path)))
/// let result = await provider.send(notification, to: device)
/// try await provider.shutdown()
/// ```
public final class FCMProvider: PushProvider {
    /// Always ``Platform/fcm``.
    public let platform: Platform = .fcm
    /// The configuration the provider was built from.
    public let configuration: FCMConfiguration
    /// The project messages are sent in (from the service account).
    public let projectID: String
    /// The access-token cache.
    public let accessTokens: FCMAccessTokens

    private let sendURL: String
    private let clients: FCMClientPool
    private let clock: any WallClock
    private let requestTimeout: TimeAmount
    /// `10 s`: the deadline as reasons name it.
    private let timeoutDescription: String
    private let logger: Logger
    private let metrics: ProviderMetrics

    /// Loads the service account and the extra CA certificates and prepares (but does not open) the connections.
    ///
    /// - Throws: ``FCMConfigurationError``, one line naming the option at fault.
    public init(
        configuration: FCMConfiguration, clock: any WallClock = SystemClock(), logger: Logger = Logger(label: "herald.fcm"),
        eventLoopGroup: any EventLoopGroup = HTTPClient.defaultEventLoopGroup,
        metrics: any MetricsFactory = MetricsSystem.factory
    ) throws(FCMConfigurationError) {
        if let problem = configuration.settingProblems().first { throw problem }
        let serviceAccount = try configuration.loadServiceAccount()
        let extraRoots = try configuration.loadTrustedCertificates()
        guard let base = HTTPSBaseURL.normalized(configuration.baseURL) else {
            throw FCMConfigurationError(.baseURL, "is not an https:// URL")
        }
        var tls = TLSConfiguration.makeClientConfiguration()
        if !extraRoots.isEmpty { tls.additionalTrustRoots = [.certificates(extraRoots)] }
        var clientConfiguration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow, timeout: .init(connect: .seconds(10)),
            connectionPool: .init(idleTimeout: .minutes(10)), decompression: .disabled)
        clientConfiguration.httpVersion = .automatic  // HTTP/2 via ALPN: one connection per client, many streams each
        let httpConfiguration = clientConfiguration
        self.clients = FCMClientPool(connections: configuration.connections) {
            HTTPClient(eventLoopGroup: eventLoopGroup, configuration: httpConfiguration, backgroundActivityLogger: logger)
        }

        self.configuration = configuration
        self.projectID = serviceAccount.projectID
        self.sendURL = "\(base)/v1/projects/\(serviceAccount.projectID)/messages:send"
        self.clock = clock
        self.requestTimeout = TimeAmount(configuration.requestTimeout)
        self.timeoutDescription = "\(configuration.requestTimeout.components.seconds) s"
        self.logger = logger
        self.metrics = ProviderMetrics(provider: "fcm", factory: metrics)
        self.accessTokens = FCMAccessTokens(
            serviceAccount: serviceAccount, clients: clients, clock: clock, timeout: TimeAmount(configuration.requestTimeout),
            logger: logger)
    }

    /// Sends one notification and classifies the answer (``FCMClassification`` lists the rules).
    public func send(_ notification: PushNotification, to device: Device) async -> DeliveryResult {
        guard let registrationToken = device.token, !registrationToken.isEmpty else {
            return .failed(reason: "the device has no FCM registration token")
        }
        func context(_ more: Logger.Metadata = [:]) -> Logger.Metadata {
            more.merging(["notification": "\(notification.id)", "device-token": "\(registrationToken.prefix(8))…"]) { new, _ in new }
        }
        let body: ByteBuffer
        do {
            body = try Self.requestBody(notification, token: registrationToken, now: clock.now())
        } catch {
            return .failed(reason: "the stored payload is not an FCM message: \(error)")
        }

        var hasRenewedToken = false
        var hasResent = false
        var accessToken: FCMAccessTokens.Token
        do {
            accessToken = try await accessTokens.current()
        } catch {
            logger.error("FCM: no access token", metadata: context(["error": "\(error.description)"]))
            return .retry(reason: "FCM access token: \(error.description)", after: nil)
        }
        while true {
            var request = HTTPClientRequest(url: sendURL)
            request.method = .POST
            request.headers.add(name: "authorization", value: "Bearer \(accessToken.value)")
            request.headers.add(name: "content-type", value: "application/json; charset=UTF-8")
            request.body = .bytes(body)
            guard let lease = clients.lease() else {
                return .retry(reason: "the FCM provider is shut down", after: nil)
            }
            let started = ContinuousClock.now
            let outcome = await attempt(request, on: lease.client)
            metrics.record(labels(of: outcome), duration: ContinuousClock.now - started)
            if FCMClassification.replacesConnection(after: outcome) {
                logger.info("FCM: the connection was lost, opening a new one", metadata: context())
                await clients.replace(lease)
            }

            switch FCMClassification.nextStep(
                after: outcome, hasRenewedToken: hasRenewedToken, hasResent: hasResent, timeout: timeoutDescription)
            {
            case .resend:
                logger.info("FCM: the connection had closed before the request went out, re-sending once", metadata: context())
                hasResent = true
            case .renewAccessTokenAndResend:
                logger.warning("FCM: access token refused (401), renewing it and re-sending", metadata: context())
                hasRenewedToken = true
                do {
                    accessToken = try await accessTokens.renew(after: accessToken)
                } catch {
                    logger.error("FCM: no access token", metadata: context(["error": "\(error.description)"]))
                    return .retry(reason: "FCM access token: \(error.description)", after: nil)
                }
            case .finish(let result):
                log(result, outcome: outcome, context: context)
                return result
            }
        }
    }

    /// Closes the connections; sends after this return a retry.
    public func shutdown() async throws {
        try await clients.shutdown()
    }

    /// `{"message": <stored message> + token (+ android.ttl)}`.
    static func requestBody(_ notification: PushNotification, token: String, now: Date) throws -> ByteBuffer {
        // The stored message; rendered again from the content when it was rendered for another provider.
        guard var message = try JSONValue.decode(FCMRenderer().payload(of: notification)).objectValue else {
            throw FCMPayloadError.notAnObject
        }
        message["token"] = .string(token)
        var android = message["android"]?.objectValue ?? [:]
        if android["ttl"] == nil {
            let seconds = min(max(0, Int(notification.expiresAt.timeIntervalSince(now).rounded(.down))), FCMMessageRules.maximumTTL)
            android["ttl"] = .string("\(seconds)s")
            message["android"] = .object(android)
        }
        return ByteBuffer(bytes: try JSONValue.object(["message": .object(message)]).encoded())
    }

    private func attempt(_ request: HTTPClientRequest, on client: HTTPClient) async -> FCMAttemptOutcome {
        do {
            let response = try await client.execute(request, timeout: requestTimeout, logger: logger)
            let body = try await response.body.collect(upTo: 64 * 1024)
            return .answered(
                FCMResponse(
                    status: Int(response.status.code), body: Data(body.readableBytesView),
                    retryAfterHeader: response.headers.first(name: "retry-after")))
        } catch {
            return FCMClassification.outcome(of: error)
        }
    }

    private func labels(of outcome: FCMAttemptOutcome) -> (status: String, reason: String) {
        switch outcome {
        case .answered(let response):
            let status = (100...599).contains(response.status) ? String(response.status) : "other"
            let reason = response.errorCode.map { FCMMessageRules.errorCodes.contains($0) ? $0 : "unknown" } ?? "none"
            return (status, reason)
        case .timedOut: return ("none", "timeout")
        case .notSent, .connectionLost: return ("none", "connection_lost")
        case .failed: return ("none", "error")
        }
    }

    private func log(_ result: DeliveryResult, outcome: FCMAttemptOutcome, context: (Logger.Metadata) -> Logger.Metadata) {
        let status = if case .answered(let response) = outcome { "\(response.status)" } else { "none" }
        switch result {
        case .delivered:
            logger.debug("FCM: delivered", metadata: context([:]))
        case .deadToken(let reason):
            logger.info("FCM: dead registration token", metadata: context(["status": "\(status)", "reason": "\(reason)"]))
        case .retry(let reason, _):
            logger.warning("FCM: will retry", metadata: context(["status": "\(status)", "reason": "\(reason)"]))
        case .failed(let reason):
            logger.error("FCM: refused", metadata: context(["status": "\(status)", "reason": "\(reason)"]))
        }
    }
}

/// The stored payload could not be turned into a request.
enum FCMPayloadError: Error {
    case notAnObject
}

/// FCM's documented limits and codes.
public enum FCMMessageRules {
    /// The longest `android.ttl` FCM takes: four weeks.
    public static let maximumTTL = 2_419_200
    /// The `errorCode`s Google documents (others are counted as `unknown` in metrics).
    static let errorCodes: Set<String> = [
        "UNSPECIFIED_ERROR", "INVALID_ARGUMENT", "UNREGISTERED", "SENDER_ID_MISMATCH", "QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL",
        "THIRD_PARTY_AUTH_ERROR",
    ]
}
