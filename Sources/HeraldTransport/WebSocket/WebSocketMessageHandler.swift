import HummingbirdWebSocket
import Logging
import NIOWebSocket

/// What a ``WebSocketSession`` hands its client's messages to, one at a time (Herald's: the WebSocket controller, which
/// speaks docs/websocket.md's protocol). The session keeps the socket's subscription and subscribe budget between
/// messages and gives each message the ones the message before left.
package protocol WebSocketMessageHandler: Sendable {
    /// What a socket subscribed to; the session ends it when the socket closes.
    associatedtype Subscription: Identifiable & Sendable

    /// Answers one message of a socket and returns the socket's subscription after it.
    func answer(
        _ message: WebSocketMessage, subscription: Subscription?, budget: inout SubscribeBudget, client: String,
        socket: WebSocketConnection
    ) async -> Subscription?

    /// A socket with this subscription closed.
    func ended(_ subscription: Subscription)

    /// Where the session logs a socket that ended with an error (at debug level).
    var logger: Logger { get }
}

/// How a ``WebSocketSession`` treats its socket.
package struct WebSocketSessionConfiguration: Sendable {
    /// The largest message a client may send, all its frames together (larger: closed with 1009).
    package var maximumMessageSize: Int
    /// How often the server pings; a client that has not answered a ping by the next one is dropped.
    package var pingInterval: Duration
    /// How long the server waits for the client's answer to its close frame before it closes the connection.
    package var closeTimeout: Duration = .seconds(15)
    /// How long a socket may stay open without a subscription; then it is closed (1008).
    package var subscribeTimeout: Duration = .seconds(10)
    /// Subscribe messages per minute on one socket after a burst of ``SubscribeBudget/burst``; 0: no limit.
    package var subscribesPerMinute = 6

    package init(
        maximumMessageSize: Int, pingInterval: Duration, closeTimeout: Duration = .seconds(15),
        subscribeTimeout: Duration = .seconds(10), subscribesPerMinute: Int = 6
    ) {
        self.maximumMessageSize = maximumMessageSize
        self.pingInterval = pingInterval
        self.closeTimeout = closeTimeout
        self.subscribeTimeout = subscribeTimeout
        self.subscribesPerMinute = subscribesPerMinute
    }
}

/// Asks a ``WebSocketSession`` to close with `code` (a user outbound event, see ``WebSocketConnection/close(_:reason:)``).
struct WebSocketCloseRequest: Sendable {
    var code: WebSocketErrorCode
    var reason: String?
}
