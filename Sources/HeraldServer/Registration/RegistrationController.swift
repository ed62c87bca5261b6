import Foundation
import HTTPTypes
import HeraldCore
import HeraldProviderKit
import Hummingbird
import Logging

/// Device registration over HTTP: `POST /api/push/register` (new device or new token), `DELETE /api/push/register`
/// (remove). The rules are ``DeviceRegistrar``'s; this controller reads the request, checks the owner's credentials and
/// the registration token under the failed-credential limiter, and answers. Its refusals are mapped in one place,
/// `APIError.init(registration:)`.
struct RegistrationController<Context: RemoteAddressRequestContext>: Sendable {
    /// The header a registration token travels in.
    static var registrationTokenHeader: HTTPField.Name { HTTPField.Name("X-Herald-Registration-Token")! }

    let registrar: DeviceRegistrar
    let directory: DeviceDirectory
    let credentials: CredentialGuard
    let bodyLimit: Int
    /// The providers whose addresses a registration may name, with their rules.
    let providers: ProviderProfiles
    /// A device registered again (new token, or revived): its pending notifications are delivered at once.
    let onDeviceChanged: @Sendable (Device.ID) async -> Void

    func addRoutes(to group: RouterGroup<Context>) {
        group.post("register", use: register)
        group.delete("register", use: unregister)
    }

    @Sendable func register(_ request: Request, context: Context) async throws -> Response {
        let body = try await JSONBody.object(of: request, limit: bodyLimit)
        let registration = try RegisterRequest(body, basic: Credentials.basic(request), providers: providers)
        let target = DeviceRegistrar.Target(
            platform: registration.platform, environment: registration.environment, token: registration.address.token,
            pushToStartToken: registration.pushToStartToken, addressData: registration.address.data,
            capsDistinctTokens: registration.capsDistinctTokens)
        if let owner = registration.owner {
            let device = try await credentials.check(.owner(userID: owner.userID, secret: owner.secret), of: request, context: context) {
                try await directory.owner(userID: owner.userID, secret: owner.secret)
            }
            do throws(RegistrationError) {
                let changed = try await registrar.reregister(
                    device, to: target, client: credentials.addresses.clientKey(of: request, context: context), logger: context.logger)
                await onDeviceChanged(changed.id)
            } catch {
                throw APIError(registration: error)
            }
            return JSONResponse.make(
                status: .ok, body: ["user_id": .string(owner.userID.lowercased()), "device_secret": .string(owner.secret)])
        }
        try await checkRegistrationToken(request, context: context)
        let new: DeviceRegistrar.NewDevice
        do throws(RegistrationError) {
            new = try await registrar.register(
                target, client: credentials.addresses.clientKey(of: request, context: context), logger: context.logger)
        } catch {
            throw APIError(registration: error)
        }
        // Issued by this process: as good as seen, so a lock-out of the client's address does not refuse them.
        credentials.limiter.remember(.owner(userID: new.userID.text, secret: new.secret))
        credentials.limiter.remember(.userID(new.userID))
        return JSONResponse.make(status: .created, body: ["user_id": .string(new.userID.text), "device_secret": .string(new.secret)])
    }

    @Sendable func unregister(_ request: Request, context: Context) async throws -> Response {
        let device = try await credentials.check(.basic(of: request), of: request, context: context) {
            try await directory.owner(of: request)
        }
        do throws(RegistrationError) {
            try await registrar.remove(device, logger: context.logger)
        } catch {
            throw APIError(registration: error)
        }
        return Response(status: .noContent)
    }

    /// 401 without the registration token, 403 with another one (a failed credential check; a request without one
    /// guesses nothing and is not counted); nothing when the operator set none.
    private func checkRegistrationToken(_ request: Request, context: Context) async throws {
        guard registrar.requiresRegistrationToken else { return }
        let given = request.headers[Self.registrationTokenHeader]
        try await credentials.check(given.map(CredentialFingerprint.registrationToken), of: request, context: context) {
            do throws(RegistrationError) {
                try registrar.checkRegistrationToken(given)
            } catch {
                throw APIError(registration: error)
            }
        }
    }
}
