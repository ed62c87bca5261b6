import Foundation
import HeraldTesting
import NIOCore
import Testing

@testable import HeraldServer

/// The bookkeeping behind the connection caps and the subscribe limit, without sockets.
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

    @Test func webSocketSlotsStopAtTheirLimitAndComeBack() {
        let connections = OpenConnections()
        #expect(connections.openedWebSocket(limit: 2))
        #expect(connections.openedWebSocket(limit: 2))
        #expect(!connections.openedWebSocket(limit: 2))
        connections.closedWebSocket()
        #expect(connections.openedWebSocket(limit: 2))
    }

    @Test func aTenthOfTheConnectionsIsKeptForHTTPUnlessConfigured() {
        var limits = ConnectionLimits()
        #expect(limits.maximumWebSockets == 9_000)
        limits.maximumConnections = 5
        #expect(limits.maximumWebSockets == 5)  // a tenth of 5 is 0
        limits.connectionsReservedForHTTP = 2
        #expect(limits.maximumWebSockets == 3)
    }

    @Test func aSocketSubscribesFiveTimesAtOnceThenSixAMinute() {
        let clock = TestClock()
        var budget = SubscribeBudget(perMinute: 6)
        func take() -> Bool { budget.take(at: clock.now()) }
        for attempt in 1...SubscribeBudget.burst { #expect(take(), "attempt \(attempt)") }
        #expect(!take())
        clock.advance(by: 9)
        #expect(!take())
        clock.advance(by: 1)
        #expect(take())
        #expect(!take())
        clock.advance(by: 3_600)  // refills to the burst, no further
        for _ in 1...SubscribeBudget.burst { #expect(take()) }
        #expect(!take())

        var unlimited = SubscribeBudget(perMinute: 0)
        var allowed = 0
        for _ in 0..<100 where unlimited.take(at: clock.now()) { allowed += 1 }
        #expect(allowed == 100)
    }
}
