import NIOCore
import NIOWebSocket
import Synchronization

/// What the rest of Herald holds of a socket: it writes to it and closes it from any thread.
package final class WebSocketConnection: Sendable {
    private let channel: any Channel
    /// Events handed to the channel and not written yet.
    private let unwritten = Atomic(0)
    private let isOpen = Atomic(true)

    package init(channel: any Channel) {
        self.channel = channel
    }

    /// Writes a text message (an answer to the client's message). Writes leave in the order they were handed over.
    package func write(_ text: String) -> EventLoopFuture<Void> {
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: text)))
    }

    /// Queues an event for writing; false when the socket is closing or `limit` events are not written yet (a
    /// slow client can't make Herald's memory grow).
    package func offer(event: String, limit: Int) -> Bool {
        guard isOpen.load(ordering: .relaxed) else { return false }
        guard unwritten.wrappingAdd(1, ordering: .relaxed).newValue <= limit else {
            unwritten.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: event))).whenComplete { _ in
            self.unwritten.wrappingSubtract(1, ordering: .relaxed)
        }
        return true
    }

    /// Closes the socket with `code`: a close frame, then the connection once the client answers it.
    package func close(_ code: WebSocketErrorCode, reason: String? = nil) async {
        try? await channel.triggerUserOutboundEvent(WebSocketCloseRequest(code: code, reason: reason)).get()
    }

    /// The socket is closing or closed: nothing more is queued for it.
    package func markClosed() {
        isOpen.store(false, ordering: .relaxed)
    }
}
