import Foundation
import HTTPTypes
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldServer

/// Issue 29, item 7: the failed-credential tracker counts IPv6 clients by /64 and by /48, and cannot be made to
/// forget a lock-out by failures from many other addresses.
@Suite("Credential throttle by prefix")
struct AuthFailureAggregationTests {
    /// The /64 key of `2001:db8:<site>:<subnet>::1`.
    static func client(site: Int, subnet: Int) -> String {
        IPAddress("2001:db8:\(String(site, radix: 16)):\(String(subnet, radix: 16))::1")!.clientKey
    }

    static func isLockedOut(_ limiter: AuthFailureLimiter, _ client: String) -> Bool {
        do {
            try limiter.checkAllowed(client, credential: .userID(UserID.random()))
            return false
        } catch {
            return true
        }
    }

    @Test func keysAreTheSixtyFourAndItsFortyEight() {
        #expect(Self.client(site: 0xab, subnet: 0xcd) == "2001:db8:ab:cd::/64")
        #expect(IPAddress.widerKey(ofClientKey: "2001:db8:ab:cd::/64") == "2001:db8:ab::/48")
        #expect(IPAddress.widerKey(ofClientKey: "192.0.2.1") == nil)
        #expect(IPAddress.widerKey(ofClientKey: "unknown") == nil)
    }

    /// An attacker with one failure on each of many /64s of a /48 is throttled once the /48 has had its 100; the
    /// next /64 of that /48 is refused, another /48 is not.
    @Test func guessesSpreadOverTheSixtyFoursOfOneFortyEightLockTheFortyEightOut() {
        let clock = TestClock()
        let limiter = AuthFailureLimiter(clock: clock)
        for subnet in 0..<AuthFailureLimiter.maximumFailuresPerWiderPrefix {
            let client = Self.client(site: 1, subnet: subnet)
            #expect(!Self.isLockedOut(limiter, client), "subnet \(subnet)")
            limiter.recordFailure(client)
        }
        #expect(Self.isLockedOut(limiter, Self.client(site: 1, subnet: 0xffff)))
        #expect(!Self.isLockedOut(limiter, Self.client(site: 2, subnet: 0)))
        // A credential seen to authenticate still passes, as for a /64's lock-out.
        let known = CredentialFingerprint.userID(UserID.random())
        limiter.remember(known)
        #expect(throws: Never.self) { try limiter.checkAllowed(Self.client(site: 1, subnet: 7), credential: known) }
        clock.advance(by: AuthFailureLimiter.window)
        #expect(!Self.isLockedOut(limiter, Self.client(site: 1, subnet: 0xffff)))
    }

    /// 12,000 other clients with one failure each (more than the tracker keeps) do not lift a lock-out.
    @Test func failuresFromTwelveThousandOtherAddressesDoNotFlushALockOut() {
        let clock = TestClock()
        let limiter = AuthFailureLimiter(clock: clock)
        let attacker = Self.client(site: 0xa, subnet: 1)
        for _ in 0..<AuthFailureLimiter.maximumFailures { limiter.recordFailure(attacker) }
        #expect(Self.isLockedOut(limiter, attacker))
        let ipv4 = "203.0.113.77"
        for _ in 0..<AuthFailureLimiter.maximumFailures { limiter.recordFailure(ipv4) }
        for other in 0..<12_000 {
            clock.advance(by: 0.001)
            limiter.recordFailure("198.\(18 + other / 65_536).\(other / 256 % 256).\(other % 256)")
        }
        #expect(Self.isLockedOut(limiter, attacker))
        #expect(Self.isLockedOut(limiter, ipv4))
    }
}
