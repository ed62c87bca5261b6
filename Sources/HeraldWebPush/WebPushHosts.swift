import AsyncHTTPClient
import Foundation
import HeraldCore
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Resolves push services' host names; the provider vets every address before it connects to one of them.
public protocol WebPushResolver: Sendable {
    /// The addresses of `host` (IPv4 and IPv6).
    func addresses(of host: String) async throws -> [IPAddressBytes]
}

/// `getaddrinfo`, on NIO's blocking-I/O thread pool.
public struct SystemWebPushResolver: WebPushResolver {
    public init() {}

    /// Why a name did not resolve.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public func addresses(of host: String) async throws -> [IPAddressBytes] {
        try await NIOThreadPool.singleton.runIfActive {
            var hints = addrinfo()
            hints.ai_family = AF_UNSPEC
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var list: UnsafeMutablePointer<addrinfo>?
            let status = getaddrinfo(host, nil, &hints, &list)
            guard status == 0, let first = list else {
                throw Failure(description: "\(host): \(String(cString: gai_strerror(status)))")
            }
            defer { freeaddrinfo(first) }
            var found: [IPAddressBytes] = []
            var cursor: UnsafeMutablePointer<addrinfo>? = first
            while let entry = cursor {
                if let address = entry.pointee.ai_addr {
                    switch Int32(entry.pointee.ai_family) {
                    case AF_INET:
                        address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                            var raw = v4.pointee.sin_addr
                            found.append(IPAddressBytes(bytes: withUnsafeBytes(of: &raw) { Array($0) }))
                        }
                    case AF_INET6:
                        address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                            var raw = v6.pointee.sin6_addr
                            found.append(IPAddressBytes(bytes: withUnsafeBytes(of: &raw) { Array($0) }))
                        }
                    default: break
                    }
                }
                cursor = entry.pointee.ai_next
            }
            var unique: [IPAddressBytes] = []
            for address in found where !unique.contains(address) { unique.append(address) }
            return unique
        }
    }
}

/// The provider's HTTP clients and per-host gates, both bounded.
///
/// - **Gates**: at most `maximumPerHost` requests in flight to one host (`host:port`, the host lower-cased). A request
///   that finds its host's gate full does not wait (it would hold its delivery slot while it waited): ``begin`` answers
///   ``Admission/hostBusy(limit:)`` and the provider answers "retry later". A host's entry exists only while it has
///   requests in flight, so the gate state is bounded by the requests in flight.
/// - **Clients**: a host's client connects to one address it resolved to and that the egress policy vetted:
///   AsyncHTTPClient connects there (`dnsOverride`, keyed by the host exactly as the request's URL spells it, so no
///   second DNS lookup) while TLS verifies the certificate for the host name (SNI). A client is kept while its address
///   stays among the host's vetted addresses; when the name moves elsewhere a new client takes over and the old one is
///   shut down once its requests had time to finish. At most `maximumClients` are kept (each holds its own TLS
///   context, about 1 MB): one unused for `idleTimeout` is shut down, and when the set is full the least recently used
///   idle one makes room; when every one is busy, ``begin`` answers ``Admission/clientsBusy(limit:)``.
///
/// Redirects are never followed.
///
/// Signed callbacks (HeraldServer's `CallbackSender`) reach their receivers through the same gates and clients: one
/// place decides how Herald connects to an address a client gave it.
public final class WebPushHosts: Sendable {
    /// Whether a request may go now, and over which client.
    public enum Admission {
        case admitted(HTTPClient)
        /// The host already has `limit` requests in flight.
        case hostBusy(limit: Int)
        /// Every one of the `limit` clients carries requests: none can make room for another host.
        case clientsBusy(limit: Int)
        case shutDown
    }

    private struct HostClient {
        var address: IPAddressBytes
        var client: HTTPClient
        var inFlight = 0
        var lastUsed: Date
    }

    private struct State {
        /// By `host:port` (host lower-cased).
        var clients: [String: HostClient] = [:]
        /// Requests in flight by `host:port` (host lower-cased); no entry at zero.
        var inFlight: [String: Int] = [:]
        /// Clients replaced while they carried requests, not yet shut down.
        var retiring = 0
        var isShutDown = false
    }

    private let configuration: HTTPClient.Configuration
    private let eventLoopGroup: any EventLoopGroup
    private let maximumPerHost: Int
    /// The most clients kept at once.
    let maximumClients: Int
    /// How long an unused client is kept.
    private let idleTimeout: TimeInterval
    /// How long a replaced client is kept for the requests it still carries.
    private let retirement: Duration
    private let clock: any WallClock
    private let state = Mutex(State())

    public init(
        configuration: HTTPClient.Configuration, eventLoopGroup: any EventLoopGroup, maximumPerHost: Int, retirement: Duration,
        maximumClients: Int = 32, idleTimeout: TimeInterval = 300, clock: any WallClock = SystemClock()
    ) {
        self.configuration = configuration
        self.eventLoopGroup = eventLoopGroup
        self.maximumPerHost = max(1, maximumPerHost)
        self.retirement = retirement
        self.maximumClients = max(1, maximumClients)
        self.idleTimeout = idleTimeout
        self.clock = clock
    }

    /// Takes a place under `host`'s cap (`host:port`, lower-cased) and its client, connecting to one of `addresses`
    /// (vetted, not empty) for requests to `name` (the URL's host, exactly as the request spells it). Every
    /// ``Admission/admitted(_:)`` is paired with one ``end(host:)``.
    public func begin(host: String, name: String, addresses: [IPAddressBytes]) -> Admission {
        let now = clock.now()
        var toShutDown: [HTTPClient] = []
        var toRetire: HTTPClient?
        let admission: Admission = state.withLock { state in
            guard !state.isShutDown, let address = addresses.first else { return .shutDown }
            let inFlight = state.inFlight[host] ?? 0
            guard inFlight < maximumPerHost else { return .hostBusy(limit: maximumPerHost) }
            for (key, entry) in state.clients where entry.inFlight == 0 && now.timeIntervalSince(entry.lastUsed) >= idleTimeout {
                state.clients[key] = nil
                toShutDown.append(entry.client)
            }
            if var current = state.clients[host], addresses.contains(current.address) {
                current.inFlight += 1
                current.lastUsed = now
                state.clients[host] = current
                state.inFlight[host] = inFlight + 1
                return .admitted(current.client)
            }
            if let replaced = state.clients.removeValue(forKey: host) {
                if replaced.inFlight > 0 {
                    toRetire = replaced.client
                    state.retiring += 1
                } else {
                    toShutDown.append(replaced.client)
                }
            }
            while state.clients.count + state.retiring >= maximumClients {
                let idle = state.clients.filter { $0.value.inFlight == 0 }
                guard let oldest = idle.min(by: { $0.value.lastUsed < $1.value.lastUsed }) else {
                    return .clientsBusy(limit: maximumClients)
                }
                state.clients[oldest.key] = nil
                toShutDown.append(oldest.value.client)
            }
            var configuration = self.configuration
            if IPAddressBytes(name) == nil { configuration.dnsOverride = [name: address.description] }
            let client = HTTPClient(eventLoopGroup: eventLoopGroup, configuration: configuration)
            state.clients[host] = HostClient(address: address, client: client, inFlight: 1, lastUsed: now)
            state.inFlight[host] = inFlight + 1
            return .admitted(client)
        }
        if !toShutDown.isEmpty {
            Task { for client in toShutDown { try? await client.shutdown() } }
        }
        if let toRetire {
            let retirement = self.retirement
            Task {
                try? await Task.sleep(for: retirement)
                try? await toRetire.shutdown()
                self.state.withLock { $0.retiring -= 1 }
            }
        }
        return admission
    }

    /// Gives back the place ``begin(host:name:addresses:)`` took for `host`.
    public func end(host: String, client: HTTPClient) {
        state.withLock { state in
            let remaining = (state.inFlight[host] ?? 1) - 1
            state.inFlight[host] = remaining > 0 ? remaining : nil
            if let current = state.clients[host], current.client === client {
                state.clients[host]?.inFlight = max(0, current.inFlight - 1)
                state.clients[host]?.lastUsed = clock.now()
            }
        }
    }

    /// Requests in flight to `host` (for tests).
    public func inFlight(to host: String) -> Int { state.withLock { $0.inFlight[host] ?? 0 } }
    /// How many hosts have requests in flight: the gate state (for tests).
    var gateCount: Int { state.withLock { $0.inFlight.count } }
    /// How many clients are kept, retiring ones included (for tests).
    var clientCount: Int { state.withLock { $0.clients.count + $0.retiring } }

    /// Shuts every client down; later requests get no client.
    public func shutdown() async {
        let clients: [HTTPClient] = state.withLock { state in
            state.isShutDown = true
            defer { state.clients = [:] }
            return state.clients.values.map(\.client)
        }
        for client in clients { try? await client.shutdown() }
    }
}

extension WebPushHosts {
    /// `url` with its host's ASCII letters lower-cased, and that host (the name ``begin(host:name:addresses:)`` takes);
    /// `nil` when the URL cannot be rewritten so.
    public static func lowercasingHost(_ url: URL) -> (url: URL, host: String)? {
        WebPushExchange.lowercasingHost(url)
    }
}
