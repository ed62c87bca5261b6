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

/// The provider's HTTP clients and per-host gates. A client is made per host and vetted address: AsyncHTTPClient
/// connects to that address (`dnsOverride`, no second DNS lookup) while TLS verifies the certificate for the host
/// name (SNI). Redirects are never followed.
final class WebPushHosts: Sendable {
    /// Clients kept at most; the oldest is shut down beyond.
    static let maximumClients = 256

    private struct State {
        var clients: [String: HTTPClient] = [:]
        var order: [String] = []
        var gates: [String: HostGate] = [:]
        var isShutDown = false
    }

    private let configuration: HTTPClient.Configuration
    private let eventLoopGroup: any EventLoopGroup
    private let maximumPerHost: Int
    private let state = Mutex(State())

    init(configuration: HTTPClient.Configuration, eventLoopGroup: any EventLoopGroup, maximumPerHost: Int) {
        self.configuration = configuration
        self.eventLoopGroup = eventLoopGroup
        self.maximumPerHost = maximumPerHost
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

    /// The client that connects to `host` at `address`; `nil` once shut down.
    func client(host: String, address: IPAddressBytes) -> HTTPClient? {
        let key = "\(host)|\(address)"
        let (client, evicted): (HTTPClient?, HTTPClient?) = state.withLock { state in
            guard !state.isShutDown else { return (nil, nil) }
            if let client = state.clients[key] { return (client, nil) }
            var configuration = self.configuration
            if IPAddressBytes(host) == nil { configuration.dnsOverride = [host: address.description] }
            let client = HTTPClient(eventLoopGroup: eventLoopGroup, configuration: configuration)
            state.clients[key] = client
            state.order.append(key)
            var evicted: HTTPClient?
            if state.order.count > Self.maximumClients {
                let oldest = state.order.removeFirst()
                evicted = state.clients.removeValue(forKey: oldest)
            }
            return (client, evicted)
        }
        if let evicted { Task { try? await evicted.shutdown() } }
        return client
    }

    /// Shuts every client down; later requests get no client.
    func shutdown() async {
        let clients: [HTTPClient] = state.withLock { state in
            state.isShutDown = true
            defer { state.clients = [:] }
            return Array(state.clients.values)
        }
        for client in clients { try? await client.shutdown() }
    }
}
