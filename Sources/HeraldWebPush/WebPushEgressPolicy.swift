import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where Herald may send Web Push requests. A subscription's endpoint comes from a browser, that is, from anyone, so
/// Herald must not be made to POST into the operator's own network (server-side request forgery):
///
/// - **At registration, at start-up and before every send** (``endpointProblem(_:)``): only `https` endpoints whose
///   host is a known push service (``knownPushServices``: Google's, Mozilla's, Apple's, Microsoft's) on port 443, or a
///   host the operator lists in `HERALD_WEBPUSH_ALLOWED_HOSTS` on a port from 1 to 65,535. Host names are compared
///   without regard to case.
/// - **At send time** (``refusal(host:addresses:)``): Herald resolves the host itself and refuses when any address is
///   private, loopback, link-local, unique-local, CGNAT, multicast, reserved or unspecified, unless a network the
///   operator lists (`127.0.0.0/8`, `10.1.2.3`) contains it. The request then goes to the vetted address, so a second
///   DNS answer cannot point it elsewhere.
///
/// ```swift
/// let policy = try WebPushEgressPolicy(allowed: ["push.example.internal", "10.0.0.0/8"])
/// policy.endpointProblem("https://fcm.googleapis.com/fcm/send/abc")    // nil: accepted
/// policy.refusal(host: "push.example.internal", addresses: [IPAddressBytes("10.1.2.3")!])   // nil: its network is listed
/// ```
public struct WebPushEgressPolicy: Sendable, Equatable {
    /// The push services browsers use, as ntfy lists them: an exact host, or `.suffix` for any host under it.
    public static let knownPushServices = [
        "fcm.googleapis.com", ".push.services.mozilla.com", ".push.apple.com", ".notify.windows.com",
    ]

    /// Host names the operator lists (lowercase).
    public let hosts: Set<String>
    /// Networks the operator lists.
    public let networks: [IPNetworkBytes]

    /// An entry of `HERALD_WEBPUSH_ALLOWED_HOSTS` that is neither a host name, an address nor a network.
    public struct InvalidEntry: Error, Sendable, Equatable, CustomStringConvertible {
        /// The entry as given.
        public var entry: String
        public var description: String { "\"\(entry)\" is not a host name, an IP address or a network (CIDR)" }
    }

    /// The known push services only: what a server without `HERALD_WEBPUSH_ALLOWED_HOSTS` allows.
    public static let knownServicesOnly = WebPushEgressPolicy(hosts: [], networks: [])

    private init(hosts: Set<String>, networks: [IPNetworkBytes]) {
        self.hosts = hosts
        self.networks = networks
    }

    /// - Parameter allowed: host names, addresses and networks (`10.0.0.0/8`, `fd00::/8`).
    /// - Throws: ``InvalidEntry`` for an entry that is none of them.
    public init(allowed: [String] = []) throws(InvalidEntry) {
        var hosts: Set<String> = []
        var networks: [IPNetworkBytes] = []
        for raw in allowed {
            let entry = raw.trimmingCharacters(in: .whitespaces)
            guard !entry.isEmpty else { continue }
            if let network = IPNetworkBytes(entry) {
                networks.append(network)
            } else if entry.contains("/") || entry.contains(":") || !entry.allSatisfy(Self.isHostCharacter) {
                throw InvalidEntry(entry: entry)
            } else {
                hosts.insert(entry.lowercased())
            }
        }
        self.hosts = hosts
        self.networks = networks
    }

    /// Why `endpoint` cannot be a subscription's endpoint; `nil` when it can.
    public func endpointProblem(_ endpoint: String) -> String? {
        guard endpoint.utf8.count <= 2048 else { return "must be at most 2048 characters" }
        guard let url = URL(string: endpoint), url.scheme?.lowercased() == "https" else { return "must be an https:// URL" }
        guard let host = url.host?.lowercased(), !host.isEmpty else { return "must name a host" }
        guard url.user == nil, url.password == nil else { return "must not carry credentials" }
        let port = url.port ?? 443
        if isKnownPushService(host) {
            return port == 443 ? nil : "must use port 443 for a known push service; got \(port)"
        }
        guard hosts.contains(host) || IPAddressBytes(host).map({ address in networks.contains { $0.contains(address) } }) == true
        else {
            return "must be a known push service's (Google, Mozilla, Apple, Microsoft) or a host listed in HERALD_WEBPUSH_ALLOWED_HOSTS; got \(host)"
        }
        return Self.portRange.contains(port) ? nil : "must name a port from 1 to 65535; got \(port)"
    }

    /// The ports an operator-listed host or network may be reached on (a known push service: 443 only).
    public static let portRange = 1...65_535

    /// Whether `host` is one of ``knownPushServices``.
    public func isKnownPushService(_ host: String) -> Bool {
        let host = host.lowercased()
        return Self.knownPushServices.contains { pattern in
            pattern.hasPrefix(".") ? host.hasSuffix(pattern) && host.count > pattern.count : host == pattern
        }
    }

    /// Why Herald must not connect to `host` at `addresses` (what it resolved to); `nil` when it may.
    /// `option` names the setting that lists allowed networks, for the message.
    public func refusal(host: String, addresses: [IPAddressBytes], option: String = "HERALD_WEBPUSH_ALLOWED_HOSTS") -> String? {
        guard !addresses.isEmpty else { return "\(host) resolved to no address" }
        for address in addresses where address.isSpecialPurpose {
            if networks.contains(where: { $0.contains(address) }) { continue }
            return "\(host) resolves to \(address), a private or special-purpose address (list its network in \(option) to allow it)"
        }
        return nil
    }

    private static func isHostCharacter(_ character: Character) -> Bool {
        character.isASCII && (character.isLetter || character.isNumber || character == "-" || character == ".")
    }
}

/// An IPv4 or IPv6 address as its bytes (an IPv4-mapped IPv6 address as the IPv4 one).
public struct IPAddressBytes: Sendable, Hashable, CustomStringConvertible {
    /// 4 or 16 bytes.
    public let bytes: [UInt8]

    /// Parses `192.0.2.1`, `2001:db8::1` or `[2001:db8::1]`.
    public init?(_ text: String) {
        var text = text
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self.init(bytes: withUnsafeBytes(of: &v4) { Array($0) })
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            self.init(bytes: withUnsafeBytes(of: &v6) { Array($0) })
        } else {
            return nil
        }
    }

    /// 4 or 16 bytes; IPv4-mapped IPv6 addresses become IPv4.
    public init(bytes: [UInt8]) {
        let isMapped = bytes.count == 16 && bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff
        self.bytes = isMapped ? Array(bytes[12...]) : bytes
    }

    /// Private (RFC 1918), loopback, link-local, unique-local, CGNAT (RFC 6598), multicast, reserved, broadcast or
    /// unspecified: not a public Internet host.
    public var isSpecialPurpose: Bool {
        Self.specialPurpose.contains { $0.contains(self) }
    }

    private static let specialPurpose: [IPNetworkBytes] = [
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
        "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4", "::/128", "::1/128", "64:ff9b::/96", "fc00::/7",
        "fe80::/10", "ff00::/8",
    ].compactMap { IPNetworkBytes($0) }

    public var description: String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A network: an address and a prefix length (`10.0.0.0/8`); a bare address is a network of one.
public struct IPNetworkBytes: Sendable, Hashable {
    public let address: IPAddressBytes
    public let prefixLength: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard let address = parts.first.flatMap(IPAddressBytes.init) else { return nil }
        let bits = address.bytes.count * 8
        let prefix = parts.count == 2 ? Int(parts[1]) : bits
        guard let prefix, (0...bits).contains(prefix) else { return nil }
        self.address = address
        self.prefixLength = prefix
    }

    /// Whether `address` is in the network (of the same family).
    public func contains(_ other: IPAddressBytes) -> Bool {
        guard other.bytes.count == address.bytes.count else { return false }
        var remaining = prefixLength
        for (mine, theirs) in zip(address.bytes, other.bytes) where remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xff : ~(0xff >> UInt8(remaining))
            if mine & mask != theirs & mask { return false }
            remaining -= 8
        }
        return true
    }
}
