import Foundation
import HeraldCore
import Hummingbird

/// `POST /api/push/notify`: the camera app's send API.
struct NotifyController<Context: RequestContext>: Sendable {
    let pipeline: SendPipeline
    let directory: DeviceDirectory
    let clock: any WallClock
    let bodyLimit: Int

    func addRoutes(to group: RouterGroup<Context>) {
        group.post("notify", use: notify)
    }

    @Sendable func notify(_ request: Request, context: Context) async throws -> Response {
        let notify = try NotifyRequest(try await JSONBody.object(of: request, limit: bodyLimit))
        guard let userID = notify.userID ?? Credentials.bearer(request) else {
            throw APIError.invalidField("user_id", "user_id is required (in the body or as Authorization: Bearer).")
        }
        let device = try await directory.device(userID: userID)
        do {
            let receipt = try await pipeline.send(notify.draft, to: device)
            var body: JSONObject = [
                "id": .string(receipt.notification.id.uuidString.lowercased()), "status": .string(receipt.statusWord),
                "truncated": .bool(receipt.truncated), "rateLimits": SendAnswers.rateLimits(receipt.quota),
            ]
            if let warning = receipt.warning { body["warning"] = .string(warning) }
            return JSONResponse.make(status: .created, body: body, headers: SendAnswers.headers(receipt.quota, now: clock.now()))
        } catch {
            throw SendAnswers.apiError(error, now: clock.now())
        }
    }
}
