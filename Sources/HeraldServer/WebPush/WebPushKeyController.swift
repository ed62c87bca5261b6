import HeraldCore
import Hummingbird

/// `GET /api/push/webpush/key`: the VAPID public key a browser subscribes with (`applicationServerKey`), as
/// `{"public_key": "<base64url of the uncompressed P-256 point>"}`. Unauthenticated: the key is public. `404` when the
/// server has no key (the database could not keep one).
struct WebPushKeyController<Context: RequestContext>: Sendable {
    let publicKey: String?

    func addRoutes(to group: RouterGroup<Context>) {
        group.get("webpush/key") { _, _ in
            guard let publicKey else {
                throw APIError(hummingbirdStatus: .notFound, message: "This server has no Web Push key.")
            }
            return JSONResponse.make(status: .ok, body: ["public_key": .string(publicKey)])
        }
    }
}
