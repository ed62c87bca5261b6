import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

/// Issue 13, item 5: a request id on every answer and log line, one access-log line per request, JSON logs.
@Suite("Operator logs")
struct OperatorLogTests {
    @Test("Every answer has an X-Request-ID, and each request one access line with method, route, status, duration")
    func accessLinesAndRequestIDs() async throws {
        let server = try TestServer()
        let log = RecordingLogHandler.Records()
        var logger = Logger(label: "herald") { _ in RecordingLogHandler(records: log) }
        logger.logLevel = .info
        let app = try await buildApplication(server.configuration, clock: server.clock, logger: logger)
        let stranger = Secrets.random256BitHex()
        try await PatientLiveTest.run(app) { client in
            let refused = try await client.notify(stranger)
            #expect(refused.status == .notFound)
            let health = try await client.execute(uri: "/healthz?probe=1", method: .get)
            let requestIDs = [refused, health].compactMap { $0.headers[HTTPField.Name("X-Request-ID")!] }
            #expect(requestIDs.count == 2)
            #expect(Set(requestIDs).count == 2)

            let lines = log.all.filter { $0.message == "Request" }
            let notifyLine = try #require(lines.first { $0.metadata["hb.request.id"] == requestIDs[0] })
            #expect(notifyLine.level == .info)
            #expect(notifyLine.metadata["method"] == "POST")
            #expect(notifyLine.metadata["route"] == "/api/push/notify")
            #expect(notifyLine.metadata["status"] == "404")
            #expect(Double(notifyLine.metadata["duration_ms"] ?? "") != nil)
            let healthLine = try #require(lines.first { $0.metadata["hb.request.id"] == requestIDs[1] })
            #expect(healthLine.metadata["route"] == "/healthz")  // the route, not the query
            #expect(healthLine.metadata["status"] == "200")
            // Never a credential: the USER_ID that was sent appears in no line.
            #expect(!log.all.contains { record in
                record.message.contains(stranger) || record.metadata.values.contains { $0.contains(stranger) }
            })
        }
    }

    @Test("HERALD_ACCESS_LOG=off drops the access lines but keeps X-Request-ID")
    func accessLogCanBeTurnedOff() async throws {
        var server = try TestServer()
        server.configuration.accessLog = false
        let log = RecordingLogHandler.Records()
        var logger = Logger(label: "herald") { _ in RecordingLogHandler(records: log) }
        logger.logLevel = .info
        let app = try await buildApplication(server.configuration, clock: server.clock, logger: logger)
        try await PatientLiveTest.run(app) { client in
            let health = try await client.execute(uri: "/healthz", method: .get)
            #expect(health.headers[HTTPField.Name("X-Request-ID")!]?.isEmpty == false)
            #expect(!log.messages.contains("Request"))
        }
    }

    @Test("HERALD_LOG_FORMAT=json: every line herald serve writes is one JSON object")
    func jsonLogs() async throws {
        let herald = try await HeraldProcess(environment: HeraldProcess.serveEnvironment(["HERALD_LOG_FORMAT": "json"]))
        let port = try await herald.port()
        let connection = try RawConnection(port: port)
        connection.send("GET /healthz HTTP/1.1\r\nHost: herald\r\nConnection: close\r\n\r\n")
        let answer = try #require(RawAnswer.all(in: await connection.readUntilClosed().bytes).first)
        let requestID = try #require(answer.headers["x-request-id"])
        herald.kill(SIGTERM)
        #expect(await herald.waitForExit() == 0)
        try await Task.sleep(for: .milliseconds(100))  // the pipe drains

        let lines = herald.log.split(separator: "\n").filter { !$0.isEmpty }
        #expect(lines.count >= 3)
        var objects: [JSONObject] = []
        for line in lines {
            let object = try JSONValue.decode(Data(line.utf8)).objectValue
            #expect(object != nil, "not a JSON object: \(line)")
            if let object { objects.append(object) }
        }
        for object in objects {
            #expect(object["time"]?.stringValue?.hasSuffix("Z") == true)
            #expect(object["level"]?.stringValue != nil)
            #expect(object["message"]?.stringValue != nil)
        }
        let access = try #require(objects.first { $0["message"] == "Request" && $0["hb.request.id"]?.stringValue == requestID })
        #expect(access["route"] == "/healthz")
        #expect(access["status"] == "200")
        #expect(access["level"] == "info")
    }
}
