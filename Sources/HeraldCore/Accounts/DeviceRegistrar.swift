import Foundation
import Logging

/// The rules of device registration, for every ingress (the HTTP API today): a new device gets a new USER_ID and
/// device secret, subject to the operator's registration token, the client's registration rate and the device cap; a
/// device registered again with its owner's credentials gets its new token and is active again.
///
/// A registration without credentials always creates a new USER_ID, also for a token other USER_IDs already have
/// (each keeps reaching the phone). Refusals are ``RegistrationError``s.
///
/// ```swift
/// let registrar = DeviceRegistrar(store: store, clock: clock, limiter: limiter, maximumDevices: 10_000, registrationTokenHash: nil)
/// try registrar.checkRegistrationToken(header)
/// let new = try await registrar.register(.init(platform: .apns, environment: .production, token: hex), client: address, logger: logger)
/// print(new.userID.text, new.secret)   // handed to the device once; the store keeps their hashes
/// ```
public struct DeviceRegistrar: Sendable {
    /// Where a device's notifications go: what a registration says.
    public struct Target: Sendable, Equatable {
        public var platform: Platform
        public var environment: PushEnvironment
        /// The provider's device token (normalised by the ingress); `nil` for a WebSocket-only device.
        public var token: String?
        /// ActivityKit's push-to-start token (lowercase hex); `nil` when the registration carries none.
        public var pushToStartToken: String?
        /// The provider's own data beside the token (Web Push: the subscription's keys), opaque here.
        public var addressData: String?
        /// Whether the distinct tokens one device may name are capped (``EndpointChangeLimiter``; a Web Push endpoint
        /// is a URL Herald connects to), as the provider's registration rules say.
        public var capsDistinctTokens: Bool

        public init(
            platform: Platform, environment: PushEnvironment, token: String?, pushToStartToken: String? = nil,
            addressData: String? = nil, capsDistinctTokens: Bool = false
        ) {
            self.platform = platform
            self.environment = environment
            self.token = token
            self.pushToStartToken = pushToStartToken
            self.addressData = addressData
            self.capsDistinctTokens = capsDistinctTokens
        }
    }

    /// A new device and its credentials, which are not available again.
    public struct NewDevice: Sendable {
        public var device: Device
        public var userID: UserID
        /// 64 lowercase hex characters (256 random bits).
        public var secret: String
    }

    private let store: any HeraldStore
    private let clock: any WallClock
    private let limiter: RegistrationLimiter
    /// `HERALD_MAX_DEVICES`.
    private let maximumDevices: Int?
    /// The SHA-256 of `HERALD_REGISTRATION_TOKEN`, when set (the token itself is not kept).
    private let registrationTokenHash: String?
    /// Distinct Web Push endpoints per device; `nil`: not capped.
    private let endpointLimiter: EndpointChangeLimiter?

    public init(
        store: any HeraldStore, clock: any WallClock, limiter: RegistrationLimiter, maximumDevices: Int?, registrationTokenHash: String?,
        endpointLimiter: EndpointChangeLimiter? = nil
    ) {
        self.store = store
        self.clock = clock
        self.limiter = limiter
        self.maximumDevices = maximumDevices
        self.registrationTokenHash = registrationTokenHash
        self.endpointLimiter = endpointLimiter
    }

    /// Whether a new registration must carry the operator's registration token.
    public var requiresRegistrationToken: Bool { registrationTokenHash != nil }

    /// Nothing when the operator set no registration token or `given` is it; otherwise
    /// ``RegistrationError/registrationTokenRequired`` (none given) or ``RegistrationError/wrongRegistrationToken``.
    public func checkRegistrationToken(_ given: String?) throws(RegistrationError) {
        guard let registrationTokenHash else { return }
        guard let given else { throw .registrationTokenRequired }
        guard Secrets.matches(given, hash: registrationTokenHash) else { throw .wrongRegistrationToken }
    }

    /// Registers a new device for `target`: counted against `client`'s registration rate, refused beyond the device cap.
    /// The registration token is checked before, by ``checkRegistrationToken(_:)``.
    public func register(_ target: Target, client: String, logger: Logger) async throws(RegistrationError) -> NewDevice {
        try limiter.take(client)
        if let maximumDevices {
            if try await StoreUnavailable.during(as: RegistrationError.storeUnavailable, { try await store.deviceCount() }) >= maximumDevices {
                logger.warning("Registration refused: HERALD_MAX_DEVICES reached", metadata: ["maximum": "\(maximumDevices)"])
                throw .deviceLimitReached(maximum: maximumDevices)
            }
        }
        let now = clock.now()
        let userID = UserID.random()
        let secret = Secrets.random256BitHex()
        let device = Device(
            userIDHash: userID.lookupHash, secretHash: Secrets.hash(secret), platform: target.platform,
            environment: target.environment, token: target.token, createdAt: now, updatedAt: now,
            pushToStartToken: target.pushToStartToken, addressData: target.addressData)
        try await StoreUnavailable.during(as: RegistrationError.storeUnavailable) { try await store.insertDevice(device) }
        logger.info("Device registered", metadata: ["device": "\(device.id)", "platform": "\(device.platform.rawValue)"])
        return NewDevice(device: device, userID: userID, secret: secret)
    }

    /// Gives `device` (whose owner authenticated) its new `target` and makes it active again. A push-to-start token is
    /// replaced when the registration carries one and kept when it does not (the app sends it when ActivityKit gives it).
    ///
    /// A re-registration that changes the token or the platform is counted against `client`'s registration rate, as a
    /// new device is (one that repeats the stored token is not: apps re-register at every launch); a Web Push endpoint
    /// is counted against the device's distinct endpoints (``EndpointChangeLimiter``).
    public func reregister(
        _ device: Device, to target: Target, client: String? = nil, logger: Logger
    ) async throws(RegistrationError) -> Device {
        if target.token != device.token || target.platform != device.platform, let client { try limiter.take(client) }
        if target.capsDistinctTokens, let endpoint = target.token, let endpointLimiter {
            try endpointLimiter.take(device.id, endpoint: endpoint)
        }
        var device = device
        device.token = target.token
        device.pushToStartToken = target.pushToStartToken ?? device.pushToStartToken
        device.platform = target.platform
        device.environment = target.environment
        device.addressData = target.addressData
        device.isActive = true
        device.inactiveReason = nil
        device.updatedAt = clock.now()
        let updated = device
        try await StoreUnavailable.during(as: RegistrationError.storeUnavailable) { try await store.updateDevice(updated) }
        logger.info("Device re-registered", metadata: ["device": "\(device.id)"])
        return device
    }

    /// Removes `device` (whose owner authenticated) and what the store keeps of it.
    public func remove(_ device: Device, logger: Logger) async throws(RegistrationError) {
        try await StoreUnavailable.during(as: RegistrationError.storeUnavailable) { try await store.deleteDevice(id: device.id) }
        logger.info("Device removed", metadata: ["device": "\(device.id)"])
    }
}
