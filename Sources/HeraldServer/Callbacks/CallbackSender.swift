import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldProviderKit
import HeraldWebPush
import Logging
import NIOCore
import NIOHTTP1

/// Makes one attempt of a callback: the signed POST, and what came of it.
public protocol CallbackTransport: Sendable {
    /// POSTs `callback`'s body to its URL with the Standard Webhooks headers signed by `secret` at `now`.
    func attempt(_ callback: CallbackDelivery, secret: Data, now: Date) async -> CallbackAttemptAnswer
    /// Closes the connections.
    func shutdown() async
}

/// Callbacks over HTTPS with Web Push's egress machinery (``WebPushHosts``, ``WebPushEgressPolicy``): the host is
/// resolved by Herald and every address vetted (``CallbackURLRule``) before it connects to one of them, with TLS
/// verified for the host name; redirects are not followed; each attempt has a connect and a total deadline; at most
/// ``CallbackConfiguration/maximumPerHost`` attempts are in flight per host, and one beyond them is not made (answered
/// ``CallbackAttemptAnswer/hostBusy``) rather than waiting.
public final class HTTPCallbackSender: CallbackTransport {
    private let hosts: WebPushHosts
    private let policy: WebPushEgressPolicy
    private let resolver: any WebPushResolver
    private let requestTimeout: TimeAmount
    private let logger: Logger

    /// - Throws: ``CallbackConfigurationError`` naming the option at fault.
    public init(
        configuration: CallbackConfiguration, clock: any WallClock = SystemClock(), logger: Logger = Logger(label: "herald.callbacks"),
        eventLoopGroup: any EventLoopGroup = HTTPClient.defaultEventLoopGroup, resolver: any WebPushResolver = SystemWebPushResolver()
    ) throws(CallbackConfigurationError) {
        if let problem = configuration.settingProblems().first { throw problem }
        let extraRoots = try configuration.loadTrustedCertificates()
        let clientConfiguration = HTTPClient.Configuration(
            tlsConfiguration: ProviderTLS.clientConfiguration(trusting: extraRoots), redirectConfiguration: .disallow,
            timeout: .init(connect: TimeAmount(configuration.connectTimeout)), connectionPool: .init(idleTimeout: .minutes(1)),
            decompression: .disabled)
        self.hosts = WebPushHosts(
            configuration: clientConfiguration, eventLoopGroup: eventLoopGroup, maximumPerHost: configuration.maximumPerHost,
            retirement: configuration.requestTimeout + configuration.connectTimeout, clock: clock)
        self.policy = try configuration.egressPolicy()
        self.resolver = resolver
        self.requestTimeout = TimeAmount(configuration.requestTimeout)
        self.logger = logger
    }

    public func attempt(_ callback: CallbackDelivery, secret: Data, now: Date) async -> CallbackAttemptAnswer {
        // Today's rules, whatever the stored row holds.
        if let problem = CallbackURLRule.problem(callback.url, policy: policy) { return .refused("callback_url \(problem)") }
        guard let url = URL(string: callback.url), let target = WebPushHosts.lowercasingHost(url) else {
            return .refused("callback_url's host cannot be read")
        }
        let addresses: [IPAddressBytes]
        if let literal = IPAddressBytes(target.host) {
            addresses = [literal]
        } else {
            do {
                addresses = try await resolver.addresses(of: target.host)
            } catch {
                return .unreachable("\(error)")
            }
        }
        if let refusal = policy.refusal(host: target.host, addresses: addresses, option: CallbackURLRule.option) {
            return addresses.isEmpty ? .unreachable(refusal) : .refused(refusal)
        }
        let hostAndPort = "\(target.host):\(target.url.port ?? 443)"
        let client: HTTPClient
        switch hosts.begin(host: hostAndPort, name: target.host, addresses: addresses) {
        case .admitted(let admitted): client = admitted
        case .hostBusy, .clientsBusy: return .hostBusy
        case .shutDown: return .unreachable("Herald is shutting down")
        }
        defer { hosts.end(host: hostAndPort, client: client) }
        var request = HTTPClientRequest(url: target.url.absoluteString)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        request.headers.add(name: "user-agent", value: "Herald/\(HeraldVersion.current)")
        for header in CallbackSigning.headers(id: callback.webhookID, at: now, body: callback.body, secret: secret) {
            request.headers.add(name: header.name, value: header.value)
        }
        request.body = .bytes(ByteBuffer(bytes: callback.body))
        do {
            let response = try await client.execute(request, timeout: requestTimeout, logger: logger)
            _ = try? await response.body.collect(upTo: 16 * 1024)
            return .answered(
                status: Int(response.status.code), retryAfter: CallbackRetryPolicy.seconds(fromRetryAfter: response.headers.first(name: "retry-after")))
        } catch {
            return .unreachable("\(error)")
        }
    }

    public func shutdown() async {
        await hosts.shutdown()
    }

    /// Attempts in flight to `hostAndPort` (`host:port`, host lower-cased; for tests).
    func inFlight(to hostAndPort: String) -> Int { hosts.inFlight(to: hostAndPort) }
}
