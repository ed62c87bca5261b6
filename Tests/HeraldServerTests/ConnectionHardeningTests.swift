import Foundation
import HeraldCore
import HeraldServer
import HummingbirdTesting
import Testing

/// Issue 14, findings 1–3 and the WebSocket half of 9: no client can hold a connection open for ever, every refusal
/// is a JSON answer followed by a close, and shutdown is bounded. All over bare TCP sockets.
@Suite("Connection limits")
struct ConnectionHardeningTests {
    /// A server whose timeouts are short enough for a test that waits for them; tests about something else keep
    /// them long, so that a machine busy with the rest of the suite does not turn their answers into 408s.
    static func server(maximumConnections: Int = 10_000, timeouts: Duration = .seconds(1)) throws -> TestServer {
        var server = try TestServer()
        server.configuration.connectionLimits.headerTimeout = timeouts
        server.configuration.connectionLimits.bodyTimeout = timeouts
        server.configuration.connectionLimits.idleTimeout = timeouts
        server.configuration.connectionLimits.linger = .milliseconds(200)
        server.configuration.connectionLimits.maximumConnections = maximumConnections
        return server
    }

    static let notifyHead = "POST /api/push/notify HTTP/1.1\r\nHost: herald\r\nContent-Type: application/json\r\n"

    @Test(
        "A client that stalls is answered 408 and disconnected",
        arguments: [
            ("sends nothing", ""),
            ("half a request line", "GET /heal"),
            ("half a head", "GET /healthz HTTP/1.1\r\nHost: herald\r\n"),
            ("fewer body bytes than Content-Length", notifyHead + "Content-Length: 100\r\n\r\n{\"user_id\":"),
            ("a chunked body that never ends", notifyHead + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"),
        ])
    func stalledClientsAreDisconnected(_ variant: String, _ bytes: String) async throws {
        try await Self.server().run { client in
            let connection = try RawConnection(port: try #require(client.port))
            connection.send(bytes)
            let (received, closed) = await connection.readUntilClosed()
            #expect(closed, "\(variant): the connection is still open")
            let answers = RawAnswer.all(in: received)
            #expect(answers.count == 1, "\(variant)")
            #expect(answers.first?.status == 408, "\(variant)")
            #expect(answers.first?.headers["connection"] == "close")
            let body = try JSONValue.decode(Data((answers.first?.body ?? "").utf8)).objectValue
            #expect(body?["code"] == "request_timeout", "\(variant)")
        }
    }

    @Test(
        "What the HTTP parser rejects is answered 400 in JSON, then the connection closes",
        arguments: [
            ("a request line that is not HTTP", "GARBAGE\r\n\r\n"),
            ("an unknown Transfer-Encoding", notifyHead + "Transfer-Encoding: gzip, zigzag\r\n\r\n"),
            ("a chunk size that is not hexadecimal", notifyHead + "Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n"),
            ("a Content-Length that is not a number", notifyHead + "Content-Length: many\r\n\r\n"),
        ])
    func parserErrorsAreJSONAnswers(_ variant: String, _ bytes: String) async throws {
        try await Self.server(timeouts: .seconds(60)).run { client in
            let connection = try RawConnection(port: try #require(client.port))
            connection.send(bytes)
            let (received, closed) = await connection.readUntilClosed()
            #expect(closed, "\(variant): the connection is still open")
            let answers = RawAnswer.all(in: received)
            #expect(answers.map(\.status) == [400], "\(variant)")
            #expect(answers.first?.headers["content-type"]?.hasPrefix("application/json") == true)
            let body = try JSONValue.decode(Data((answers.first?.body ?? "").utf8)).objectValue
            #expect(body?["code"] == "malformed_http", "\(variant)")
            #expect(body?["error"]?.stringValue?.isEmpty == false)
        }
    }

    @Test("A request pipelined before bad bytes is answered first, then the 400")
    func pipelinedRequestsAreAnsweredBeforeTheParserError() async throws {
        try await Self.server(timeouts: .seconds(60)).run { client in
            let connection = try RawConnection(port: try #require(client.port))
            connection.send("GET /healthz HTTP/1.1\r\nHost: herald\r\n\r\nGARBAGE\r\n\r\n")
            let (received, closed) = await connection.readUntilClosed()
            #expect(closed)
            let answers = RawAnswer.all(in: received)
            #expect(answers.map(\.status) == [200, 400])
            #expect(answers.first?.body == #"{"status":"ok"}"#)
            #expect(answers.last?.body.contains("malformed_http") == true)
        }
    }

    @Test("An oversized upload is answered 413 and its connection is released, not leaked")
    func oversizedUploadsDoNotLeakConnections() async throws {
        // Three connections at most: if any of the five refused uploads kept its connection, /healthz would get 503.
        try await Self.server(maximumConnections: 3, timeouts: .seconds(60)).run { client in
            let port = try #require(client.port)
            var uploads: [RawConnection] = []  // kept open by the client, as an attacker would
            for _ in 0..<5 {
                // A 503 means the previous connections are not closed yet (each lingers 200 ms): try again shortly.
                var answer: RawAnswer?
                var upload: RawConnection?
                for _ in 0..<50 where answer == nil || answer?.status == 503 {
                    if answer != nil { try await Task.sleep(for: .milliseconds(100)) }
                    let connection = try RawConnection(port: port)
                    connection.send(Self.notifyHead + "Content-Length: 2000000\r\n\r\n")
                    connection.send([UInt8](repeating: UInt8(ascii: "x"), count: 200_000))
                    let (received, closed) = await connection.readUntilClosed()
                    #expect(closed)
                    answer = RawAnswer.all(in: received).first
                    upload = connection
                }
                #expect(answer?.status == 413)
                #expect(answer?.headers["connection"] == "close")
                #expect(answer?.body.contains("body_too_large") == true)
                if let upload { uploads.append(upload) }
            }
            // Every refused upload's connection is released (after its 200 ms linger) although the client keeps its end
            // open: with five leaked connections and a cap of three, /healthz would get 503 for ever.
            let statuses = try await Self.healthUntilAnswered(port: port)
            #expect(statuses.last == 200, "\(statuses)")
            #expect(uploads.count == 5)
        }
    }

    @Test("One connection over the cap is answered 503 and closed; a freed slot is used again")
    func connectionsOverTheCapAreRefused() async throws {
        try await Self.server(maximumConnections: 2, timeouts: .seconds(60)).run { client in
            let port = try #require(client.port)
            // Keep-alive connections until one is refused (the test client may hold one of the two itself).
            var held: [RawConnection] = []
            var refusal: RawAnswer?
            while refusal == nil, held.count < 3 {
                let connection = try RawConnection(port: port)
                connection.send("GET /healthz HTTP/1.1\r\nHost: herald\r\n\r\n")
                let answer = try #require(RawAnswer.all(in: Array(await connection.read(until: "}").utf8)).first)
                if answer.status == 503 {
                    refusal = answer
                    #expect(await connection.readUntilClosed().closed)
                } else {
                    #expect(answer.status == 200)
                    held.append(connection)
                }
            }
            let answer = try #require(refusal, "three connections were accepted under a cap of two")
            #expect((1...2).contains(held.count))
            #expect(answer.headers["retry-after"] != nil)
            #expect(answer.headers["connection"] == "close")
            #expect(answer.body.contains("too_many_connections"))
            held.removeAll()  // closes them
            // The slot is free once the server has seen the closes; until then the answer is still 503.
            let statuses = try await Self.healthUntilAnswered(port: port)
            #expect(statuses.last == 200, "\(statuses)")
            #expect(Set(statuses).isSubset(of: [503, 200]))
        }
    }

    @Test("A keep-alive connection left idle after its answer is closed without a word")
    func idleKeepAliveConnectionsAreClosed() async throws {
        var server = try Self.server()
        // Only the idle timeout is under test: a header timeout of 1 s answered 408 before a busy machine read the request.
        server.configuration.connectionLimits.headerTimeout = .seconds(60)
        try await server.run { client in
            let connection = try RawConnection(port: try #require(client.port))
            connection.send("GET /healthz HTTP/1.1\r\nHost: herald\r\n\r\n")
            let (received, closed) = await connection.readUntilClosed()
            #expect(closed)
            #expect(RawAnswer.all(in: received).map(\.status) == [200])
        }
    }

    @Test("SIGTERM stops the server within the shutdown timeout although a client holds a half-sent head")
    func shutdownIsBounded() async throws {
        // Not the runner's HERALD_ variables (CI sets HERALD_TEST_POSTGRES_URL, which `herald serve` does not know).
        let herald = try await HeraldProcess(environment: HeraldProcess.serveEnvironment(["HERALD_SHUTDOWN_TIMEOUT": "1"]))
        let port = try await herald.port()
        let stalled = try RawConnection(port: port)
        stalled.send("POST /api/push/notify HTTP/1.1\r\nHost: herald\r\nContent-")
        let busy = try RawConnection(port: port)
        busy.send(Self.notifyHead + "Content-Length: 100\r\n\r\n{")
        try await Task.sleep(for: .milliseconds(100))
        herald.kill(SIGTERM)
        let exited = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                _ = await herald.waitForExit()
                return true
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(30))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        #expect(exited, "herald serve still runs 30 s after SIGTERM:\n\(herald.log)")
        #expect(await stalled.readUntilClosed(within: 5).closed)
    }

    @Test("A WebSocket client frame without a mask closes the socket with 1002")
    func unmaskedWebSocketFramesAreProtocolErrors() async throws {
        try await Self.server(timeouts: .seconds(60)).run { client in
            let connection = try await Self.webSocket(port: try #require(client.port))
            let payload = Array(#"{"id": 1, "type": "push_notification_confirm"}"#.utf8)
            connection.send([0x81, UInt8(payload.count)] + payload)  // FIN + text, no mask bit
            let (received, closed) = await connection.readUntilClosed()
            #expect(closed)
            #expect(Self.closeCode(in: received) == 1002)
        }
    }

    @Test("A WebSocket text message that is not UTF-8 closes the socket with 1007")
    func invalidUTF8TextClosesWith1007() async throws {
        try await Self.server(timeouts: .seconds(60)).run { client in
            let connection = try await Self.webSocket(port: try #require(client.port))
            connection.send(SilentWebSocketPeer.maskedTextFrame([0xFF, 0xFE, 0x7B, 0x7D]))
            let (received, closed) = await connection.readUntilClosed()
            #expect(closed)
            #expect(Self.closeCode(in: received) == 1007)
        }
    }

    @Test("A WebSocket connection outlives the HTTP timeouts")
    func webSocketsAreNotSubjectToHTTPTimeouts() async throws {
        try await Self.server().run { client in
            let connection = try await Self.webSocket(port: try #require(client.port))
            try await Task.sleep(for: .milliseconds(2_500))  // past the 1 s header, body and idle timeouts
            #expect(connection.send(SilentWebSocketPeer.maskedTextFrame(Array(#"{"id": 7, "type": "hello"}"#.utf8))))
            let answer = await connection.read(until: "unknown_command", within: 10)
            #expect(answer.contains(#""id":7"#))
        }
    }

    /// Asks for `/healthz` on a new connection until the answer is not 503 (at most 100 times, 100 ms apart); returns
    /// every status seen.
    static func healthUntilAnswered(port: Int) async throws -> [Int] {
        var statuses: [Int] = []
        while statuses.last == nil || statuses.last == 503, statuses.count < 100 {
            if !statuses.isEmpty { try await Task.sleep(for: .milliseconds(100)) }
            let connection = try RawConnection(port: port)
            connection.send("GET /healthz HTTP/1.1\r\nHost: herald\r\nConnection: close\r\n\r\n")
            statuses.append(RawAnswer.all(in: await connection.readUntilClosed().bytes).first?.status ?? 0)
        }
        return statuses
    }

    /// A raw connection upgraded to WebSocket (the 101 answer already read).
    ///
    /// The suite's servers give a request head 1 s from the connection opening. When the run starts, every test starts
    /// at once on two cores, and the server may read the upgrade request only later and answer it 408: the upgrade is
    /// then asked for again on a new connection (these tests are about what follows it).
    static func webSocket(port: Int) async throws -> RawConnection {
        for _ in 1..<5 {
            do {
                return try await SilentWebSocketPeer(port: port).connection
            } catch let error as RawConnectionError where error.message.contains(" 408 ") {
                continue
            }
        }
        return try await SilentWebSocketPeer(port: port).connection
    }

    /// The status code of the first close frame in `bytes` (server frames, unmasked).
    static func closeCode(in bytes: [UInt8]) -> Int? {
        var frames = bytes[...]
        while frames.count >= 2 {
            let opcode = frames[frames.startIndex] & 0x0F
            let length = Int(frames[frames.startIndex + 1] & 0x7F)
            guard length < 126, frames.count >= 2 + length else { return nil }
            if opcode == 0x8, length >= 2 {
                return Int(frames[frames.startIndex + 2]) << 8 | Int(frames[frames.startIndex + 3])
            }
            frames = frames.dropFirst(2 + length)
        }
        return nil
    }
}
