import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@Suite("API token rules")
struct APITokenManagerTests {
    private func deviceInStore() async throws -> (InMemoryStore, Device) {
        let store = InMemoryStore()
        let device = Fixtures.device().device
        try await store.insertDevice(device)
        return (store, device)
    }

    @Test func anIssuedTokenAuthenticatesItsDeviceAndRecordsTheUse() async throws {
        let (store, device) = try await deviceInStore()
        let clock = TestClock()
        let tokens = APITokenManager(store: store, clock: clock)
        let issued = try await tokens.create(name: "  Home Assistant ", for: device)
        #expect(issued.token.name == "Home Assistant")
        #expect(APITokenManager.isWellFormed(issued.secret))
        #expect(try await store.apiToken(tokenHash: Secrets.hash(issued.secret))?.id == issued.token.id)

        clock.advance(by: 5)
        let (token, owner) = try await tokens.authenticate(bearer: issued.secret)
        #expect(owner == device && token.lastUsedAt == clock.now())
    }

    @Test func aUseIsWrittenOncePerMinuteOfLastUse() async throws {
        let (store, device) = try await deviceInStore()
        let clock = TestClock()
        let tokens = APITokenManager(store: store, clock: clock)
        let issued = try await tokens.create(name: "activities", for: device)
        func stored() async throws -> Date? { try await store.apiToken(tokenHash: Secrets.hash(issued.secret))?.lastUsedAt }
        let first = clock.now()
        #expect(try await tokens.authenticate(bearer: issued.secret).token.lastUsedAt == first)
        #expect(try await stored() == first)
        // Within the minute: answered with the use written before, nothing written.
        clock.advance(by: 59.999)
        #expect(try await tokens.authenticate(bearer: issued.secret).token.lastUsedAt == first)
        #expect(try await stored() == first)
        // A minute after the use written: written again.
        clock.advance(by: 0.001)
        #expect(try await tokens.authenticate(bearer: issued.secret).token.lastUsedAt == clock.now())
        #expect(try await stored() == clock.now())
        // A use written in the future (a clock set back) is replaced by the next use.
        #expect(APITokenManager.isUseWorthRecording(first, lastRecorded: first.addingTimeInterval(1)))
        #expect(!APITokenManager.isUseWorthRecording(first, lastRecorded: first))
        #expect(APITokenManager.isUseWorthRecording(first, lastRecorded: nil))
    }

    @Test func refusalsAreTypedDomainErrors() async throws {
        let (store, device) = try await deviceInStore()
        let tokens = APITokenManager(store: store)
        let issued = try await tokens.create(name: "ha", for: device)

        await #expect(throws: APITokenError.nameTaken("ha")) { try await tokens.create(name: "ha", for: device) }
        await #expect(throws: APITokenError.invalidName("name must not be empty.")) { try await tokens.create(name: " ", for: device) }
        await #expect(throws: APITokenError.notFound) { try await tokens.revoke("nothing", of: device) }
        await #expect(throws: APITokenError.tokenRequired) { try await tokens.authenticate(bearer: nil) }
        await #expect(throws: APITokenError.invalidToken) { try await tokens.authenticate(bearer: "hrd_short") }
        await #expect(throws: APITokenError.invalidToken) {
            try await tokens.authenticate(bearer: APITokenManager.prefix + Secrets.random256BitHex())
        }

        #expect(try await tokens.revoke("ha", of: device).id == issued.token.id)
        await #expect(throws: APITokenError.revokedToken) { try await tokens.authenticate(bearer: issued.secret) }
        #expect(try await tokens.activeTokens(of: device).isEmpty)
    }

    @Test func aDeviceHoldsAtMostTheMaximumOfActiveTokens() async throws {
        let (store, device) = try await deviceInStore()
        let tokens = APITokenManager(store: store)
        for index in 0..<APITokenManager.maximumActivePerDevice { _ = try await tokens.create(name: "t\(index)", for: device) }
        await #expect(throws: APITokenError.tooManyTokens(maximum: APITokenManager.maximumActivePerDevice)) {
            try await tokens.create(name: "one more", for: device)
        }
    }
}
