import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import Testing

/// Issue 41: PushWard's `pw1` envelope as `encrypted` (docs/e2e.md): its shape checked, carried unchanged by every
/// channel, the placeholder shown where Herald shows anything.
@Suite("End-to-end encrypted notifications")
struct E2EEncryptedTests {
    static let key = try! E2EKey(hex: "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")  // swiftlint:disable:this force_try
    /// PushWard's published vector (`ascii_minimal`).
    static let envelope =
        "pw1.767c0806.oKGio6Slpqeoqaqr-DhDOK4k53I0XIqFXerStl8L5wgFH2EUp_HSYIhOtPQU6R9X6oBtcwaIVw6kyen5OK3Vm_WWiP9w4ooFbGhar_XGOj1J"

    /// Malformed envelopes (the vectors' parse failures and more), each a 400 naming `encrypted`.
    static let malformed: [String] = [
        "42", "true", #"{"v": "pw1"}"#, #"["pw1"]"#, #""\#(envelope)=""#, #""\#(envelope.replacingOccurrences(of: "767c0806", with: "767C0806"))""#,
        #""pw2.767c0806.oKGio6Slpqeoqaqr-DhDOK4k53I0XIqFXerStl8L5wgFH2EUp_HSYIhOtPQU6R9X6oBtcwaIVw6k""#,
        #""pw1.767c0806.oKGio6Slpqeoqaqr-DhDOK4k53I0XIqFXerS""#, #""pw1.767c0806.oKGio6Slpqeoqaqr-DhDOK4k53I0XIqFXerStl8L5""#,
        #""pw1.767c0806.oKGio6Slpqeoqaqr+DhDOK4k53I0XIqFXerStl8L5wgFH2EUp/HSYIhOt""#, #""pw1.\#(String(repeating: "A", count: 60))""#,
        #""pw1.767c0806.\#(String(repeating: "A", count: 3060))""#, #""pw1.767c0806.\#(String(repeating: "A", count: 41))B""#,
        #""pw1.767c0806.\u00e9\#(String(repeating: "A", count: 40))""#, #""pw1.767c0806..\#(String(repeating: "A", count: 40))""#,
    ]

    @Test(arguments: malformed)
    func aMalformedEnvelopeIsA400NamingTheMember(_ value: String) async throws {
        let server = try TestServer()
        try await server.run { client in
            let owner = try await client.register()
            let token = try await client.createToken(for: owner)
            let pushWard = try await client.sendAction(token.bearer, body: #"{"title": "New alert", "body": "Open the app", "encrypted": \#(value)}"#)
            #expect(pushWard.status == .badRequest, "\(value)")
            #expect(try pushWard.json()["field"] == "encrypted", "\(value)")
            let camera = try await client.notify(owner.userID, extra: #", "encrypted": \#(value)"#)
            #expect(camera.status == .badRequest, "\(value)")
            #expect(try camera.json()["field"] == "encrypted", "\(value)")
        }
    }

    /// `""` and `null` are absent, as for every optional member of both dialects.
    @Test(arguments: [#""""#, "null"]) func anEmptyEnvelopeIsAbsent(_ value: String) async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let owner = try await client.register(token: Fixtures.apnsToken(0x40))
            let response = try await client.notify(owner.userID, extra: #", "encrypted": \#(value)"#)
            #expect(response.status == .created)
            let push = try #require(apns.production.acceptedPushes.first)
            #expect(try JSONValue.decode(push.body).objectValue?["encrypted"] == nil)
        }
        try await apns.shutdown()
    }

    @Test func aClearURLBesideAnEnvelopeIsRefused() async throws {
        let server = try TestServer()
        try await server.run { client in
            let token = try await client.createToken(for: try await client.register())
            let response = try await client.sendAction(
                token.bearer, body: #"{"title": "New alert", "body": "Open", "url": "https://x.example/", "encrypted": "\#(Self.envelope)"}"#)
            #expect(response.status == .badRequest)
            #expect(try response.json()["field"] == "url")
        }
    }

    /// Issue 41, done means: a PushWard-style request reaches the APNs double with the envelope byte for byte,
    /// `mutable-content: 1` and the placeholder as the alert.
    @Test func aPushWardRequestReachesAPNsWithTheEnvelopeByteForByte() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let owner = try await client.register(token: Fixtures.apnsToken(0x41))
            let token = try await client.createToken(for: owner)
            let response = try await client.sendAction(
                token.bearer, body: #"{"title": "New alert", "body": "Open the app", "encrypted": "\#(Self.envelope)"}"#)
            #expect(response.status == .created)
            let id = try #require(try response.json()["id"]?.stringValue)
            let push = try #require(apns.production.acceptedPushes.first)
            #expect(
                String(decoding: push.body, as: UTF8.self)
                    == #"{"aps":{"alert":{"body":"Open the app","title":"New alert"},"interruption-level":"active","mutable-content":1,"#
                    + #""sound":"default"},"encrypted":"\#(Self.envelope)"}"#)
            let sent = try #require(try JSONValue.decode(push.body).objectValue?["encrypted"]?.stringValue)
            #expect(try Self.key.open(E2EEnvelope(sent)).title == "Disk full", "the device opens what Herald carried")

            // The status API names the key, nothing more.
            let status = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: owner.basic)
            #expect(try status.json()["encrypted_key_id"] == "767c0806")
        }
        try await apns.shutdown()
    }

    @Test func theCameraAppsAPICarriesItToFCMAsDataOnly() async throws {
        let push = try await FCMTestServer.start()
        try await push.server.run { client in
            let device = try await client.registerFCM(token: Fixtures.fcmToken(0x41))
            let response = try await client.notify(device.userID, title: "Camera", body: "Motion", extra: #", "encrypted": "\#(Self.envelope)""#)
            #expect(response.status == .created)
            let message = try #require(await push.acceptedMessage(to: Fixtures.fcmToken(0x41))).message
            #expect(message["notification"] == nil, "data-only: only the app can open it")
            let data = try #require(message["data"]?.objectValue)
            #expect(data["encrypted"]?.stringValue == Self.envelope)
            #expect(data["title"] == "Camera" && data["body"] == "Motion")
        }
        try await push.shutdown()
    }

    @Test func webPushCarriesItInsideRFC8291() async throws {
        let push = try await WebPushTestServer.start()
        let subscription = push.double.makeSubscription()
        try await push.server.run { client in
            let device = try await client.registerWebPush(subscription)
            let token = try await client.createToken(for: device)
            let response = try await client.sendAction(
                token.bearer, body: #"{"title": "New alert", "body": "Open the app", "encrypted": "\#(Self.envelope)"}"#)
            #expect(response.status == .created)
            let message = try #require(await push.received(for: subscription))
            #expect(message.json["encrypted"]?.stringValue == Self.envelope)
            #expect(message.json["title"] == "New alert")

            // The inbox (the web app opens it there too) holds the placeholder and the envelope.
            let inbox = try await client.execute(uri: "/api/push/notifications", method: .get, headers: device.basic)
            guard case .array(let items)? = try inbox.json()["notifications"] else {
                Issue.record("no notifications array")
                return
            }
            let item = try #require(items.first?.objectValue)
            #expect(item["title"] == "New alert")
            #expect(item["encrypted"]?.stringValue == Self.envelope)
        }
        try await push.shutdown()
    }
}
