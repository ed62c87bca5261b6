import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Decides which client a request comes from, for every per-client limit (failed credential checks, registrations).
///
/// Without trusted proxies the client is the socket peer. When the peer is one of `trustedProxies`, the client is
/// the rightmost address in `header` (`X-Forwarded-For` by default; every line of it, in order) that is not itself a
/// trusted proxy: each proxy appends the address it saw, so everything to the left of that one could have been
/// written by the client. An entry that is not an IP address stops the walk, and the proxy that passed it on counts
/// as the client. IPv6 clients are counted by their /64 (``IPAddress/clientKey``).
///
/// ```swift
/// let resolver = ClientAddressResolver(trustedProxies: [IPNetwork("10.0.0.0/8")!], header: "X-Forwarded-For")
/// let key = resolver.clientKey(of: request, context: context)   // "203.0.113.9" or "2001:db8:1:2::/64"
/// ```
struct ClientAddressResolver: Sendable {
    let trustedProxies: [IPNetwork]
    let header: HTTPField.Name

    init(trustedProxies: [IPNetwork] = [], header: HTTPField.Name = ClientAddressResolver.defaultHeader) {
        self.trustedProxies = trustedProxies
        self.header = header
    }

    static let defaultHeader = HTTPField.Name("X-Forwarded-For")!

    func isTrusted(_ address: IPAddress) -> Bool {
        trustedProxies.contains { $0.contains(address) }
    }

    /// The client's address from a request's header fields and its socket peer; `nil` when the peer is not an IP
    /// socket.
    func clientAddress(headers: HTTPFields, peer: SocketAddress?) -> IPAddress? {
        guard let peer = peer.flatMap(IPAddress.init) else { return nil }
        guard isTrusted(peer) else { return peer }
        var nearest = peer
        let entries = headers[values: header].flatMap { $0.split(separator: ",") }
        for entry in entries.reversed() {
            guard let address = IPAddress(entry) else { return nearest }
            guard isTrusted(address) else { return address }
            nearest = address
        }
        return nearest
    }

    /// Whether the client reached Herald over TLS: Herald itself speaks plain HTTP, so only a trusted proxy that
    /// terminated TLS can say so, in `X-Forwarded-Proto` (its last entry, the one the nearest proxy wrote) as `https`.
    /// The dashboard's cookie is `Secure` then.
    func isForwardedOverTLS(_ request: Request, peer: SocketAddress?) -> Bool {
        guard let peer = peer.flatMap(IPAddress.init), isTrusted(peer) else { return false }
        let entries = request.headers[values: Self.forwardedProtoHeader].flatMap { $0.split(separator: ",") }
        return entries.last?.trimmingCharacters(in: .whitespaces).lowercased() == "https"
    }

    static let forwardedProtoHeader = HTTPField.Name("X-Forwarded-Proto")!

    /// What per-client limits count under: ``IPAddress/clientKey`` of the client's address, `unknown` without one.
    func clientKey(of request: Request, context: some RemoteAddressRequestContext) -> String {
        clientKey(headers: request.headers, peer: context.remoteAddress)
    }

    /// ``clientKey(of:context:)`` from a request's header fields and its socket peer.
    func clientKey(headers: HTTPFields, peer: SocketAddress?) -> String {
        clientAddress(headers: headers, peer: peer)?.clientKey ?? "unknown"
    }
}

extension ClientAddressResolver {
    /// The resolver `HERALD_TRUSTED_PROXIES` and `HERALD_CLIENT_ADDRESS_HEADER` describe; a `ConfigurationError`
    /// naming the option when one of them is not valid.
    init(_ configuration: HeraldConfiguration) throws {
        let networks = try configuration.trustedProxies.map { text in
            guard let network = IPNetwork(text) else {
                throw ConfigurationError("HERALD_TRUSTED_PROXIES: \"\(text)\" is not an IP address or CIDR range (such as 10.0.0.0/8 or fd00::/8)")
            }
            return network
        }
        guard let header = HTTPField.Name(configuration.clientAddressHeader) else {
            throw ConfigurationError("HERALD_CLIENT_ADDRESS_HEADER: \"\(configuration.clientAddressHeader)\" is not an HTTP header name")
        }
        self.init(trustedProxies: networks, header: header)
    }
}
