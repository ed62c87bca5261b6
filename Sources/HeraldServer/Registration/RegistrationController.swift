import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import Logging

/// Device registration: `POST /api/push/register` (new device or new token), `DELETE /api/push/register` (remove).
///
/// A registration without credentials always creates a new USER_ID, also for a token other USER_IDs already have
/// (each keeps reaching the phone); it needs the registration token when the operator set one, and counts against
/// the client's registration rate limit and the device cap. A re-registration with a USER_ID's own credentials
/// changes that USER_ID's device only.
struct RegistrationController<Context: RemoteAddressRequestContext>: Sendable {
    /// The header a registration token travels in.
    static var registrationTokenHeader: HTTPField.Name { HTTPField.Name("X-Herald-Registration-Token")! }

    let store: any HeraldStore
    let directory: DeviceDirectory
    let credentials: CredentialGuard
    let registrations: RegistrationLimiter
    /// `HERALD_MAX_DEVICES`.
    let maximumDevices: Int?
    /// The SHA-256 of `HERALD_REGISTRATION_TOKEN`, when set (the token itself is not kept).
    let registrationTokenHash: String?
    let clock: any WallClock
    let bodyLimit: Int
    /// A device registered again (new token, or revived): its pending notifications are delivered at once.
    let onDeviceChanged: @Sendable (Device.ID) async -> Void

    func addRoutes(to group: RouterGroup<Context>) {
        group.post("register", use: register)
        group.delete("register", use: unregister)
    }

    @Sendable func register(_ request: Request, context: Context) async throws -> Response {
        let body = try await JSONBody.object(of: request, limit: bodyLimit)
        let registration = try RegisterRequest(body, basic: Credentials.basic(request))
        let now = clock.now()
        if let owner = registration.owner {
            var device = try await credentials.check(.owner(userID: owner.userID, secret: owner.secret), of: request, context: context) {
                try await directory.owner(userID: owner.userID, secret: owner.secret)
            }
            device.token = registration.token
            device.platform = registration.platform
            device.environment = registration.environment
            device.isActive = true
            device.inactiveReason = nil
            device.updatedAt = now
            try await storeCall { try await store.updateDevice(device) }
            await onDeviceChanged(device.id)
            context.logger.info("Device re-registered", metadata: ["device": "\(device.id)"])
            return JSONResponse.make(
                status: .ok, body: ["user_id": .string(owner.userID.lowercased()), "device_secret": .string(owner.secret)])
        }
        try await checkRegistrationToken(request, context: context)
        try registrations.take(credentials.addresses.clientKey(of: request, context: context))
        if let maximumDevices, try await storeCall({ try await store.deviceCount() }) >= maximumDevices {
            context.logger.warning("Registration refused: HERALD_MAX_DEVICES reached", metadata: ["maximum": "\(maximumDevices)"])
            throw APIError.deviceLimitReached
        }
        let userID = Secrets.random256BitHex()
        let secret = Secrets.random256BitHex()
        let device = Device(
            userIDHash: Secrets.hash(userID), secretHash: Secrets.hash(secret), platform: registration.platform,
            environment: registration.environment, token: registration.token, createdAt: now, updatedAt: now)
        try await storeCall { try await store.insertDevice(device) }
        // Issued by this process: as good as seen, so a lock-out of the client's address does not refuse them.
        credentials.limiter.remember(.owner(userID: userID, secret: secret))
        credentials.limiter.remember(.userID(userID))
        context.logger.info("Device registered", metadata: ["device": "\(device.id)", "platform": "\(device.platform.rawValue)"])
        return JSONResponse.make(status: .created, body: ["user_id": .string(userID), "device_secret": .string(secret)])
    }

    @Sendable func unregister(_ request: Request, context: Context) async throws -> Response {
        let device = try await credentials.check(.basic(of: request), of: request, context: context) {
            try await directory.owner(of: request)
        }
        try await storeCall { try await store.deleteDevice(id: device.id) }
        context.logger.info("Device removed", metadata: ["device": "\(device.id)"])
        return Response(status: .noContent)
    }

    /// 401 without the registration token, 403 with another one (a failed credential check; a request without one
    /// guesses nothing and is not counted); nothing when the operator set none.
    private func checkRegistrationToken(_ request: Request, context: Context) async throws {
        guard let registrationTokenHash else { return }
        let given = request.headers[Self.registrationTokenHeader]
        try await credentials.check(given.map(CredentialFingerprint.registrationToken), of: request, context: context) {
            guard let given else { throw APIError.registrationTokenRequired }
            guard Secrets.matches(given, hash: registrationTokenHash) else { throw APIError.wrongRegistrationToken }
        }
    }
}
