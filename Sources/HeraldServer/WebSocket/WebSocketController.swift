import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTPTypes
import NIOWebSocket

/// `GET /api/push/websocket`: Herald's local push channel (protocol in docs/websocket.md).
///
/// A client subscribes with its owner credentials, receives each notification of its device as an `event`, and
/// confirms it; the delivery worker counts a confirmed notification as delivered and never sends it to APNs.
/// A subscription with credentials that do not authenticate counts as a failed credential check of the client.
///
/// The upgrade is decided by ``shouldUpgrade(_:channel:logger:)``, not by a route: Hummingbird's router-based
/// upgrade (`Router.ws`) keeps the request context in a box that the context itself holds, a reference cycle that
/// kept about 600 bytes per WebSocket connection for ever (hummingbird-websocket 2.8.1; found with heaptrack, see
/// docs/performance.md).
struct WebSocketController: Sendable {
    /// The largest message a client may send.
    static var maximumMessageSize: Int { 16_384 }

    let hub: WebSocketHub
    let directory: DeviceDirectory
    let credentials: CredentialGuard
    let worker: DeliveryWorker
    /// The other instances on the database, when there are (PostgreSQL).
    let link: ClusterLink?

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

    /// Decides a request that asks for a WebSocket upgrade: `GET /api/push/websocket` (with or without a query or a
    /// trailing slash) is upgraded to a session; anything else goes on to the HTTP side (where hummingbird-websocket
    /// answers a request that still asks for an upgrade with a 307 to itself).
    func shouldUpgrade(
        _ head: HTTPRequest, channel: any Channel, logger: Logger
    ) -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> {
        guard head.method == .get, Self.isOwnPath(head.path) else { return .dontUpgrade }
        let client = credentials.addresses.clientKey(headers: head.headerFields, peer: channel.remoteAddress)
        return .upgrade([:]) { inbound, outbound, context in
            try await session(inbound: inbound, outbound: outbound, client: client, logger: context.logger)
        }
    }

    /// Whether a request target is this endpoint's path.
    static func isOwnPath(_ target: String?) -> Bool {
        guard let target else { return false }
        var path = target.prefix { $0 != "?" }
        while path.count > 1, path.last == "/" { path.removeLast() }
        return path == ownPath
    }

    /// The subscription of a socket: the hub's id for it and the device whose events it receives.
    private typealias Subscription = (id: UUID, deviceID: Device.ID)

    /// Errors are rethrown: WSCore closes the socket with the status they carry (1007 for a text message that is not
    /// UTF-8, 1009 for one too large).
    private func session(
        inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, client: String, logger: Logger
    ) async throws {
        var subscription: Subscription?
        // One task per socket: this one, reading. Events are written by the hub's send queue, whose writer runs only
        // while events wait (an idle subscribed socket costs no task of its own).
        defer {
            if let subscription {
                hub.unsubscribe(subscription.id, deviceID: subscription.deviceID)
                link?.clientLeft(subscription.deviceID)
            }
        }
        do {
            var frames = inbound.messages(maxSize: Self.maximumMessageSize).makeAsyncIterator()
            while let frame = try await frames.next() {
                let message: WebSocketClientMessage
                do throws(WebSocketErrorResult) {
                    message = try WebSocketClientMessage(frame, isSubscribed: subscription != nil)
                } catch {
                    try await send(error.json, on: outbound)
                    continue
                }
                switch message {
                case .subscribe(let id, let userID, let secret, let supportsConfirm):
                    let previous = subscription
                    let outcome = try await inChildTask {
                        try await subscribe(
                            id: id, userID: userID, secret: secret, supportsConfirm: supportsConfirm, replacing: previous,
                            client: client, outbound: outbound, logger: logger)
                    }
                    switch outcome {
                    case .subscribed(let subscribed): subscription = subscribed
                    case .refused: continue
                    case .closed: return
                    }
                case .confirm(let id, let confirmID):
                    // The message type refuses a confirmation on a socket without a subscription.
                    guard let subscription else { continue }
                    // No delivery here waits for it: the client may have received it on a socket to another instance.
                    var confirmed = hub.confirm(confirmID, deviceID: subscription.deviceID)
                    if !confirmed, let link {
                        confirmed = await link.forwardConfirmation(confirmID, deviceID: subscription.deviceID)
                    }
                    let answer =
                        confirmed
                        ? Self.success(id: id)
                        : WebSocketErrorResult(id: id, .notFound, "No notification waits for this confirm_id.").json
                    try await send(answer, on: outbound)
                }
            }
        } catch {
            logger.debug("WebSocket closed", metadata: ["error": "\(error)"])
            throw error
        }
    }

    /// Runs `work` in a child task of its own. A Swift task keeps the stack memory its deepest call needed until it
    /// ends: the credential check, the store and the claim of pending notifications would otherwise stay allocated
    /// (about 5 KB) in the socket's task for as long as the socket is open. A child's memory is freed when it ends.
    private func inChildTask<Result: Sendable>(_ work: @escaping @Sendable () async throws -> Result) async throws -> Result {
        try await withThrowingTaskGroup(of: Result.self) { group in
            group.addTask(operation: work)
            return try await group.next()!
        }
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
        outbound: WebSocketOutboundWriter, logger: Logger
    ) async throws -> SubscribeOutcome {
        let device: Device
        do {
            device = try await credentials.limiter.guarding(client, credential: .owner(userID: userID, secret: secret)) {
                try await directory.owner(userID: userID, secret: secret)
            }
        } catch let error as APIError {
            try await send(WebSocketErrorResult(id: id, error).json, on: outbound)
            guard error.code == .wrongDeviceSecret else { return .refused }
            try await outbound.close(.policyViolation, reason: "wrong device secret")
            return .closed
        }
        if let previous {
            hub.unsubscribe(previous.id, deviceID: previous.deviceID)
            if previous.deviceID != device.id { link?.clientLeft(previous.deviceID) }
        }
        // The result goes out before any event: the subscription starts after it is written.
        try await send(Self.success(id: id), on: outbound)
        guard
            let subscribed = hub.subscribe(
                deviceID: device.id, messageID: id, supportsConfirm: supportsConfirm,
                write: { event in try await outbound.write(.text(event)) },
                close: { try? await outbound.close(.goingAway, reason: "Herald is shutting down") })
        else {
            try await outbound.close(.goingAway, reason: "Herald is shutting down")
            return .closed
        }
        logger.info("WebSocket client subscribed", metadata: ["device": "\(device.id)", "confirm": "\(supportsConfirm)"])
        // Other instances hand this device's notifications here from now on; what they accepted before is pending.
        await link?.clientSubscribed(device.id)
        await worker.deliverPending(of: device.id)
        return .subscribed((subscribed, device.id))
    }

    private func send(_ message: JSONValue, on outbound: WebSocketOutboundWriter) async throws {
        try await outbound.write(.text(String(decoding: try message.encoded(), as: UTF8.self)))
    }

    /// `{"id", "type": "result", "success": true}`.
    private static func success(id: Int?) -> JSONValue {
        ["id": id.map(JSONValue.int) ?? .null, "type": "result", "success": true]
    }
}
