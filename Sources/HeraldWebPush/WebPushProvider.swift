import AsyncHTTPClient
import CoreMetrics
import Foundation
import HeraldCore
import HeraldProviderKit
import Logging
import NIOCore
import NIOHTTP1

/// Delivers notifications to browsers through their push services (Web Push: RFC 8030, 8291, 8292).
///
/// A Web Push device's token is its subscription's endpoint URL and its address data (``Device/addressData``) its keys (``WebPushKeys``). For each
/// notification the provider renders the payload (``WebPushRenderer``, plus the notification's `"id"`), encrypts it
/// for the subscription (``WebPushEncryption``), and POSTs it to the endpoint with `Content-Encoding: aes128gcm`,
/// `TTL`, `Urgency`, `Topic` (``WebPushRequestHeaders``) and the VAPID `Authorization` (``VAPIDSigner``).
///
/// Egress: the host is resolved by the provider and every address vetted (``WebPushEgressPolicy``) before it connects
/// to one of them, with TLS verified for the host name; at most ``WebPushConfiguration/maximumPerHost`` requests are
/// in flight per host, and a send that finds its host's cap taken answers "retry later" at once rather than waiting
/// (holding its delivery slot); at most 32 HTTP clients are kept (``WebPushHosts``). An endpoint today's rules refuse
/// (``WebPushEgressPolicy/endpointProblem(_:)``) fails the notification before anything is sent.
/// ``WebPushClassification`` decides what each answer means.
///
/// ```swift
/// let provider = try WebPushProvider(configuration: WebPushConfiguration(subject: "mailto:ops@example.com", vapidPrivateKey: key))
/// let result = await provider.send(notification, to: device)
/// try await provider.shutdown()
/// ```
public final class WebPushProvider: ClosablePushProvider {
    /// Always ``Platform/webpush``.
    public let platform: Platform = .webpush
    /// The VAPID signer (its public key is what browsers subscribe with).
    public let signer: VAPIDSigner

    let hosts: WebPushHosts
    private let policy: WebPushEgressPolicy
    private let resolver: any WebPushResolver
    private let clock: any WallClock
    private let requestTimeout: TimeAmount
    private let timeoutDescription: String
    private let logger: Logger
    private let attempts: ProviderAttempts

    /// Checks the configuration, parses the key and prepares (but does not open) the connections.
    ///
    /// - Throws: ``WebPushConfigurationError``, one line naming the option at fault.
    public init(
        configuration: WebPushConfiguration, clock: any WallClock = SystemClock(), logger: Logger = Logger(label: "herald.webpush"),
        eventLoopGroup: any EventLoopGroup = HTTPClient.defaultEventLoopGroup, metrics: any MetricsFactory = MetricsSystem.factory,
        resolver: any WebPushResolver = SystemWebPushResolver()
    ) throws(WebPushConfigurationError) {
        if let problem = configuration.settingProblems().first { throw problem }
        guard let subject = configuration.subject else { throw WebPushConfigurationError(.subject, "is required to send Web Push") }
        guard let keyText = configuration.vapidPrivateKey else {
            throw WebPushConfigurationError(.privateKey, "no VAPID key (the server generates one at start when none is given)")
        }
        let key = try VAPIDKey.parse(keyText)
        let extraRoots = try configuration.loadTrustedCertificates()
        let clientConfiguration = HTTPClient.Configuration(
            tlsConfiguration: ProviderTLS.clientConfiguration(trusting: extraRoots), redirectConfiguration: .disallow,
            timeout: .init(connect: TimeAmount(configuration.connectTimeout)), connectionPool: .init(idleTimeout: .minutes(5)),
            decompression: .disabled)
        self.hosts = WebPushHosts(
            configuration: clientConfiguration, eventLoopGroup: eventLoopGroup, maximumPerHost: configuration.maximumPerHost,
            retirement: configuration.requestTimeout + configuration.connectTimeout, clock: clock)
        self.policy = try configuration.egressPolicy()
        self.signer = VAPIDSigner(key: key, subject: subject, clock: clock)
        self.resolver = resolver
        self.clock = clock
        self.requestTimeout = TimeAmount(configuration.requestTimeout)
        self.timeoutDescription = configuration.requestTimeout.heraldDescription
        self.logger = logger
        self.attempts = ProviderAttempts(description: WebPushModule.description, logger: logger, metrics: metrics)
    }

    /// Sends one notification and classifies the answer (``WebPushClassification`` lists the rules).
    public func send(_ notification: PushNotification, to device: Device) async -> DeliveryResult {
        let metadata: Logger.Metadata = ["notification": "\(notification.id)", "device": "\(device.id)"]
        guard let endpointText = device.token, let endpoint = URL(string: endpointText), endpoint.host != nil else {
            return refused("the device has no Web Push endpoint", metadata)
        }
        // Today's rules, whatever the stored row holds (a port out of range would trap the HTTP client).
        if let problem = policy.endpointProblem(endpointText) {
            return refused("Web Push endpoint refused: the endpoint \(problem)", metadata)
        }
        guard let keys = WebPushKeys(addressData: device.addressData),
            let subscription = try? WebPushEncryption.SubscriptionKeys(p256dh: keys.p256dh, auth: keys.auth)
        else {
            return refused("the device has no valid Web Push subscription keys", metadata)
        }
        let body: Data
        do {
            body = try WebPushEncryption.encrypt(try Self.plaintext(notification), for: subscription)
        } catch {
            return refused("the payload cannot be sent as one Web Push message: \(error)", metadata)
        }
        return await attempts.deliver(
            WebPushExchange(
                notificationID: notification.id, endpoint: endpoint, body: ByteBuffer(bytes: body),
                headers: Self.headers(notification, now: clock.now()), signer: signer, hosts: hosts, policy: policy,
                resolver: resolver, requestTimeout: requestTimeout, timeoutDescription: timeoutDescription, logger: logger))
    }

    /// Closes the connections; sends after this return a retry.
    public func shutdown() async throws {
        await hosts.shutdown()
    }

    private func refused(_ reason: String, _ metadata: Logger.Metadata) -> DeliveryResult {
        let result = DeliveryResult.failed(reason: reason)
        attempts.logRefusedBeforeSending(result, metadata: metadata)
        return result
    }

    /// The service worker's JSON: the rendered payload with the notification's `"id"` added.
    static func plaintext(_ notification: PushNotification) throws -> Data {
        let payload = try WebPushModule.renderer.payload(of: notification)
        guard var object = try JSONValue.decode(payload).objectValue else { throw WebPushPayloadError.notAnObject }
        object["id"] = .string(notification.id.uuidString.lowercased())
        return try JSONValue.object(object).encoded()
    }

    /// `Content-Encoding`, `Content-Type`, `TTL`, `Urgency` and, with a collapse id, `Topic`.
    static func headers(_ notification: PushNotification, now: Date) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add(name: "content-encoding", value: "aes128gcm")
        headers.add(name: "content-type", value: "application/octet-stream")
        headers.add(name: "ttl", value: String(WebPushRequestHeaders.timeToLive(expiresAt: notification.expiresAt, now: now)))
        headers.add(name: "urgency", value: WebPushRequestHeaders.urgency(notification.content?.level))
        if let topic = WebPushRequestHeaders.topic(notification.collapseID) { headers.add(name: "topic", value: topic) }
        return headers
    }
}

/// The stored payload could not be turned into a message.
enum WebPushPayloadError: Error {
    case notAnObject
}
