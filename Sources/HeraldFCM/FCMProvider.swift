import AsyncHTTPClient
import CoreMetrics
import Foundation
import HeraldCore
import HeraldProviderKit
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
/// Every answer and transport error is classified once, by ``FCMClassification``, inside the attempt loop every provider
/// shares (``ProviderAttempts``: access-token renewal, resend once, metrics, logs).
///
/// ```swift
/// let provider = try FCMProvider(configuration: FCMConfiguration(serviceAccount: .file(path: path)))
/// let result = await provider.send(notification, to: device)
/// try await provider.shutdown()
/// ```
public final class FCMProvider: ClosablePushProvider {
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
    private let attempts: ProviderAttempts

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
        var clientConfiguration = HTTPClient.Configuration(
            tlsConfiguration: ProviderTLS.clientConfiguration(trusting: extraRoots), redirectConfiguration: .disallow,
            timeout: .init(connect: TimeAmount(configuration.requestTimeout)), connectionPool: .init(idleTimeout: .minutes(10)), decompression: .disabled)
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
        self.attempts = ProviderAttempts(description: FCMModule.description, logger: logger, metrics: metrics)
        self.accessTokens = FCMAccessTokens(
            serviceAccount: serviceAccount, clients: clients, clock: clock, timeout: TimeAmount(configuration.requestTimeout),
            logger: logger)
    }

    /// Sends one notification and classifies the answer (``FCMClassification`` lists the rules).
    public func send(_ notification: PushNotification, to device: Device) async -> DeliveryResult {
        guard let registrationToken = device.token, !registrationToken.isEmpty else {
            return .failed(reason: "the device has no FCM registration token")
        }
        // The payload: the stored FCM message, with the device's token and the time left added.
        let body: ByteBuffer
        do {
            body = try Self.requestBody(notification, token: registrationToken, now: clock.now())
        } catch {
            return .failed(reason: "the stored payload is not an FCM message: \(error)")
        }
        return await attempts.deliver(
            FCMExchange(
                notificationID: notification.id, registrationToken: registrationToken, body: body, sendURL: sendURL,
                clients: clients, accessTokens: accessTokens, requestTimeout: requestTimeout,
                timeoutDescription: timeoutDescription, logger: logger))
    }

    /// Closes the connections; sends after this return a retry.
    public func shutdown() async throws {
        try await clients.shutdown()
    }

    /// `{"message": <stored message> + token (+ android.ttl)}`.
    static func requestBody(_ notification: PushNotification, token: String, now: Date) throws -> ByteBuffer {
        // The stored message; rendered again from the content when it was rendered for another provider.
        guard var message = try JSONValue.decode(FCMModule.renderer.payload(of: notification)).objectValue else {
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
}

/// The stored payload could not be turned into a request.
enum FCMPayloadError: Error {
    case notAnObject
}

/// FCM's documented limits and codes; the server reads the limits through ``FCMModule/description``.
enum FCMMessageRules {
    /// The longest `android.ttl` FCM takes: four weeks.
    static let maximumTTL = 2_419_200
    /// The `errorCode`s Google documents (others are counted as `unknown` in metrics).
    static let errorCodes: Set<String> = [
        "UNSPECIFIED_ERROR", "INVALID_ARGUMENT", "UNREGISTERED", "SENDER_ID_MISMATCH", "QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL",
        "THIRD_PARTY_AUTH_ERROR",
    ]
}
