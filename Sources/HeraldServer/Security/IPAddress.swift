import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address as its bytes. IPv4-mapped IPv6 addresses (`::ffff:192.0.2.1`) are kept as the IPv4
/// address, so that one client is one address whichever socket family it came in on.
struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 bytes (IPv6).
    let bytes: [UInt8]

    private init(normalising bytes: [UInt8]) {
        let isV4Mapped = bytes.count == 16 && bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff
        self.bytes = isV4Mapped ? Array(bytes[12..<16]) : bytes
    }

    /// Parses `192.0.2.1`, `2001:db8::1`, and the forms a forwarding header may carry: `192.0.2.1:4711`,
    /// `[2001:db8::1]`, `[2001:db8::1]:4711`, with surrounding spaces or double quotes.
    init?(_ text: some StringProtocol) {
        var text = Substring(text).trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 { text = String(text.dropFirst().dropLast()) }
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            let rest = text[text.index(after: close)...]
            guard rest.isEmpty || rest.hasPrefix(":") else { return nil }
            text = String(text[text.index(after: text.startIndex)..<close])
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            text = String(text[..<colon])  // IPv4 with a port
        }
        if let v4 = Self.parse(text, family: AF_INET, size: 4) {
            self.init(normalising: v4)
        } else if let v6 = Self.parse(text, family: AF_INET6, size: 16) {
            self.init(normalising: v6)
        } else {
            return nil
        }
    }

    /// The address of a socket peer, read from its `sockaddr` (no text in between); `nil` for a Unix domain socket.
    /// `sin_addr` starts at byte 4 of a `sockaddr_in` and `sin6_addr` at byte 8 of a `sockaddr_in6`, on Linux and
    /// on the BSDs alike.
    init?(_ address: SocketAddress) {
        switch address {
        case .v4(let v4):
            self.init(normalising: withUnsafeBytes(of: v4.address) { Array($0[4..<8]) })
        case .v6(let v6):
            self.init(normalising: withUnsafeBytes(of: v6.address) { Array($0[8..<24]) })
        case .unixDomainSocket:
            return nil
        }
    }

    var isIPv4: Bool { bytes.count == 4 }

    /// What per-client limits count under: the IPv4 address, or the /64 prefix of an IPv6 address (one subscriber
    /// usually holds a whole /64).
    var clientKey: String {
        guard !isIPv4 else { return description }
        return Self.prefixKey(bytes, bits: 64)
    }

    /// The network a client key belongs to, for limits that must also hold for an attacker spread over many
    /// clients: the /48 of an IPv6 /64 key (what one site is usually given, 65,536 /64s); `nil` for an IPv4 address
    /// and for a key that is not an IPv6 /64 (`unknown`).
    static func widerKey(ofClientKey key: String) -> String? {
        guard key.hasSuffix("::/64"), let network = IPNetwork(key), !network.address.isIPv4 else { return nil }
        return prefixKey(network.address.bytes, bits: 48)
    }

    /// `2001:db8:1::/48`: the first `bits` (a multiple of 16) of an IPv6 address in groups, then `::/bits`.
    private static func prefixKey(_ bytes: [UInt8], bits: Int) -> String {
        let groups = stride(from: 0, to: bits / 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/\(bits)"
    }

    var description: String {
        if isIPv4 { return bytes.map(String.init).joined(separator: ".") }
        return stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            .joined(separator: ":")
    }

    private static func parse(_ text: String, family: Int32, size: Int) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 16)
        let parsed = text.withCString { string in buffer.withUnsafeMutableBytes { inet_pton(family, string, $0.baseAddress) } }
        return parsed == 1 ? Array(buffer[0..<size]) : nil
    }
}

/// An address range in CIDR notation (`10.0.0.0/8`, `fd00::/8`), or one address (`192.0.2.7`, `::1`).
struct IPNetwork: Hashable, Sendable, CustomStringConvertible {
    let address: IPAddress
    let prefixLength: Int

    init?(_ text: some StringProtocol) {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = IPAddress(parts[0]) else { return nil }
        let writtenAsIPv6 = parts[0].contains(":")
        if parts.count == 2 {
            guard let length = Int(parts[1]), (0...(writtenAsIPv6 ? 128 : 32)).contains(length) else { return nil }
            // An IPv4-mapped range (`::ffff:10.0.0.0/104`) was normalised to IPv4 with its address.
            prefixLength = address.isIPv4 && writtenAsIPv6 ? max(0, length - 96) : length
        } else {
            prefixLength = address.bytes.count * 8
        }
        self.address = address
    }

    func contains(_ candidate: IPAddress) -> Bool {
        guard candidate.bytes.count == address.bytes.count else { return false }
        var remaining = prefixLength
        for (mine, theirs) in zip(address.bytes, candidate.bytes) where remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xff : ~(0xff >> UInt8(remaining))
            guard mine & mask == theirs & mask else { return false }
            remaining -= 8
        }
        return true
    }

    var description: String { "\(address)/\(prefixLength)" }
}
