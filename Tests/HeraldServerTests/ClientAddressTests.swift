import HTTPTypes
import Hummingbird
import NIOCore
import Testing

@testable import HeraldServer

/// The client-address rule (`HERALD_TRUSTED_PROXIES`, `HERALD_CLIENT_ADDRESS_HEADER`) and address parsing.
@Suite("Client addresses")
struct ClientAddressTests {
    @Test(arguments: [
        ("192.0.2.1", "192.0.2.1"), (" 192.0.2.1:4711 ", "192.0.2.1"), ("\"192.0.2.1\"", "192.0.2.1"),
        ("2001:db8::1", "2001:db8:0:0:0:0:0:1"), ("[2001:db8::1]:4711", "2001:db8:0:0:0:0:0:1"), ("[::1]", "0:0:0:0:0:0:0:1"),
        ("::ffff:192.0.2.1", "192.0.2.1"),
    ])
    func addressesParseInTheFormsHeadersCarry(text: String, expected: String) throws {
        #expect(try #require(IPAddress(text)).description == expected)
    }

    @Test(arguments: [
        ("192.0.2.1", "192.0.2.1"), ("2001:db8::1", "2001:db8:0:0:0:0:0:1"), ("::ffff:192.0.2.1", "192.0.2.1"),
        ("::1", "0:0:0:0:0:0:0:1"),
    ])
    func socketPeersAreReadFromTheirAddressBytes(peer: String, expected: String) throws {
        let address = try #require(IPAddress(try SocketAddress(ipAddress: peer, port: 4711)))
        #expect(address.description == expected)
        #expect(address == IPAddress(peer))
    }

    @Test func aUnixDomainSocketPeerHasNoAddress() throws {
        #expect(IPAddress(try SocketAddress(unixDomainSocketPath: "/tmp/herald.sock")) == nil)
    }

    @Test(arguments: ["", "unknown", "192.0.2", "192.0.2.1.5", "fe80::1%eth0", "[2001:db8::1]x", "_hidden", "2001:db8::1::2"])
    func otherTextIsNotAnAddress(text: String) {
        #expect(IPAddress(text) == nil)
    }

    @Test func networksMatchTheirPrefixOnly() throws {
        let private10 = try #require(IPNetwork("10.0.0.0/8"))
        #expect(private10.contains(try #require(IPAddress("10.200.3.4"))))
        #expect(!private10.contains(try #require(IPAddress("11.0.0.1"))))
        #expect(!private10.contains(try #require(IPAddress("::a00:1"))))  // not the same family
        let odd = try #require(IPNetwork("192.0.2.128/25"))
        #expect(odd.contains(try #require(IPAddress("192.0.2.200"))))
        #expect(!odd.contains(try #require(IPAddress("192.0.2.127"))))
        let v6 = try #require(IPNetwork("fd00::/8"))
        #expect(v6.contains(try #require(IPAddress("fd12:3456::1"))))
        #expect(!v6.contains(try #require(IPAddress("fe80::1"))))
        let mapped = try #require(IPNetwork("::ffff:10.0.0.0/104"))
        #expect(mapped.contains(try #require(IPAddress("10.1.2.3"))))
        #expect(try #require(IPNetwork("0.0.0.0/0")).contains(try #require(IPAddress("203.0.113.9"))))
        for invalid in ["10.0.0.0/33", "fd00::/129", "10.0.0.0/", "10.0.0.0/8/8", "example.org", "/8"] {
            #expect(IPNetwork(invalid) == nil, "\(invalid)")
        }
    }

    @Test func ipv6ClientsAreKeyedByTheirSlash64() throws {
        #expect(try #require(IPAddress("2001:db8:1:2:aaaa::1")).clientKey == "2001:db8:1:2::/64")
        #expect(try #require(IPAddress("203.0.113.9")).clientKey == "203.0.113.9")
    }

    @Test func theClientIsTheRightmostEntryThatIsNotATrustedProxy() throws {
        let resolver = ClientAddressResolver(
            trustedProxies: [try #require(IPNetwork("10.0.0.0/8")), try #require(IPNetwork("::1"))],
            header: try #require(HTTPField.Name("X-Forwarded-For")))
        func client(_ peer: String, _ lines: [String]) throws -> String? {
            var fields = HTTPFields()
            for line in lines { fields.append(HTTPField(name: resolver.header, value: line)) }
            return resolver.clientAddress(headers: fields, peer: try SocketAddress(ipAddress: peer, port: 4711))?.description
        }
        #expect(try client("203.0.113.9", ["198.51.100.1"]) == "203.0.113.9")  // untrusted peer: the header is ignored
        #expect(try client("10.0.0.2", []) == "10.0.0.2")  // a trusted proxy that sent no header is the client
        #expect(try client("10.0.0.2", ["198.51.100.1, 203.0.113.9"]) == "203.0.113.9")
        #expect(try client("10.0.0.2", ["198.51.100.1, 203.0.113.9, 10.0.0.7"]) == "203.0.113.9")  // a chain of proxies
        #expect(try client("10.0.0.2", ["198.51.100.1", "203.0.113.9, 10.0.0.7"]) == "203.0.113.9")  // several lines
        #expect(try client("::1", ["[2001:db8::5]:1234"]) == "2001:db8:0:0:0:0:0:5")
        #expect(try client("10.0.0.2", ["198.51.100.1, garbage, 10.0.0.7"]) == "10.0.0.7")  // the hop that passed it on
        #expect(try client("10.0.0.2", ["10.0.0.9, 10.0.0.7"]) == "10.0.0.9")  // only proxies: the leftmost
    }
}
