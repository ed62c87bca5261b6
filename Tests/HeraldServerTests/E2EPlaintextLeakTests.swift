import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// Issue 41, done means: nothing in Herald's database, logs or metrics holds the plaintext of an encrypted
/// notification. Herald holds no key; this keeps it so if something ever tried to show more than the placeholder.
@Suite("End-to-end: no plaintext at rest")
struct E2EPlaintextLeakTests {
    @Test func theDatabaseTheLogsAndTheMetricsHoldNoPlaintext() async throws {
        let key = E2EKey.generate()
        // The fragments are words no log line holds by chance: not hex (a full run's logs once held "b81d" in a random
        // id) and six letters or more.
        let secret = E2EMessage(
            title: "Vault 7 alarm qv5kzw", subtitle: "Basement wj8xry", body: "Code ku0pgy entered at the back door",
            url: "https://nvr.example/private/zr9mxt")
        let envelope = try key.seal(secret)
        let plaintexts = [secret.title, secret.subtitle ?? "", secret.body, secret.url ?? "", "qv5kzw", "wj8xry", "ku0pgy", "zr9mxt"]

        let apns = try await APNsTestServer.start()
        let log = RecordingLogHandler.Records()
        var logger = Logger(label: "herald") { _ in RecordingLogHandler(records: log) }
        logger.logLevel = .trace
        let app = try await buildApplication(apns.server.configuration, clock: apns.server.clock, logger: logger)
        let metrics = try await PatientLiveTest.run(app) { client in
            let owner = try await client.register(token: Fixtures.apnsToken(0x4c))
            let token = try await client.createToken(for: owner)
            let pushWard = try await client.sendAction(
                token.bearer, body: #"{"title": "New alert", "body": "Open the app", "level": "critical", "encrypted": "\#(envelope.text)"}"#)
            #expect(pushWard.status == .created)
            let camera = try await client.notify(owner.userID, title: "Camera", body: "Motion", extra: #", "encrypted": "\#(envelope.text)""#)
            #expect(camera.status == .created)
            #expect(apns.production.acceptedPushes.count == 2)
            let response = try await client.execute(uri: "/metrics", method: .get)
            return String(decoding: response.body.readableBytesView, as: UTF8.self)
        }
        try await apns.shutdown()

        var database = Data()
        for suffix in ["", "-wal", "-shm", "-journal"] {
            if let bytes = FileManager.default.contents(atPath: apns.server.databasePath + suffix) { database.append(bytes) }
        }
        #expect(database.count > 0)
        #expect(database.range(of: Data(envelope.keyID.utf8)) != nil, "the envelope is stored, as sent")
        let lines = log.all.map { record in
            ([record.message] + record.metadata.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
        }
        #expect(!lines.isEmpty)
        for plaintext in plaintexts {
            #expect(database.range(of: Data(plaintext.utf8)) == nil, "database: \(plaintext)")
            #expect(!lines.contains { $0.contains(plaintext) }, "logs: \(plaintext)")
            #expect(!metrics.contains(plaintext), "metrics: \(plaintext)")
        }
        // The logs and the metrics name no envelope either: at most its key id.
        let sealedPart = String(envelope.text.dropFirst(13))
        #expect(!lines.contains { $0.contains(sealedPart) })
        #expect(!metrics.contains(sealedPart))
    }
}
