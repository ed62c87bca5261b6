import Foundation
import HTTPTypes
import HeraldCore
import HeraldDelivery
import HeraldTransport
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTPTypes
import NIOWebSocket

/// `GET /api/push/websocket`: Herald's local push channel (protocol in docs/websocket.md).
///
/// A client subscribes with its owner credentials, receives each notification of its device as an `event`, and
/// confirms it; the delivery engine counts a confirmed notification as delivered and never sends it to APNs.
/// A subscription with credentials that do not authenticate counts as a failed credential check of the client.
///
/// The upgrade is decided by ``HTTPWithWebSocketChannel`` (not by a route), and each upgraded socket runs as a
/// ``WebSocketSession``, which hands its messages here one at a time: no Swift task per idle socket
/// (docs/performance.md, "WebSocket memory").
struct WebSocketController: WebSocketMessageHandler {
    /// The largest message a client may send.
    static var maximumMessageSize: Int { 16_384 }

    let hub: WebSocketHub
    let directory: DeviceDirectory
    let credentials: CredentialGuard
    let engine: DeliveryEngine
    /// The other instances on the database, when there are (PostgreSQL).
    let link: ClusterLink?
    let sessionConfiguration: WebSocketSessionConfiguration
    /// For the sockets' subscribe budgets.
    let clock: any WallClock
    let logger: Logger

    /// The endpoint's path, as request targets spell it.
    static let ownPath = "/api/push/websocket"
    static var path: RouterPath { RouterPath(ownPath) }

    /// A request that reaches the HTTP `router` at this path was not upgraded (no `Upgrade: websocket`, or a broken
    /// handshake) and is answered 426.
    func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        router.get(Self.path) { _, _ -> Response in
            throw APIError(.upgradeRequired, headers: [.upgrade: "websocket", .connection: "Upgrade"])
        }
    }

    /// Whether a request is a WebSocket handshake (RFC 6455 §4.2.1) for this endpoint: `GET` at its path (a query and
    /// a trailing slash allowed), `Upgrade: websocket`, `Connection: Upgrade`, a `Sec-WebSocket-Key` and
    /// `Sec-WebSocket-Version: 13`. `values` gives a header's values by its lower-case name.
    static func isHandshake(method: String, target: String?, values: (String) -> [String]) -> Bool {
        func tokens(_ name: String) -> [String] {
            values(name).flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        }
        return method == "GET" && isOwnPath(target) && tokens("upgrade").contains("websocket")
            && tokens("connection").contains("upgrade") && !values("sec-websocket-key").isEmpty
            && values("sec-websocket-version") == ["13"]
    }

    /// The session of a socket that was just upgraded.
    func session(for head: HTTPRequest, channel: any Channel) -> WebSocketSession<WebSocketController> {
        WebSocketSession(
            controller: self, client: credentials.addresses.clientKey(headers: head.headerFields, peer: channel.remoteAddress),
            configuration: sessionConfiguration, channel: channel)
    }

    /// Whether a request target is this endpoint's path.
    static func isOwnPath(_ target: String?) -> Bool {
        guard let target else { return false }
        var path = target.prefix { $0 != "?" }
        while path.count > 1, path.last == "/" { path.removeLast() }
        return path == ownPath
    }

    /// The subscription of a socket: the hub's id for it and the device whose events it receives.
    struct Subscription: Identifiable, Sendable {
        var id: UUID
        var deviceID: Device.ID
    }

    /// Answers one message of a socket (``WebSocketSession`` hands them over one at a time) and returns the socket's
    /// subscription after it. A message that does not decode is answered with an error and changes nothing; so is a
    /// subscribe beyond the socket's `budget` (`too_many_subscribes`, before its credentials are checked).
    func answer(
        _ frame: WebSocketMessage, subscription: Subscription?, budget: inout SubscribeBudget, client: String,
        socket: WebSocketConnection
    ) async -> Subscription? {
        do {
            let message: WebSocketClientMessage
            do throws(WebSocketErrorResult) {
                message = try WebSocketClientMessage(frame, isSubscribed: subscription != nil)
            } catch {
                try await send(error.json, on: socket)
                return subscription
            }
            switch message {
            case .subscribe(let id, let userID, let secret, let supportsConfirm):
                guard budget.take(at: clock.now()) else {
                    try await send(WebSocketErrorResult(id: id, .tooManySubscribes).json, on: socket)
                    return subscription
                }
                let outcome = try await subscribe(
                    id: id, userID: userID, secret: secret, supportsConfirm: supportsConfirm, replacing: subscription,
                    client: client, socket: socket)
                switch outcome {
                case .subscribed(let subscribed): return subscribed
                case .refused: return subscription
                case .closed: return nil
                }
            case .confirm(let id, let confirmID):
                // The message type refuses a confirmation on a socket without a subscription.
                guard let subscription else { return nil }
                // No delivery here waits for it: the client may have received it on a socket to another instance.
                var confirmed = hub.confirm(confirmID, deviceID: subscription.deviceID)
                if !confirmed, let link {
                    confirmed = await link.forwardConfirmation(confirmID, deviceID: subscription.deviceID)
                }
                let answer =
                    confirmed
                    ? Self.success(id: id)
                    : WebSocketErrorResult(id: id, .notFound, "No notification waits for this confirm_id.").json
                try await send(answer, on: socket)
                return subscription
            }
        } catch {
            // The socket closed under a write; the session ends what the subscription left.
            logger.debug("WebSocket write failed", metadata: ["error": "\(error)"])
            return subscription
        }
    }

    /// A socket with this subscription closed.
    func ended(_ subscription: Subscription) {
        hub.unsubscribe(subscription.id, deviceID: subscription.deviceID)
        link?.clientLeft(subscription.deviceID)
    }

    private enum SubscribeOutcome {
        case subscribed(Subscription)
        /// The credentials were refused; the refusal was answered and the socket keeps what it had.
        case refused
        /// The socket was closed: for a wrong device secret (policy violation), or because Herald is shutting down.
        case closed
    }

    /// Checks a subscription's credentials (a failure counts towards the client's throttle) and subscribes the socket
    /// to the device's events in place of `previous`.
    private func subscribe(
        id: Int, userID: String, secret: String, supportsConfirm: Bool, replacing previous: Subscription?, client: String,
        socket: WebSocketConnection
    ) async throws -> SubscribeOutcome {
        let device: Device
        do {
            device = try await credentials.limiter.guarding(client, credential: .owner(userID: userID, secret: secret)) {
                try await directory.owner(userID: userID, secret: secret)
            }
        } catch let error as APIError {
            try await send(WebSocketErrorResult(id: id, error).json, on: socket)
            guard error.code == .wrongDeviceSecret else { return .refused }
            await socket.close(.policyViolation, reason: "wrong device secret")
            if let previous { ended(previous) }
            return .closed
        }
        if let previous {
            hub.unsubscribe(previous.id, deviceID: previous.deviceID)
            if previous.deviceID != device.id { link?.clientLeft(previous.deviceID) }
        }
        // The result goes out before any event: it is handed to the socket before the subscription starts (writes
        // leave in the order they were handed over), and the client that reads it is already subscribed (a
        // notification it has sent for after reading it is delivered here).
        let answered = socket.write(String(decoding: try Self.success(id: id).encoded(), as: UTF8.self))
        let subscribed = hub.subscribe(deviceID: device.id, messageID: id, supportsConfirm: supportsConfirm, socket: socket)
        // A socket that closed meanwhile ends the subscription (WebSocketSession), so it is returned all the same.
        try? await answered.get()
        guard let subscribed else {
            await socket.close(.goingAway, reason: "Herald is shutting down")
            return .closed
        }
        logger.info("WebSocket client subscribed", metadata: ["device": "\(device.id)", "confirm": "\(supportsConfirm)"])
        // Other instances hand this device's notifications here from now on; what they accepted before is pending.
        await link?.clientSubscribed(device.id)
        await engine.deliverPending(of: device.id)
        return .subscribed(Subscription(id: subscribed, deviceID: device.id))
    }

    private func send(_ message: JSONValue, on socket: WebSocketConnection) async throws {
        try await socket.write(String(decoding: try message.encoded(), as: UTF8.self)).get()
    }

    /// `{"id", "type": "result", "success": true}`.
    private static func success(id: Int?) -> JSONValue {
        ["id": id.map(JSONValue.int) ?? .null, "type": "result", "success": true]
    }
}
