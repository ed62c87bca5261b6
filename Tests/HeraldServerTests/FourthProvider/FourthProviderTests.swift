import Foundation
import HTTPTypes
import HeraldCore
import HeraldProviderKit
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import Testing

/// Issue 38, section 2: a provider is a module and one entry. ``PigeonModule``, which exists only in the tests, is
/// added to the catalog here and reaches registration, delivery, the status API, Home Assistant's dialect, the inbox
/// and the dashboard over real HTTP, with no change to a dialect, the store schema or a Core type.
@Suite("A fourth provider, added in a test")
struct FourthProviderTests {
    static func server() throws -> (server: TestServer, pigeons: FakeProvider, catalog: [ProviderEntry<HeraldConfiguration>]) {
        var server = try TestServer()
        server.configuration.adminToken = AdminDashboardTests.token
        let pigeons = FakeProvider(platform: PigeonModule.platform, otherwise: .delivered(providerMessageID: "pigeon-42"))
        let catalog = providerCatalog + [ProviderEntry(PigeonModule.self) { _ in PigeonSettings(fake: pigeons) }]
        return (server, pigeons, catalog)
    }

    @Test func itsDevicesRegisterByItsOwnRulesAndGetNotificationsOnEverySurface() async throws {
        let (server, pigeons, catalog) = try Self.server()
        let app = try await buildApplication(server.configuration, clock: server.clock, providers: catalog)
        try await PatientLiveTest.run(app) { client in
            // Registration: the platform is known from the catalog, the address is read by the module's rules.
            let unknown = try await client.post("/api/push/register", #"{"platform": "owl"}"#)
            #expect(unknown.status == .badRequest)
            #expect(try unknown.json()["error"] == #"platform must be one of apns, fcm, websocket, webpush, pigeon; got "owl"."#)
            let refused = try await client.post("/api/push/register", #"{"platform": "pigeon", "loft": "loft-7", "ring": "green"}"#)
            #expect(refused.status == .badRequest)
            #expect(try refused.json()["field"] == "ring")
            #expect(try refused.json()["error"] == "ring must be blue or red.")
            let created = try await client.post("/api/push/register", #"{"platform": "pigeon", "loft": "loft-7", "ring": "blue"}"#)
            #expect(created.status == .created)
            let registration = Registration(
                userID: try #require(try created.json()["user_id"]?.stringValue),
                secret: try #require(try created.json()["device_secret"]?.stringValue))

            // Delivery: the provider gets the device's address (token and its own data) and its renderer's payload.
            let sent = try await client.notify(registration.userID, title: "Door", body: "Opened")
            #expect(sent.status == .created)
            #expect(try sent.json()["status"] == "delivered")
            let id = try #require(try sent.json()["id"]?.stringValue)
            let carried = try #require(pigeons.sent.first)
            #expect(carried.device.platform == PigeonModule.platform)
            #expect(carried.device.address == PushAddress(token: "loft-7", data: "ring=blue"))
            #expect(try JSONValue.decode(carried.notification.payload) == .object(["slip": ["title": "Door", "body": "Opened"]]))

            // The status API: the provider's id, and under the provider's own name; no `apns_id`.
            let status = try await client.execute(uri: "/api/push/notifications/\(id)", method: .get, headers: registration.bearer)
            let statusJSON = try status.json()
            #expect(statusJSON["status"] == "delivered")
            #expect(statusJSON["provider_message_id"] == "pigeon-42")
            #expect(statusJSON["pigeon_id"] == "pigeon-42")
            #expect(statusJSON["apns_id"] == nil)

            // Home Assistant: no relay payload for this provider, so the call's title and message, and no provider's
            // raw part (no APNs payload for a device that is not on APNs).
            let relayed = try await client.post(
                "/api/push/homeassistant", homeAssistantBody(registration.userID, message: "Kettle boiled", title: "Kitchen"))
            #expect(relayed.status == .created)
            let relayedCarried = try #require(pigeons.sent.last)
            #expect(pigeons.sent.count == 2)
            #expect(relayedCarried.notification.content?.providerPayloads.isEmpty == true)
            #expect(try JSONValue.decode(relayedCarried.notification.payload) == .object(["slip": ["title": "Kitchen", "body": "Kettle boiled"]]))

            // The inbox lists both, as the web app's service worker reads them.
            let inbox = try await client.execute(uri: "/api/push/notifications", method: .get, headers: registration.basic)
            #expect(inbox.status == .ok)
            guard case .array(let listed)? = try inbox.json()["notifications"] else {
                Issue.record("no notifications in \(inbox.text)")
                return
            }
            let items = listed.compactMap(\.objectValue)
            // (Accepted in the same instant of the test clock: their order is not the point here.)
            #expect(Set(items.compactMap { $0["title"]?.stringValue }) == ["Kitchen", "Door"])
            #expect(items.contains { $0["id"] == .string(id) && $0["body"] == "Opened" && $0["status"] == "delivered" })

            // The dashboard counts the device under its platform and shows it without an environment.
            let session = try await client.adminLogin()
            let overview = try await client.execute(uri: "/admin", method: .get, headers: session.headers)
            #expect(overview.text.contains("<tr><td>pigeon</td><td>active</td><td class=\"n\">1</td></tr>"))
            let page = try await client.form("/admin/device", ["csrf": session.csrf, "user_id": registration.userID], session: session)
            #expect(page.status == .ok)
            #expect(page.text.contains("<dt>Platform</dt><dd>pigeon</dd>"))
            #expect(page.text.contains("<dt>Environment</dt><dd>–</dd>"))
        }
    }

    /// The words of a message are the device's provider's: a Web Push device is not told about APNs' limit; a
    /// WebSocket-only device, which gets APNs' payload, is.
    @Test func messagesNameTheProviderOfTheDevice() throws {
        let (server, _, catalog) = try Self.server()
        let profiles = ProviderProfiles(try catalog.map { try $0.profile(server.configuration) }, fallback: .apns)
        #expect(profiles.possessiveName(for: .webpush) == "Web Push's")
        #expect(profiles.possessiveName(for: .fcm) == "FCM's")
        #expect(profiles.possessiveName(for: .apns) == "APNs'")
        #expect(profiles.possessiveName(for: .websocket) == "APNs'")
        #expect(profiles.possessiveName(for: PigeonModule.platform) == "Pigeon Post's")
        #expect(profiles[.websocket] == nil)
        #expect(profiles.profile(for: .websocket)?.description.messageIDField == "apns_id")
    }
}
