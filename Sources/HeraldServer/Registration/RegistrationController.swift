import Foundation
import HeraldCore
import Hummingbird
import Logging

/// Device registration: `POST /api/push/register` (new device or new token), `DELETE /api/push/register` (remove).
struct RegistrationController<Context: RequestContext>: Sendable {
    let store: any HeraldStore
    let directory: DeviceDirectory
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
        do {
            if let owner = registration.owner {
                var device = try await directory.owner(userID: owner.userID, secret: owner.secret)
                device.token = registration.token
                device.platform = registration.platform
                device.environment = registration.environment
                device.isActive = true
                device.inactiveReason = nil
                device.updatedAt = now
                try await store.updateDevice(device)
                await onDeviceChanged(device.id)
                context.logger.info("Device re-registered", metadata: ["device": "\(device.id)"])
                return JSONResponse.make(
                    status: .ok, body: ["user_id": .string(owner.userID.lowercased()), "device_secret": .string(owner.secret)])
            }
            let userID = Secrets.random256BitHex()
            let secret = Secrets.random256BitHex()
            let device = Device(
                userIDHash: Secrets.hash(userID), secretHash: Secrets.hash(secret), platform: registration.platform,
                environment: registration.environment, token: registration.token, createdAt: now, updatedAt: now)
            try await store.insertDevice(device)
            context.logger.info("Device registered", metadata: ["device": "\(device.id)", "platform": "\(device.platform.rawValue)"])
            return JSONResponse.make(status: .created, body: ["user_id": .string(userID), "device_secret": .string(secret)])
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError.storeUnavailable("\(error)")
        }
    }

    @Sendable func unregister(_ request: Request, context: Context) async throws -> Response {
        let device = try await directory.owner(of: request)
        do {
            try await store.deleteDevice(id: device.id)
        } catch {
            throw APIError.storeUnavailable("\(error)")
        }
        context.logger.info("Device removed", metadata: ["device": "\(device.id)"])
        return Response(status: .noContent)
    }
}
