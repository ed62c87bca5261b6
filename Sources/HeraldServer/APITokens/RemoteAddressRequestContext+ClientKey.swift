import Hummingbird
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension RemoteAddressRequestContext {
    /// What the limiter counts failures under: the IPv4 address, or the /64 prefix of an IPv6 address
    /// (one subscriber usually holds a whole /64). IPv4-mapped IPv6 addresses count as their IPv4 address.
    var clientKey: String {
        guard let address = remoteAddress else { return "unknown" }
        if case .v6(let v6) = address {
            let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
            let isV4Mapped = bytes.count == 16 && bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff
            if bytes.count == 16, !isV4Mapped {
                let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
                return groups.joined(separator: ":") + "::/64"
            }
            if isV4Mapped { return bytes[12..<16].map { String($0) }.joined(separator: ".") }
        }
        return address.ipAddress ?? "\(address)"
    }
}
