import ArgumentParser
import Foundation
import HeraldCore
import HummingbirdWSClient
import Logging
import Synchronization

/// `herald listen`: subscribes to the WebSocket channel, prints and confirms every notification, reconnects.
struct Listen: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Receive a device's notifications over the WebSocket channel, print and confirm each one.")

    @Option(help: "The Herald server, e.g. http://localhost:8080.") var server: String
    @Option(name: .customLong("user-id"), help: "The device's USER_ID.") var userID: String
    @Option(name: .customLong("device-secret"), help: "The device's secret.") var deviceSecret: String
    @Flag(help: "Print one JSON object per notification.") var json = false
    @OptionGroup var e2e: E2EKeyOption

    func run() async throws {
        let url = try webSocketURL()
        let key = try e2e.optional()
        var logger = Logger(label: "herald.listen")
        logger.logLevel = .error
        var delay = 1.0
        while !Task.isCancelled {
            let outcome = await listenOnce(url: url, key: key, logger: logger)
            switch outcome {
            case .refused(let message):
                throw ClientFailure(message)
            case .subscribed:
                delay = 1
            case .failed:
                break
            }
            FileHandle.standardError.write(Data("herald: connection lost; reconnecting in \(Int(delay)) s\n".utf8))
            try await Task.sleep(for: .seconds(delay))
            delay = min(delay * 2, 30)
        }
    }

    private enum Outcome: Sendable {
        /// It was subscribed, then the connection dropped.
        case subscribed
        /// It could not connect or subscribe.
        case failed
        /// The server refused the credentials: reconnecting won't help.
        case refused(String)
    }

    private func listenOnce(url: String, key: E2EKey?, logger: Logger) async -> Outcome {
        let subscribe: JSONValue = [
            "id": 1, "type": "push_notification_channel", "user_id": .string(userID), "device_secret": .string(deviceSecret),
            "support_confirm": true,
        ]
        let printJSON = json
        let result = ResultBox()
        _ = try? await WebSocketClient.connect(url: url, logger: logger) { inbound, outbound, _ in
            try await outbound.write(.text(String(decoding: try subscribe.encoded(), as: UTF8.self)))
            var nextID = 2
            for try await message in inbound.messages(maxSize: 1 << 20) {
                guard case .text(let text) = message, let object = try? JSONValue.decode(Data(text.utf8)).objectValue else { continue }
                switch object["type"]?.stringValue {
                case "result" where object["id"] == 1:
                    if object["success"] == true {
                        result.set(.subscribed)
                        FileHandle.standardError.write(Data("herald: listening for notifications\n".utf8))
                    } else {
                        let message = object["error"]?.objectValue?["message"]?.stringValue ?? "subscription refused"
                        result.set(.refused(message))
                        return
                    }
                case "event":
                    guard let event = object["event"]?.objectValue else { continue }
                    Self.show(Self.opened(event, with: key), asJSON: printJSON)
                    if let confirmID = event["hass_confirm_id"]?.stringValue {
                        let confirm: JSONValue = ["id": .int(nextID), "type": "push_notification_confirm", "confirm_id": .string(confirmID)]
                        nextID += 1
                        try await outbound.write(.text(String(decoding: try confirm.encoded(), as: UTF8.self)))
                    }
                default:
                    continue
                }
            }
        }
        return result.value
    }

    /// The event with its `pw1` envelope opened (docs/e2e.md): the real `title`, `body` (and `message`), `subtitle`
    /// and `url` replace the placeholder, `encrypted` becomes `"opened"`; an envelope that does not open keeps the
    /// placeholder and gains `encrypted_error`, the short reason.
    static func opened(_ event: JSONObject, with key: E2EKey?) -> JSONObject {
        guard let text = event["encrypted"]?.stringValue else { return event }
        var event = event
        guard let key else {
            event["encrypted_error"] = "no end-to-end key (--e2e-key or HERALD_E2E_KEY)"
            return event
        }
        switch E2EKeyOption.open(text, with: key) {
        case .success(let message):
            for (name, value) in E2EKeyOption.json(message) { event[name] = value }
            event["message"] = .string(message.body)
            event["encrypted"] = "opened"
        case .failure(let reason):
            event["encrypted_error"] = .string(reason.description)
        }
        return event
    }

    /// Writes one line per notification, unbuffered, so that a pipe reading it sees each at once.
    private static func show(_ event: JSONObject, asJSON: Bool) {
        let line: String
        if asJSON {
            line = (try? JSONValue.object(event).encoded()).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        } else {
            let time = Date().formatted(date: .omitted, time: .standard)
            let title = event["title"]?.stringValue ?? ""
            let body = event["body"]?.stringValue ?? ""
            line = "[\(time)] \(title)\(title.isEmpty || body.isEmpty ? "" : " — ")\(body)"
                + (event["encrypted_error"]?.stringValue.map { " (encrypted: \($0))" } ?? "")
        }
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// `http(s)://host[:port]` → `ws(s)://host[:port]/api/push/websocket`.
    private func webSocketURL() throws -> String {
        guard var components = URLComponents(string: server), let scheme = components.scheme?.lowercased(),
            ["http", "https"].contains(scheme)
        else { throw ClientFailure("--server must be an http:// or https:// URL, e.g. http://localhost:8080") }
        components.scheme = scheme == "https" ? "wss" : "ws"
        components.path = components.path.trimmingSuffix("/") + "/api/push/websocket"
        return components.string ?? server
    }

    /// What one connection achieved, set from inside the connection's handler.
    private final class ResultBox: Sendable {
        private let outcome = Mutex(Outcome.failed)
        func set(_ new: Outcome) { outcome.withLock { $0 = new } }
        var value: Outcome { outcome.withLock { $0 } }
    }
}

extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
