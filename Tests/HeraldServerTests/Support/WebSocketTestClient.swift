import Foundation
import HeraldCore
import HummingbirdWSClient
import Logging
import Synchronization
import Testing

/// A WebSocket client for tests: connects over a real socket, records every text message it receives,
/// and sends what the test tells it to.
final class WebSocketTestClient: Sendable {
    /// What the connection task and the test share.
    private final class Shared: Sendable {
        let received = Mutex<[JSONObject]>([])
        let closed = Mutex(false)
    }

    private let shared = Shared()
    private let readIndex = Mutex(0)
    private let outgoing: AsyncStream<String>.Continuation

    init(port: Int, path: String = "/api/push/websocket") {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        outgoing = continuation
        let shared = self.shared
        var logger = Logger(label: "ws-test-client")
        logger.logLevel = .warning
        let url = "ws://127.0.0.1:\(port)\(path)"
        Task {
            _ = try? await WebSocketClient.connect(url: url, logger: logger) { inbound, outbound, _ in
                let reader = Task {
                    defer { shared.closed.withLock { $0 = true } }  // the server closed the connection
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        guard case .text(let text) = message, let object = try? JSONValue.decode(Data(text.utf8)).objectValue else { continue }
                        shared.received.withLock { $0.append(object) }
                    }
                }
                for await text in stream { try await outbound.write(.text(text)) }
                reader.cancel()
            }
            shared.closed.withLock { $0 = true }
        }
    }

    deinit { outgoing.finish() }

    func send(_ text: String) { outgoing.yield(text) }

    /// The next message not read yet, waiting up to about `seconds` (30 by default: a loaded two-core run once waited
    /// more than 10 s for a subscriber's parked backlog; a test that expects nothing names its own, shorter, wait).
    func next(within seconds: Double = 30) async -> JSONObject? {
        for _ in 0..<Int(seconds * 100) {
            let message = readIndex.withLock { index -> JSONObject? in
                let all = shared.received.withLock { $0 }
                guard index < all.count else { return nil }
                index += 1
                return all[index - 1]
            }
            if let message { return message }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }

    /// Whether the connection is closed now.
    var isClosedNow: Bool { shared.closed.withLock { $0 } }

    /// Whether the server closed the connection within about `seconds`.
    func isClosed(within seconds: Double = 10) async -> Bool {
        for _ in 0..<Int(seconds * 100) {
            if isClosedNow { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    /// Subscribes and checks the result.
    func subscribe(_ registration: Registration, id: Int = 1, confirm: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) async {
        send(#"{"id": \#(id), "type": "push_notification_channel", "user_id": "\#(registration.userID)", "device_secret": "\#(registration.secret)", "support_confirm": \#(confirm)}"#)
        let result = await next()
        #expect(result == ["id": .int(id), "type": "result", "success": true], sourceLocation: sourceLocation)
    }

    func close() async {
        outgoing.finish()
        _ = await isClosed()
    }
}
