import Foundation
import HeraldCore
import Hummingbird

/// `GET /notifications/receipts/{id}[?wait=N]`, `POST /notifications/receipts/{id}/cancel`,
/// `POST /notifications/receipts/cancel {"tag"}`: the receipts of notifications that repeat until acknowledged, with an
/// API token's `notifications` scope. A token sees and cancels only its own receipts (another's reads 404).
struct ReceiptController<Context: RemoteAddressRequestContext>: Sendable {
    let receipts: ReceiptDispatcher
    let authorizer: PushWardAuthorizer
    let bodyLimit: Int

    func addRoutes(to router: some RouterMethods<Context>) {
        router.post("notifications/receipts/cancel", use: cancelByTag)
        router.get("notifications/receipts/{id}", use: show)
        router.post("notifications/receipts/{id}/cancel", use: cancel)
    }

    @Sendable func show(_ request: Request, context: Context) async throws -> Response {
        let (token, _) = try await authorizer.authorize(request, context: context, scope: .notifications)
        // The same rule as the answers' long poll: at most 25 s, a larger N waits 25.
        let wait = try AnswerPollController<Context>.wait(request.uri.queryParameters["wait"].map(String.init))
        let receipt = try await ownReceipt(context, token: token.id)
        guard receipt.status == .active, wait > 0 else { return JSONResponse.make(status: .ok, body: ReceiptJSON.receipt(receipt)) }
        let ended = try await storeCall { try await receipts.waiters.wait(for: receipt.id, upTo: .seconds(wait)) }
        if let ended { return JSONResponse.make(status: .ok, body: ReceiptJSON.receipt(ended)) }
        let current = try await storeCall { try await receipts.store.receipt(id: receipt.id) } ?? receipt
        return JSONResponse.make(status: .ok, body: ReceiptJSON.receipt(current))
    }

    @Sendable func cancel(_ request: Request, context: Context) async throws -> Response {
        let (token, _) = try await authorizer.authorize(request, context: context, scope: .notifications)
        let receipt = try await ownReceipt(context, token: token.id)
        let ended = try await storeCall { try await receipts.end(receipt.id, .canceled(reason: "canceled_by_sender")) }
        // One that had ended before is answered as it is (canceling it again changes nothing).
        let current = try await storeCall { try await receipts.store.receipt(id: receipt.id) }
        return JSONResponse.make(status: .ok, body: ReceiptJSON.receipt(ended ?? current ?? receipt))
    }

    @Sendable func cancelByTag(_ request: Request, context: Context) async throws -> Response {
        let (token, _) = try await authorizer.authorize(request, context: context, scope: .notifications)
        let fields = FieldReader(try await JSONBody.object(of: request, limit: bodyLimit))
        try fields.refuseUnknownMembers(allowed: ["tag"])
        let tag = try fields.requiredNonEmptyString("tag")
        let active = try await storeCall { try await receipts.store.activeReceipts(tokenID: token.id) }
        var canceled: [Receipt] = []
        for receipt in active where receipt.tags.contains(tag) {
            if let ended = try await storeCall({ try await receipts.end(receipt.id, .canceled(reason: "canceled_by_tag")) }) {
                canceled.append(ended)
            }
        }
        return JSONResponse.make(
            status: .ok, body: ["canceled": .int(canceled.count), "receipts": .array(canceled.map { .object(ReceiptJSON.receipt($0)) })])
    }

    /// The receipt named in the path, when this token's send made it; 404 otherwise.
    private func ownReceipt(_ context: Context, token: UUID) async throws -> Receipt {
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)),
            let receipt = try await storeCall({ try await receipts.store.receipt(id: id) }), receipt.tokenID == token,
            receipt.notificationID != nil
        else { throw APIError.notFound("No receipt of this token has this id.") }
        return receipt
    }
}

/// The JSON form of a receipt (docs/api.md, "Receipts").
enum ReceiptJSON {
    /// `{id, notification_id, status, repeats_sent, action_id, acknowledged_by_device, cancel_reason, created_at,
    /// ended_at, expires_at, next_repeat_at}` (`null` where a member does not apply; `next_repeat_at` `null` once ended or
    /// once no repeat is left).
    static func receipt(_ receipt: Receipt) -> JSONObject {
        let repeating = receipt.status == .active && receipt.repeatsSent < ReceiptRules.maximumRepeats && receipt.nextRepeatAt < receipt.expiresAt
        return [
            "id": .string(receipt.id.lowercasedText), "notification_id": receipt.notificationID.map { .string($0.lowercasedText) } ?? .null,
            "status": .string(receipt.status.rawValue), "repeats_sent": .int(receipt.repeatsSent),
            "action_id": receipt.actionID.map(JSONValue.string) ?? .null,
            "acknowledged_by_device": receipt.acknowledgedByDevice.map { .string($0.lowercasedText) } ?? .null,
            "cancel_reason": receipt.cancelReason.map(JSONValue.string) ?? .null,
            "created_at": .string(receipt.createdAt.iso8601WithMilliseconds),
            "ended_at": receipt.endedAt.map { .string($0.iso8601WithMilliseconds) } ?? .null,
            "expires_at": .string(receipt.expiresAt.iso8601WithMilliseconds),
            "next_repeat_at": repeating ? .string(receipt.nextRepeatAt.iso8601WithMilliseconds) : .null,
        ]
    }
}
