import AsyncHTTPClient
import Foundation
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

/// At most `limit` requests in flight to one host; the others wait their turn, first come first served.
final class HostGate: Sendable {
    private struct State {
        var inFlight = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    let limit: Int
    private let state = Mutex(State())

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Waits for a place; ``leave()`` gives it back.
    func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let admitted = state.withLock { state in
                if state.inFlight < limit {
                    state.inFlight += 1
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if admitted { continuation.resume() }
        }
    }

    func leave() {
        let next: CheckedContinuation<Void, Never>? = state.withLock { state in
            if state.waiting.isEmpty {
                state.inFlight -= 1
                return nil
            }
            return state.waiting.removeFirst()  // the place passes on
        }
        next?.resume()
    }

    /// Requests in flight now (for tests).
    var inFlight: Int { state.withLock { $0.inFlight } }
}

/// The provider's HTTP clients and per-host gates. A host's client connects to one address it resolved to and that the
/// egress policy vetted: AsyncHTTPClient connects there (`dnsOverride`, no second DNS lookup) while TLS verifies the
/// certificate for the host name (SNI). The client is kept while its address stays among the host's vetted addresses;
/// when the name moves elsewhere a new client takes over and the old one is shut down once its requests had time to
/// finish. Redirects are never followed.
final class WebPushHosts: Sendable {
    private struct HostClient {
        var address: IPAddressBytes
        var client: HTTPClient
    }

    private struct State {
        var clients: [String: HostClient] = [:]
        var gates: [String: HostGate] = [:]
        var isShutDown = false
    }

    private let configuration: HTTPClient.Configuration
    private let eventLoopGroup: any EventLoopGroup
    private let maximumPerHost: Int
    /// How long a replaced client is kept for the requests it still carries.
    private let retirement: Duration
    private let state = Mutex(State())

    init(configuration: HTTPClient.Configuration, eventLoopGroup: any EventLoopGroup, maximumPerHost: Int, retirement: Duration) {
        self.configuration = configuration
        self.eventLoopGroup = eventLoopGroup
        self.maximumPerHost = maximumPerHost
        self.retirement = retirement
    }

    /// The gate of `host` (`host:port`).
    func gate(for host: String) -> HostGate {
        state.withLock { state in
            if let gate = state.gates[host] { return gate }
            let gate = HostGate(limit: maximumPerHost)
            state.gates[host] = gate
            return gate
        }
    }

    /// The client for `host` (`name`, `port`), connecting to one of `addresses` (vetted, not empty); `nil` once shut
    /// down.
    func client(host: String, name: String, addresses: [IPAddressBytes]) -> HTTPClient? {
        let (client, retired): (HTTPClient?, HTTPClient?) = state.withLock { state in
            guard !state.isShutDown, let address = addresses.first else { return (nil, nil) }
            if let current = state.clients[host], addresses.contains(current.address) { return (current.client, nil) }
            var configuration = self.configuration
            if IPAddressBytes(name) == nil { configuration.dnsOverride = [name: address.description] }
            let client = HTTPClient(eventLoopGroup: eventLoopGroup, configuration: configuration)
            let retired = state.clients[host]?.client
            state.clients[host] = HostClient(address: address, client: client)
            return (client, retired)
        }
        if let retired {
            let retirement = self.retirement
            Task {
                try? await Task.sleep(for: retirement)
                try? await retired.shutdown()
            }
        }
        return client
    }

    /// Shuts every client down; later requests get no client.
    func shutdown() async {
        let clients: [HTTPClient] = state.withLock { state in
            state.isShutDown = true
            defer { state.clients = [:] }
            return state.clients.values.map(\.client)
        }
        for client in clients { try? await client.shutdown() }
    }
}
