import Foundation
import HeraldCore
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOWebSocket

/// `GET /api/push/websocket`: Herald's local push channel (protocol in docs/websocket.md).
///
/// A client subscribes with its owner credentials, receives each notification of its device as an `event`, and
/// confirms it; the delivery worker counts a confirmed notification as delivered and never sends it to APNs.
/// A subscription with credentials that do not authenticate counts as a failed credential check of the client.
struct WebSocketController<Context: RemoteAddressRequestContext & WebSocketRequestContext>: Sendable {
    /// The largest message a client may send.
    static var maximumMessageSize: Int { 16_384 }

    let hub: WebSocketHub
    let directory: DeviceDirectory
    let credentials: CredentialGuard
    let worker: DeliveryWorker

    static var path: RouterPath { "api/push/websocket" }

    /// The upgrade goes on `webSocketRouter`, which sees only requests asking for one; a request that reaches the HTTP
    /// `router` at this path was not upgraded (no `Upgrade: websocket`, or a broken handshake) and is answered 426.
    func addRoutes(to router: Router<Context>, upgradesOn webSocketRouter: Router<Context>) {
        webSocketRouter.ws(Self.path) { inbound, outbound, context in
            let client = credentials.addresses.clientKey(of: context.request, context: context.requestContext)
            try await session(inbound: inbound, outbound: outbound, client: client, logger: context.logger)
        }
        router.get(Self.path) { _, _ -> Response in
            throw APIError(.upgradeRequired, headers: [.upgrade: "websocket", .connection: "Upgrade"])
        }
    }

    /// Errors are rethrown: WSCore closes the socket with the status they carry (1007 for a text message that is not
    /// UTF-8, 1009 for one too large).
    private func session(
        inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, client: String, logger: Logger
    ) async throws {
        var subscription: (id: UUID, deviceID: Device.ID)?
        // One task per socket: this one, reading. Events are written by the hub's send queue, whose writer runs only
        // while events wait (an idle subscribed socket costs no task of its own).
        defer {
            if let subscription { hub.unsubscribe(subscription.id, deviceID: subscription.deviceID) }
        }
        do {
            var messages = inbound.messages(maxSize: Self.maximumMessageSize).makeAsyncIterator()
            while let message = try await messages.next() {
                guard case .text(let text) = message,
                    let object = try? JSONValue.decode(Data(text.utf8)).objectValue
                else {
                    try await send(Self.error(id: nil, .invalidFormat), on: outbound)
                    continue
                }
                let id = object["id"].flatMap { if case .int(let id) = $0 { id } else { nil } }
                switch object["type"]?.stringValue {
                case "push_notification_channel", "mobile_app/push_notification_channel":
                    guard let id else {
                        try await send(Self.error(id: nil, .invalidFormat, "id must be a whole number."), on: outbound)
                        continue
                    }
                    let fields = FieldReader(object)
                    guard let userID = try? fields.requiredNonEmptyString("user_id"),
                        let secret = try? fields.requiredNonEmptyString("device_secret")
                    else {
                        try await send(
                            Self.error(id: id, .invalidFormat, "user_id and device_secret are required."), on: outbound)
                        continue
                    }
                    let device: Device
                    do {
                        device = try await credentials.limiter.guarding(client, credential: .owner(userID: userID, secret: secret)) {
                            try await directory.owner(userID: userID, secret: secret)
                        }
                    } catch let error as APIError {
                        try await send(Self.error(id: id, error.code, error.message), on: outbound)
                        if error.code == .wrongDeviceSecret {
                            try await outbound.close(.policyViolation, reason: "wrong device secret")
                            return
                        }
                        continue
                    }
                    if let previous = subscription { hub.unsubscribe(previous.id, deviceID: previous.deviceID) }
                    let supportsConfirm = (try? fields.optionalBool("support_confirm")) == true
                    // The result goes out before any event: the subscription starts after it is written.
                    try await send(["id": .int(id), "type": "result", "success": true], on: outbound)
                    guard
                        let subscribed = hub.subscribe(
                            deviceID: device.id, messageID: id, supportsConfirm: supportsConfirm,
                            write: { event in try await outbound.write(.text(event)) },
                            close: { try? await outbound.close(.goingAway, reason: "Herald is shutting down") })
                    else {
                        try await outbound.close(.goingAway, reason: "Herald is shutting down")
                        return
                    }
                    subscription = (subscribed, device.id)
                    logger.info(
                        "WebSocket client subscribed", metadata: ["device": "\(device.id)", "confirm": "\(supportsConfirm)"])
                    await worker.deliverPending(of: device.id)
                case "push_notification_confirm", "mobile_app/push_notification_confirm":
                    guard let subscription else {
                        try await send(Self.error(id: id, .notSubscribed), on: outbound)
                        continue
                    }
                    guard let confirmID = object["confirm_id"]?.stringValue else {
                        try await send(Self.error(id: id, .invalidFormat, "confirm_id is required."), on: outbound)
                        continue
                    }
                    if hub.confirm(confirmID, deviceID: subscription.deviceID) {
                        try await send(["id": id.map(JSONValue.int) ?? .null, "type": "result", "success": true], on: outbound)
                    } else {
                        try await send(
                            Self.error(id: id, .notFound, "No notification waits for this confirm_id."), on: outbound)
                    }
                default:
                    try await send(Self.error(id: id, .unknownCommand), on: outbound)
                }
            }
        } catch {
            logger.debug("WebSocket closed", metadata: ["error": "\(error)"])
            throw error
        }
    }

    private func send(_ message: JSONValue, on outbound: WebSocketOutboundWriter) async throws {
        try await outbound.write(.text(String(decoding: try message.encoded(), as: UTF8.self)))
    }

    /// `{"id", "type": "result", "success": false, "error": {"code", "message"}}`, as Home Assistant's WebSocket API answers.
    static func error(id: Int?, _ code: ErrorCode, _ message: String? = nil) -> JSONValue {
        [
            "id": id.map(JSONValue.int) ?? .null, "type": "result", "success": false,
            "error": ["code": .string(code.rawValue), "message": .string(message ?? code.defaultMessage ?? code.rawValue)],
        ]
    }
}
