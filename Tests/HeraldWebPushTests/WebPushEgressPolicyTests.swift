import Foundation
import Testing

@testable import HeraldWebPush

/// The registration and send-time egress rules, as pure functions (no socket, no DNS).
@Suite("Web Push egress policy")
struct WebPushEgressPolicyTests {
    @Test func knownPushServicesAreAcceptedAndLookAlikesAreNot() throws {
        let policy = WebPushEgressPolicy.knownServicesOnly
        #expect(policy.endpointProblem("https://fcm.googleapis.com/fcm/send/abc") == nil)
        #expect(policy.endpointProblem("https://updates.push.services.mozilla.com/wpush/v2/x") == nil)
        #expect(policy.endpointProblem("https://web.push.apple.com/x") == nil)
        #expect(policy.endpointProblem("https://db5p.notify.windows.com/w/?token=x") == nil)
        #expect(policy.endpointProblem("https://push.apple.com/x") != nil)  // `.push.apple.com` needs a subdomain
        #expect(policy.endpointProblem("https://web.push.apple.com.evil.example/x") != nil)
        #expect(policy.endpointProblem("https://evilfcm.googleapis.com/x") != nil)
        #expect(policy.endpointProblem("http://fcm.googleapis.com/x") == "must be an https:// URL")
        #expect(policy.endpointProblem("https://user:pw@fcm.googleapis.com/x") == "must not carry credentials")
        #expect(policy.endpointProblem("https://127.0.0.1/push/x") != nil)
    }

    @Test func listedHostsAndNetworksAreAcceptedAtRegistration() throws {
        let policy = try WebPushEgressPolicy(allowed: ["push.example.internal", "10.0.0.0/8", " "])
        #expect(policy.endpointProblem("https://PUSH.example.internal:8443/x") == nil)
        #expect(policy.endpointProblem("https://10.1.2.3/x") == nil)
        #expect(policy.endpointProblem("https://11.1.2.3/x") != nil)
        #expect(throws: WebPushEgressPolicy.InvalidEntry(entry: "not a host/x")) { try WebPushEgressPolicy(allowed: ["not a host/x"]) }
        #expect(throws: WebPushEgressPolicy.InvalidEntry(entry: "10.0.0.0/33")) { try WebPushEgressPolicy(allowed: ["10.0.0.0/33"]) }
    }

    @Test(arguments: [
        "0.0.0.0", "10.9.8.7", "100.64.0.1", "127.0.0.1", "169.254.169.254", "172.16.0.1", "172.31.255.255", "192.168.1.1",
        "224.0.0.1", "240.0.0.1", "255.255.255.255", "::", "::1", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1",
        "::ffff:127.0.0.1", "::ffff:10.0.0.1",
    ])
    func specialPurposeAddressesAreRefused(address: String) throws {
        let parsed = try #require(IPAddressBytes(address))
        #expect(parsed.isSpecialPurpose)
        #expect(WebPushEgressPolicy.knownServicesOnly.refusal(host: "fcm.googleapis.com", addresses: [parsed]) != nil)
    }

    @Test(arguments: ["142.250.185.74", "172.32.0.1", "100.128.0.1", "2a00:1450:4001:82a::200a", "8.8.8.8"])
    func publicAddressesAreReached(address: String) throws {
        let parsed = try #require(IPAddressBytes(address))
        #expect(!parsed.isSpecialPurpose)
        #expect(WebPushEgressPolicy.knownServicesOnly.refusal(host: "fcm.googleapis.com", addresses: [parsed]) == nil)
    }

    @Test func oneSpecialAddressAmongPublicOnesIsEnoughToRefuseAndAListedNetworkAllowsIt() throws {
        let addresses = [try #require(IPAddressBytes("142.250.185.74")), try #require(IPAddressBytes("10.0.0.5"))]
        let refusal = try #require(WebPushEgressPolicy.knownServicesOnly.refusal(host: "push.example", addresses: addresses))
        #expect(refusal.contains("10.0.0.5"))
        // Listing the host alone does not make its private addresses reachable; listing the network does.
        #expect(try WebPushEgressPolicy(allowed: ["push.example"]).refusal(host: "push.example", addresses: addresses) != nil)
        #expect(try WebPushEgressPolicy(allowed: ["10.0.0.0/24"]).refusal(host: "push.example", addresses: addresses) == nil)
        #expect(WebPushEgressPolicy.knownServicesOnly.refusal(host: "push.example", addresses: []) != nil)
    }

    @Test func addressesPrintAsTheyAreWritten() throws {
        #expect(try #require(IPAddressBytes("::ffff:10.0.0.1")).description == "10.0.0.1")
        #expect(try #require(IPAddressBytes("[2001:db8::1]")).description == "2001:db8::1")
        #expect(IPAddressBytes("localhost") == nil)
    }
}

/// Ports: 443 only for the known push services, 1–65,535 for the operator's hosts and networks.
@Suite("Web Push egress policy: ports")
struct WebPushEgressPortTests {
    @Test(arguments: [
        "https://fcm.googleapis.com:65536/x", "https://fcm.googleapis.com:99999/x", "https://fcm.googleapis.com:8443/x",
        "https://web.push.apple.com:1/x", "https://updates.push.services.mozilla.com:444/x",
    ])
    func aKnownPushServiceOnAnyPortBut443IsRefused(endpoint: String) {
        let problem = WebPushEgressPolicy.knownServicesOnly.endpointProblem(endpoint)
        #expect(problem?.contains("port 443") == true, "\(problem ?? "accepted")")
    }

    @Test func aKnownPushServiceOn443IsAccepted() {
        #expect(WebPushEgressPolicy.knownServicesOnly.endpointProblem("https://fcm.googleapis.com:443/x") == nil)
        #expect(WebPushEgressPolicy.knownServicesOnly.endpointProblem("https://FCM.googleapis.com/x") == nil)
    }

    @Test func listedHostsAndNetworksTakeAnyPortFrom1To65535() throws {
        let policy = try WebPushEgressPolicy(allowed: ["push.example.internal", "10.0.0.0/8"])
        #expect(policy.endpointProblem("https://push.example.internal:65535/x") == nil)
        #expect(policy.endpointProblem("https://10.1.2.3:1/x") == nil)
        for endpoint in ["https://push.example.internal:65536/x", "https://10.1.2.3:0/x", "https://10.1.2.3:4294967296/x"] {
            #expect(policy.endpointProblem(endpoint) != nil, "\(endpoint)")
        }
    }
}
