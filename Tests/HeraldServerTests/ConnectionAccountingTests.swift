import Foundation
import HeraldTransport
import NIOCore
import Testing

@testable import HeraldServer

/// Herald's rule for the connection caps (which address a connection counts under), without sockets. The counting
/// itself, and the subscribe budget, are HeraldTransportTests'.
@Suite("Connection accounting")
struct ConnectionAccountingTests {
    @Test func ipv6ClientsAreCountedByTheirSixtyFourAndTrustedProxiesNotAtAll() throws {
        let connections = OpenConnections(trustedProxies: [try #require(IPNetwork("10.0.0.0/8"))])
        let first = try connections.addressKey(of: SocketAddress(ipAddress: "2001:db8:1:2::1", port: 1))
        let second = try connections.addressKey(of: SocketAddress(ipAddress: "2001:db8:1:2:ffff::9", port: 2))
        let otherSixtyFour = try connections.addressKey(of: SocketAddress(ipAddress: "2001:db8:1:3::1", port: 1))
        #expect(first == "2001:db8:1:2::/64")
        #expect(first == second)
        #expect(otherSixtyFour != first)
        #expect(try connections.addressKey(of: SocketAddress(ipAddress: "::ffff:192.0.2.7", port: 1)) == "192.0.2.7")
        #expect(try connections.addressKey(of: SocketAddress(ipAddress: "10.1.2.3", port: 1)) == nil)
        #expect(connections.addressKey(of: nil) == nil)

        let key = try #require(first)
        #expect(connections.opened(address: key, limit: 2))
        #expect(connections.opened(address: key, limit: 2))
        #expect(!connections.opened(address: key, limit: 2))
        #expect(connections.openConnections(address: key) == 2)  // the refused one is not counted
        #expect(connections.opened(address: try #require(otherSixtyFour), limit: 2))
        connections.closed(address: key)
        #expect(connections.opened(address: key, limit: 2))
        #expect(connections.opened(address: key, limit: 0))  // 0: no limit
        for _ in 0..<3 { connections.closed(address: key) }
        #expect(connections.openConnections(address: key) == 0)
    }
}
