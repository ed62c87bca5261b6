import ArgumentParser
import Foundation
import HeraldCore
import Hummingbird
import Logging
import NIOCore

/// `herald-bench bare-server`: the HTTP stack's own limit. A bare Hummingbird 2 application with one route,
/// `POST /api/push/notify`, that reads and decodes the same JSON body as Herald (with the same decoder) and answers
/// 201 with a body of the same shape, without storing or delivering anything. The benchmark runs it as a child
/// process, as it runs Herald.
struct BareServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bare-server", abstract: "Run the bare Hummingbird baseline server (used by the benchmark).")

    @Option(help: "The port on 127.0.0.1 (0 for any free port).")
    var port = 0

    func run() async throws {
        LoggingSystem.bootstrap(StreamLogHandler.standardOutput)
        var logger = Logger(label: "bare")
        logger.logLevel = .info
        let router = Router()
        router.post("api/push/notify") { request, _ -> Response in
            let buffer = try await request.body.collect(upTo: 65_536)
            guard case .object(let object) = try JSONValue.decode(Data(buffer.readableBytesView)),
                object["user_id"]?.stringValue != nil, object["title"]?.stringValue != nil
            else {
                return Response(status: .badRequest)
            }
            let answer: JSONValue = [
                "id": .string(UUID.random().lowercasedText), "status": "delivered", "truncated": false,
                "rateLimits": [
                    "attempts": 1, "successful": 1, "errors": 0, "total": 1, "maximum": 150, "remaining": 149,
                    "resetsAt": "2026-01-01T00:00:00.000Z",
                ],
            ]
            return Response(
                status: .created, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: try answer.encoded())))
        }
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "bare"),
            logger: logger)
        try await app.runService()
    }
}
