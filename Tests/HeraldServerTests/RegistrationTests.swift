import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Testing

@Suite("Device registration")
struct RegistrationTests {
    @Test func registeringReturnsAFreshUserIDAndSecret() async throws {
        let server = try TestServer()
        let registrations = try await server.run { client in
            let first = try await client.register(token: Fixtures.apnsToken(1))
            let second = try await client.register(token: Fixtures.apnsToken(2), environment: "sandbox")
            for value in [first.userID, first.secret, second.userID, second.secret] {
                #expect(value.count == 64 && value == value.lowercased() && Secrets.isHex(value))
            }
            #expect(Set([first.userID, first.secret, second.userID, second.secret]).count == 4)
            return [first, second]
        }
        // Each device is stored under the hashes of its own USER_ID and secret.
        let store = try server.openStore()
        for (registration, environment) in zip(registrations, [PushEnvironment.production, .sandbox]) {
            let device = try #require(try await store.device(userIDHash: Secrets.hash(registration.userID)))
            #expect(device.secretHash == Secrets.hash(registration.secret))
            #expect(device.environment == environment)
        }
    }

    @Test func storesOnlyHashesAndTheNormalisedToken() async throws {
        let server = try TestServer()
        let registration = try await server.run { client in
            let registration = try await client.register(token: Fixtures.apnsToken(0xAB).uppercased(), environment: "sandbox")
            // While the server runs, the row may be in the write-ahead log only: read both files. The hashes are there
            // (so the files read are the ones that hold the device), the clear values in neither.
            let files = try Self.databaseFiles(server.databasePath)
            #expect(files.contains(Secrets.hash(registration.userID)) && files.contains(Secrets.hash(registration.secret)))
            #expect(!files.contains(registration.userID) && !files.contains(registration.secret))
            return registration
        }
        let store = try server.openStore()
        let device = try #require(try await store.device(userIDHash: Secrets.hash(registration.userID)))
        #expect(device.secretHash == Secrets.hash(registration.secret))
        #expect(device.token == Fixtures.apnsToken(0xAB))
        #expect(device.environment == .sandbox)
        #expect(device.platform == .apns)
        // After shutdown (the log checkpointed into the database file, or still beside it).
        let files = try Self.databaseFiles(server.databasePath)
        #expect(files.contains(Secrets.hash(registration.userID)))
        #expect(!files.contains(registration.userID) && !files.contains(registration.secret))
    }

    /// The SQLite database file and its write-ahead log (`-wal`, when there is one), as one text.
    static func databaseFiles(_ path: String) throws -> String {
        let database = try String(contentsOfFile: path, encoding: .isoLatin1)
        let log = FileManager.default.fileExists(atPath: path + "-wal") ? try String(contentsOfFile: path + "-wal", encoding: .isoLatin1) : ""
        return database + log
    }

    @Test func reRegistrationReplacesTheTokenAndKeepsTheCredentials() async throws {
        let server = try TestServer()
        let registration = try await server.run { client in
            let registration = try await client.register(token: Fixtures.apnsToken(1))
            let body = #"{"token": "\#(Fixtures.apnsToken(3))", "user_id": "\#(registration.userID.uppercased())", "device_secret": "\#(registration.secret)"}"#
            let response = try await client.post("/api/push/register", body)
            #expect(response.status == .ok)
            let json = try response.json()
            #expect(json["user_id"] == .string(registration.userID))
            #expect(json["device_secret"] == .string(registration.secret))

            // The same through Basic credentials.
            let basic = try await client.post("/api/push/register", #"{"token": "\#(Fixtures.apnsToken(4))"}"#, headers: registration.basic)
            #expect(basic.status == .ok)
            return registration
        }
        let device = try #require(try await server.openStore().device(userIDHash: Secrets.hash(registration.userID)))
        #expect(device.token == Fixtures.apnsToken(4))
    }

    @Test func reRegistrationRefusesWrongSecretsAndUnknownUsers() async throws {
        let server = try TestServer()
        try await server.run { client in
            let registration = try await client.register()
            let wrong = try await client.post(
                "/api/push/register",
                #"{"token": "\#(Fixtures.apnsToken(5))", "user_id": "\#(registration.userID)", "device_secret": "\#(Secrets.random256BitHex())"}"#)
            #expect(wrong.status == .forbidden)
            #expect(try wrong.json()["field"] == "device_secret")

            let unknown = try await client.post(
                "/api/push/register",
                #"{"token": "\#(Fixtures.apnsToken(5))", "user_id": "\#(Secrets.random256BitHex())", "device_secret": "\#(registration.secret)"}"#)
            #expect(unknown.status == .notFound)
            #expect(try unknown.json()["field"] == "user_id")

            let missingSecret = try await client.post(
                "/api/push/register", #"{"token": "\#(Fixtures.apnsToken(5))", "user_id": "\#(registration.userID)"}"#)
            #expect(missingSecret.status == .badRequest)
            #expect(try missingSecret.json()["field"] == "device_secret")
        }
    }

    @Test(arguments: [
        (#"{"token": "zz\#(String(repeating: "a", count: 62))"}"#, "token"),
        (#"{"token": "\#(String(repeating: "a", count: 62))"}"#, "token"),
        (#"{"token": "\#(String(repeating: "a", count: 65))"}"#, "token"),
        (#"{"token": 12}"#, "token"),
        (#"{}"#, "token"),
        (#"{"token": "\#(String(repeating: "a", count: 64))", "environment": "staging"}"#, "environment"),
        (#"{"token": "\#(String(repeating: "a", count: 64))", "platform": "windows"}"#, "platform"),
        (#"{"platform": "websocket", "token": "\#(String(repeating: "a", count: 64))"}"#, "token"),
        (#"[1, 2]"#, "$"),
        (#"{"token": "#, "$"),
    ])
    func malformedRegistrationsAre400NamingTheField(body: String, field: String) async throws {
        let server = try TestServer()
        try await server.run { client in
            let response = try await client.post("/api/push/register", body)
            #expect(response.status == .badRequest)
            let json = try response.json()
            #expect(json["field"] == .string(field))
            #expect(json["error"]?.stringValue?.isEmpty == false)
        }
    }

    @Test func websocketOnlyDevicesRegisterWithoutAToken() async throws {
        let server = try TestServer()
        let registration = try await server.run { client in
            let response = try await client.post("/api/push/register", #"{"platform": "websocket"}"#)
            #expect(response.status == .created)
            let json = try response.json()
            let registration = Registration(
                userID: try #require(json["user_id"]?.stringValue), secret: try #require(json["device_secret"]?.stringValue))
            // The credentials subscribe to the WebSocket channel, and a notification to the USER_ID arrives there.
            let socket = WebSocketTestClient(port: try #require(client.port))
            await socket.subscribe(registration, confirm: false)
            #expect(try await client.notify(registration.userID, title: "Doorbell").status == .created)
            let event = try #require(await socket.next()?["event"]?.objectValue)
            #expect(event["title"] == "Doorbell")
            await socket.close()
            return registration
        }
        let device = try #require(try await server.openStore().device(userIDHash: Secrets.hash(registration.userID)))
        #expect(device.platform == .websocket)
        #expect(device.token == nil)
    }

    @Test func deletingNeedsTheOwnersBasicCredentials() async throws {
        let server = try TestServer()
        try await server.run { client in
            let registration = try await client.register()
            let anonymous = try await client.execute(uri: "/api/push/register", method: .delete)
            #expect(anonymous.status == .unauthorized)
            #expect(anonymous.headers[.wwwAuthenticate]?.hasPrefix("Basic") == true)
            #expect(try anonymous.json()["code"] == "credentials_required")

            var wrong = registration
            wrong.secret = Secrets.random256BitHex()
            #expect(try await client.execute(uri: "/api/push/register", method: .delete, headers: wrong.basic).status == .forbidden)

            let deleted = try await client.execute(uri: "/api/push/register", method: .delete, headers: registration.basic)
            #expect(deleted.status == .noContent)
            #expect(try await client.notify(registration.userID).status == .notFound)
        }
    }

    @Test func devicesSurviveARestart() async throws {
        let first = try TestServer()
        let registration = try await first.run { client in try await client.register() }
        let second = try TestServer(databasePath: first.databasePath)
        try await second.run { client in
            let response = try await client.notify(registration.userID)
            #expect(response.status == .created)
        }
    }

    @Test func healthAndReadiness() async throws {
        try await TestServer().run { client in
            let health = try await client.execute(uri: "/healthz", method: .get)
            #expect(health.status == .ok)
            #expect(try health.json()["status"] == "ok")
            let ready = try await client.execute(uri: "/readyz", method: .get)
            #expect(ready.status == .ok)
            let missing = try await client.execute(uri: "/nothing/here", method: .get)
            #expect(missing.status == .notFound)
            #expect(try missing.json()["error"]?.stringValue?.isEmpty == false)
        }
    }
}
