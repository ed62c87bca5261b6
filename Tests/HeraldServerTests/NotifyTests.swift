import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Testing

/// The seed's examples, verbatim apart from the USER_ID.
enum SeedExamples {
    static let live = """
        {
        "user_id": "YOUR_USER_ID",
        "title": "Bird detected",
        "body": "Garden",
        "snapshot": { "type": "live" },
        "open": { "type": "live", "camera_name": "Garden" }
        }
        """
    static let frigateEvent = """
        {
        "user_id": "YOUR_USER_ID",
        "title": "Person detected",
        "body": "Front Door",
        "snapshot": { "type": "frigate_event", "id": "1739987.123-abcdef" },
        "open": { "type": "frigate_event", "id": "1739987.123-abcdef" }
        }
        """
    static let frigateReview = """
        {
        "user_id": "YOUR_USER_ID",
        "title": "Review item detected",
        "body": "Front Door",
        "notification_id": "review-123",
        "snapshot": { "type": "frigate_review", "id": "review-123" },
        "open": { "type": "frigate_review", "id": "review-123" }
        }
        """
    /// The `rest_command` payload as Home Assistant renders it when `notification_id` is not given and
    /// `snapshot`/`open` are undefined (`tojson` of None → null).
    static let restCommandWithoutExtras = """
        {
        "user_id": "YOUR_USER_ID",
        "title": "Motion detected",
        "body": "Garden",
        "notification_id": "",
        "snapshot": null,
        "open": null
        }
        """
    /// The `rest_command` payload for the live-snapshot automation.
    static let restCommandLive = """
        {
        "user_id": "YOUR_USER_ID",
        "title": "Motion detected",
        "body": "Garden",
        "notification_id": "",
        "snapshot": {"type": "live"},
        "open": {"type": "live", "camera_name": "Garden"}
        }
        """

    static func filled(_ template: String, _ userID: String) -> String {
        template.replacingOccurrences(of: "YOUR_USER_ID", with: userID)
    }
}

@Suite("POST /api/push/notify")
struct NotifyTests {
    @Test(arguments: [
        (SeedExamples.live, #"{"aps":{"alert":{"body":"Garden","title":"Bird detected"},"mutable-content":1,"sound":"default"},"open":{"camera_name":"Garden","type":"live"},"snapshot":{"type":"live"}}"#, nil as String?),
        (SeedExamples.frigateEvent, #"{"aps":{"alert":{"body":"Front Door","title":"Person detected"},"mutable-content":1,"sound":"default"},"open":{"id":"1739987.123-abcdef","type":"frigate_event"},"snapshot":{"id":"1739987.123-abcdef","type":"frigate_event"}}"#, nil),
        (SeedExamples.frigateReview, #"{"aps":{"alert":{"body":"Front Door","title":"Review item detected"},"mutable-content":1,"sound":"default"},"notification_id":"review-123","open":{"id":"review-123","type":"frigate_review"},"snapshot":{"id":"review-123","type":"frigate_review"}}"#, "review-123"),
        (SeedExamples.restCommandWithoutExtras, #"{"aps":{"alert":{"body":"Garden","title":"Motion detected"},"sound":"default"}}"#, nil),
        (SeedExamples.restCommandLive, #"{"aps":{"alert":{"body":"Garden","title":"Motion detected"},"mutable-content":1,"sound":"default"},"open":{"camera_name":"Garden","type":"live"},"snapshot":{"type":"live"}}"#, nil),
    ])
    func seedExamplesAreAcceptedAndStoredAsDocumented(example: String, payload: String, collapseID: String?) async throws {
        let server = try TestServer()
        let (registration, id) = try await server.run { client in
            let registration = try await client.register()
            let response = try await client.post("/api/push/notify", SeedExamples.filled(example, registration.userID))
            #expect(response.status == .created)
            let json = try response.json()
            // No APNs key is configured in this server: stored and queued, with a warning saying why.
            #expect(json["status"] == "queued")
            #expect(json["warning"]?.stringValue?.contains("No delivery provider") == true)
            #expect(json["truncated"] == false)
            let id = try #require(json["id"]?.stringValue.flatMap(UUID.init(uuidString:)))
            return (registration, id)
        }
        let stored = try #require(try await server.openStore().notification(id: id))
        #expect(String(decoding: stored.payload, as: UTF8.self) == payload)
        #expect(stored.collapseID == collapseID)
        #expect(stored.pushType == .alert)
        #expect(stored.priority == 10)
        #expect(stored.status == .pending)
        _ = registration
    }

    @Test(arguments: [
        (#""title": "T", "body": "B""#, "user_id"),
        (#""user_id": "abc", "title": "T", "body": "B""#, "user_id"),
        (#""user_id": "USER", "body": "B""#, "title"),
        (#""user_id": "USER", "title": "T""#, "body"),
        (#""user_id": "USER", "title": 1, "body": "B""#, "title"),
        (#""user_id": "USER", "title": "T", "body": ["B"]"#, "body"),
        (#""user_id": "USER", "title": "T", "body": "B", "notification_id": 5"#, "notification_id"),
        (#""user_id": "USER", "title": "T", "body": "B", "notification_id": "\#(String(repeating: "x", count: 65))""#, "notification_id"),
        (#""user_id": "USER", "title": "T", "body": "B", "notification_id": "\#(String(repeating: "é", count: 33))""#, "notification_id"),
        (#""user_id": "USER", "title": "T", "body": "B", "snapshot": "live""#, "snapshot"),
        (#""user_id": "USER", "title": "T", "body": "B", "snapshot": {}"#, "snapshot.type"),
        (#""user_id": "USER", "title": "T", "body": "B", "snapshot": {"type": "gif"}"#, "snapshot.type"),
        (#""user_id": "USER", "title": "T", "body": "B", "snapshot": {"type": "frigate_event"}"#, "snapshot.id"),
        (#""user_id": "USER", "title": "T", "body": "B", "snapshot": {"type": "frigate_review", "id": ""}"#, "snapshot.id"),
        (#""user_id": "USER", "title": "T", "body": "B", "snapshot": {"type": "url"}"#, "snapshot.url"),
        (#""user_id": "USER", "title": "T", "body": "B", "snapshot": {"type": "url", "url": "ftp://x/y.jpg"}"#, "snapshot.url"),
        (#""user_id": "USER", "title": "T", "body": "B", "snapshot": {"type": "url", "url": "not a url"}"#, "snapshot.url"),
        (#""user_id": "USER", "title": "T", "body": "B", "snapshot": {"type": "live"}"#, "open"),
        (#""user_id": "USER", "title": "T", "body": "B", "snapshot": {"type": "live"}, "open": {"type": "frigate_event", "id": "1"}"#, "open"),
        (#""user_id": "USER", "title": "T", "body": "B", "open": {"type": "live"}"#, "open.camera_id"),
        (#""user_id": "USER", "title": "T", "body": "B", "open": {"type": "frigate_review"}"#, "open.id"),
        (#""user_id": "USER", "title": "T", "body": "B", "open": {"type": "url"}"#, "open.type"),
        (#""user_id": "USER", "title": "T", "body": "B", "open": [1]"#, "open"),
    ])
    func everyRuleIsA400NamingTheField(members: String, field: String) async throws {
        let server = try TestServer()
        try await server.run { client in
            let registration = try await client.register()
            let body = "{" + members.replacingOccurrences(of: "USER", with: registration.userID) + "}"
            let response = try await client.post("/api/push/notify", body)
            #expect(response.status == .badRequest, "\(body)")
            let json = try response.json()
            #expect(json["field"] == .string(field), "\(body)")
            #expect(json["error"]?.stringValue?.isEmpty == false)
        }
    }

    @Test func validSnapshotAndOpenVariantsAndExtraFieldsAreAccepted() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let registration = try await client.register()
            let alert: JSONValue = ["title": "Motion", "body": "Garden"]
            // What reaches the device: unknown members are dropped, "" and null are absent.
            for (extra, payload) in [
                (#", "snapshot": {"type": "url", "url": "https://example.com/a.jpg"}, "unknown": [1, 2]"#,
                 ["aps": ["alert": alert, "sound": "default", "mutable-content": 1], "snapshot": ["type": "url", "url": "https://example.com/a.jpg"]] as JSONValue),
                (#", "open": {"type": "live", "camera_id": "cam1"}, "snapshot": {"type": "live"}"#,
                 ["aps": ["alert": alert, "sound": "default", "mutable-content": 1], "snapshot": ["type": "live"], "open": ["type": "live", "camera_id": "cam1"]]),
                (#", "snapshot": {"type": "live"}, "open": {"type": "live", "camera_name": "Garden"}, "notification_id": null"#,
                 ["aps": ["alert": alert, "sound": "default", "mutable-content": 1], "snapshot": ["type": "live"], "open": ["type": "live", "camera_name": "Garden"]]),
                (#", "snapshot": "", "open": "", "notification_id": "", "extra": {"nested": true}"#,
                 ["aps": ["alert": alert, "sound": "default"]]),
            ] {
                let response = try await client.notify(registration.userID.uppercased(), extra: extra)
                #expect(response.status == .created, "\(extra)")
                let push = await apns.acceptedPush(id: try response.json()["id"]?.stringValue)
                #expect(try push.map { try JSONValue.decode($0.body) } == payload, "\(extra)")
                #expect(push?.header("apns-collapse-id") == nil, "\(extra)")
            }
        }
        try await apns.shutdown()
    }

    @Test func unknownUserIs404() async throws {
        try await TestServer().run { client in
            let response = try await client.notify(Secrets.random256BitHex())
            #expect(response.status == .notFound)
            #expect(try response.json()["field"] == "user_id")
            // No device, no quota to report.
            #expect(response.rateLimit == nil)
        }
    }

    @Test func theSenderMayUseABearerHeaderInstead() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let registration = try await client.register(token: Fixtures.apnsToken(0x71))
            // Without user_id, and with the empty user_id Home Assistant's rest_command renders.
            for body in [#"{"title": "T", "body": "B"}"#, #"{"user_id": "", "title": "T2", "body": "B2"}"#] {
                let response = try await client.post("/api/push/notify", body, headers: registration.bearer)
                #expect(response.status == .created, "\(body)")
                let push = await apns.acceptedPush(id: try response.json()["id"]?.stringValue)
                #expect(push?.path == "/3/device/\(Fixtures.apnsToken(0x71))", "\(body)")
                let alert = try push.flatMap { try JSONValue.decode($0.body).objectValue?["aps"]?.objectValue?["alert"] }
                #expect(alert == (body.contains("T2") ? ["title": "T2", "body": "B2"] : ["title": "T", "body": "B"]))
            }
        }
        try await apns.shutdown()
    }

    @Test func malformedAndOversizedBodies() async throws {
        try await TestServer().run { client in
            let malformed = try await client.post("/api/push/notify", #"{"user_id": "#)
            #expect(malformed.status == .badRequest)
            #expect(try malformed.json()["field"] == "$")
            #expect(malformed.rateLimit == nil)

            // A key given twice is refused, naming the key (parsers disagree on which value wins).
            let registration = try await client.register()
            let twice = try await client.post(
                "/api/push/notify", #"{"user_id": "\#(registration.userID)", "title": "a", "title": "b", "body": "c"}"#)
            #expect(twice.status == .badRequest)
            #expect(try twice.json()["code"] == "malformed_json")
            let message = try twice.json()["error"]?.stringValue ?? ""
            #expect(message.contains(#""title" appears twice"#), "\(message)")

            let huge = String(repeating: "x", count: 70_000)
            let oversized = try await client.post("/api/push/notify", #"{"title": "T", "body": "\#(huge)"}"#)
            #expect(oversized.status == .contentTooLarge)
            #expect(try oversized.json()["code"] == "body_too_large")
        }
    }

    @Test func aBodyTooLongForAPNsIsShortenedAtACharacterBoundary() async throws {
        let server = try TestServer()
        let id = try await server.run { client in
            let registration = try await client.register()
            let response = try await client.notify(registration.userID, body: String(repeating: "🐦 bird ", count: 700))
            #expect(response.status == .created)
            let json = try response.json()
            #expect(json["truncated"] == true)
            return try #require(json["id"]?.stringValue.flatMap(UUID.init(uuidString:)))
        }
        let stored = try #require(try await server.openStore().notification(id: id))
        #expect(stored.payload.count <= 4096)
        #expect(stored.payload.count > 4000)
        let payload = try JSONValue.decode(stored.payload)
        let body = try #require(payload.objectValue?["aps"]?.objectValue?["alert"]?.objectValue?["body"]?.stringValue)
        #expect(body.hasSuffix("…"))
        #expect(String(repeating: "🐦 bird ", count: 700).hasPrefix(String(body.dropLast())))
    }

    @Test func aNotificationThatCannotFitIsRefused() async throws {
        try await TestServer().run { client in
            let registration = try await client.register()
            let response = try await client.notify(registration.userID, title: String(repeating: "t", count: 4200))
            #expect(response.status == .badRequest)
            #expect(try response.json()["code"] == "payload_too_large")
            // Refused after the device was found: its quota (untouched) is in the headers.
            #expect(response.rateLimit == .init(limit: 150, remaining: 150))
        }
    }

    @Test func theDailyLimitAnswers429WithCountsAndRetryAfter() async throws {
        let clock = TestClock(Date(timeIntervalSince1970: 1_763_812_800))  // 2025-11-22T12:00:00Z
        try await TestServer(dailyLimit: 2, clock: clock).run { client in
            let registration = try await client.register()
            let first = try await client.notify(registration.userID)
            #expect(first.headers[.init("RateLimit-Limit")!] == "2")
            #expect(first.headers[.init("RateLimit-Remaining")!] == "1")
            #expect(first.headers[.init("RateLimit-Reset")!] == "43200")
            #expect(try await client.notify(registration.userID).status == .created)

            let refused = try await client.notify(registration.userID)
            #expect(refused.status == .tooManyRequests)
            #expect(refused.headers[.retryAfter] == "43200")
            let json = try refused.json()
            #expect(json["code"] == "rate_limited")
            #expect(json["rateLimits"] == [
                "attempts": 3, "successful": 2, "errors": 0, "total": 2, "maximum": 2, "remaining": 0,
                "resetsAt": "2025-11-23T00:00:00.000Z",
            ])

            clock.advance(by: 43_200)
            let nextDay = try await client.notify(registration.userID)
            #expect(nextDay.status == .created)
            #expect(try nextDay.json()["rateLimits"]?.objectValue?["successful"] == 1)
        }
    }

    @Test func theSenderAndTheOwnerCanReadANotificationsState() async throws {
        try await TestServer().run { client in
            let registration = try await client.register()
            let other = try await client.register(token: Fixtures.apnsToken(2))
            let sent = try await client.notify(registration.userID)
            let id = try #require(try sent.json()["id"]?.stringValue)

            let bySender = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: registration.bearer)
            #expect(bySender.status == .ok)
            let json = try bySender.json()
            #expect(json["status"] == "pending")
            #expect(json["attempts"] == 0)
            #expect(json["id"] == .string(id))

            let byOwner = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: registration.basic)
            #expect(byOwner.status == .ok)
            let token = try await client.createToken(for: registration)
            let byToken = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: token.bearer)
            #expect(byToken.status == .ok)
            let otherToken = try await client.createToken(for: other)
            for headers in [other.bearer, other.basic, otherToken.bearer, [:]] {
                let response = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: headers)
                #expect(response.status == .notFound)
            }
        }
    }
}
