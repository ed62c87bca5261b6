import HeraldTransport
import NIOCore
import Testing

/// The bookkeeping behind the connection caps, without sockets.
@Suite("Open connections")
struct OpenConnectionsTests {
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

    @Test func connectionsCountPastTheLimitUntilTheyCloseAndAddressesOnlyUpToIt() throws {
        let connections = OpenConnections(addressKey: { $0 == nil ? nil : "peer" })
        #expect(connections.opened(limit: 1))
        #expect(!connections.opened(limit: 1))  // counted all the same until it closes
        connections.closed()
        #expect(!connections.opened(limit: 1))
        connections.closed()
        connections.closed()
        #expect(connections.opened(limit: 1))
        #expect(try connections.addressKey(of: SocketAddress(ipAddress: "192.0.2.1", port: 1)) == "peer")
        #expect(connections.addressKey(of: nil) == nil)
    }
}
