import Foundation
import HeraldCore
import HeraldStore
import HeraldTesting
import Logging
import Testing

@Suite("Device registration rules")
struct DeviceRegistrarTests {
    private let logger = Logger(label: "test")
    private let target = DeviceRegistrar.Target(platform: .apns, environment: .sandbox, token: Fixtures.apnsToken(7))

    private func registrar(
        _ store: any HeraldStore, clock: TestClock = TestClock(), perMinute: Int? = nil, maximumDevices: Int? = nil,
        registrationToken: String? = nil
    ) -> DeviceRegistrar {
        DeviceRegistrar(
            store: store, clock: clock, limiter: RegistrationLimiter(perMinute: perMinute, clock: clock),
            maximumDevices: maximumDevices, registrationTokenHash: registrationToken.map(Secrets.hash))
    }

    @Test func aNewDeviceIsStoredUnderItsUserIDsLookupHashWithOnlyTheSecretsHash() async throws {
        let store = InMemoryStore()
        let new = try await registrar(store).register(target, client: "192.0.2.1", logger: logger)
        let stored = try #require(try await store.device(userID: new.userID))
        #expect(stored == new.device)
        #expect(stored.secretHash == Secrets.hash(new.secret))
        #expect(stored.platform == .apns && stored.environment == .sandbox && stored.token == Fixtures.apnsToken(7))
        #expect(new.userID.text.count == 64 && new.secret.count == 64 && new.userID.text != new.secret)
    }

    @Test func theDeviceCapRefusesTheRegistrationBeyondIt() async throws {
        let store = InMemoryStore()
        let registrar = registrar(store, maximumDevices: 2)
        _ = try await registrar.register(target, client: "a", logger: logger)
        _ = try await registrar.register(target, client: "b", logger: logger)
        await #expect(throws: RegistrationError.deviceLimitReached(maximum: 2)) {
            try await registrar.register(target, client: "c", logger: logger)
        }
        #expect(try await store.deviceCount() == 2)
    }

    @Test func theRateLimitCountsPerClientAndRefillsWithTime() async throws {
        let clock = TestClock()
        let registrar = registrar(InMemoryStore(), clock: clock, perMinute: 2)
        _ = try await registrar.register(target, client: "a", logger: logger)
        _ = try await registrar.register(target, client: "a", logger: logger)
        await #expect(throws: RegistrationError.rateLimited(retryAfterSeconds: 30)) {
            try await registrar.register(target, client: "a", logger: logger)
        }
        _ = try await registrar.register(target, client: "b", logger: logger)  // another client has its own bucket
        clock.advance(by: 31)  // one registration a 30 s
        _ = try await registrar.register(target, client: "a", logger: logger)
    }

    @Test func theRegistrationTokenIsRequiredOnlyWhereTheOperatorSetOne() throws {
        let open = registrar(InMemoryStore())
        #expect(!open.requiresRegistrationToken)
        try open.checkRegistrationToken(nil)

        let closed = registrar(InMemoryStore(), registrationToken: "operator-token")
        #expect(closed.requiresRegistrationToken)
        #expect(throws: RegistrationError.registrationTokenRequired) { try closed.checkRegistrationToken(nil) }
        #expect(throws: RegistrationError.wrongRegistrationToken) { try closed.checkRegistrationToken("guess") }
        try closed.checkRegistrationToken("operator-token")
    }

    @Test func reRegistrationGivesTheDeviceItsNewTargetAndRevivesIt() async throws {
        let store = InMemoryStore()
        let clock = TestClock()
        let registrar = registrar(store, clock: clock)
        var device = try await registrar.register(target, client: "a", logger: logger).device
        device.isActive = false
        device.inactiveReason = "Unregistered"
        try await store.updateDevice(device)
        clock.advance(by: 60)

        let fcm = DeviceRegistrar.Target(platform: .fcm, environment: .production, token: "fcm-token")
        let changed = try await registrar.reregister(device, to: fcm, logger: logger)
        #expect(try await store.device(id: device.id) == changed)
        #expect(changed.isActive && changed.inactiveReason == nil)
        #expect(changed.platform == .fcm && changed.token == "fcm-token" && changed.updatedAt == clock.now())
        #expect(changed.userIDHash == device.userIDHash && changed.secretHash == device.secretHash)

        try await registrar.remove(changed, logger: logger)
        #expect(try await store.device(id: device.id) == nil)
    }
}
