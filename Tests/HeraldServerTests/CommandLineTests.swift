import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldTesting
import HummingbirdTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The README's quick start, with no APNs credentials: `herald register`, `herald listen`, a send, and the
/// notification appears in the listener.
@Suite("Command line clients", .serialized)
struct CommandLineTests {
    @Test func registerListenAndSendEndToEnd() async throws {
        var testServer = try TestServer()
        // `herald send` prints what the answer says: wait for the listener's confirmation however slow the machine.
        testServer.configuration.deliveryWait = APNsTestServer.outcomeWait
        try await testServer.run { client in
            let server = "http://127.0.0.1:\(try #require(client.port))"
            let registered = try await HeraldProcess.run(["register", "--server", server, "--json"])
            #expect(registered.status == 0, "\(registered.output)")
            let credentials = try #require(JSONValue.decode(Data(registered.output.utf8)).objectValue)
            let userID = try #require(credentials["user_id"]?.stringValue)
            let secret = try #require(credentials["device_secret"]?.stringValue)

            let listener = try await HeraldProcess(["listen", "--server", server, "--user-id", userID, "--device-secret", secret, "--json"])
            #expect(await listener.waitForOutput(containing: "listening for notifications"))

            let sent = try await client.notify(userID, title: "Person detected", body: "Front Door")
            let id = try #require(try sent.json()["id"]?.stringValue)
            #expect(await listener.waitForOutput(containing: #""title":"Person detected""#))
            #expect(listener.log.contains(id))

            // herald send, through the same listener; the listener confirms, so it is delivered.
            let viaCLI = try await HeraldProcess.run([
                "send", "--server", server, "--user-id", userID, "--title", "Review item detected", "--body", "Front Door",
                "--notification-id", "review-123", "--snapshot-type", "frigate_review", "--snapshot-id", "review-123",
                "--open-type", "frigate_review", "--open-id", "review-123",
            ])
            #expect(viaCLI.status == 0, "\(viaCLI.output)")
            #expect(viaCLI.output.hasPrefix("delivered "), "\(viaCLI.output)")
            #expect(await listener.waitForOutput(containing: #""notification_id":"review-123""#))

            #expect(try await eventually {
                try await client.execute(
                    uri: "/api/push/notifications/\(id)", method: .get, headers: [.authorization: "Bearer \(userID)"]
                ).json()["status"] == "delivered"
            })
            listener.kill(SIGTERM)
            _ = await listener.waitForExit()
        }
    }

    @Test func sendExitsNonZeroWithTheServersMessage() async throws {
        try await TestServer().run { client in
            let server = "http://127.0.0.1:\(try #require(client.port))"
            let unknown = try await HeraldProcess.run([
                "send", "--server", server, "--user-id", Secrets.random256BitHex(), "--title", "T", "--body", "B",
            ])
            #expect(unknown.status != 0)
            #expect(unknown.output.contains("404"))
            #expect(unknown.output.contains("No device is registered under this USER_ID."))

            let invalid = try await HeraldProcess.run([
                "send", "--server", server, "--user-id", Secrets.random256BitHex(), "--title", "T", "--body", "B",
                "--snapshot-type", "gif",
            ])
            #expect(invalid.status != 0)
            #expect(invalid.output.contains("snapshot.type"))
        }
    }

    @Test func listenStopsWhenTheCredentialsAreWrong() async throws {
        try await TestServer().run { client in
            let server = "http://127.0.0.1:\(try #require(client.port))"
            let registration = try await client.register()
            let refused = try await HeraldProcess.run([
                "listen", "--server", server, "--user-id", registration.userID, "--device-secret", Secrets.random256BitHex(),
            ])
            #expect(refused.status != 0)
            #expect(refused.output.contains("device secret does not match"))
        }
    }

    @Test func apnsCheckValidatesOfflineAndLimitsSetChangesTheStore() async throws {
        let key = TestKey()
        let directory = try TemporaryDirectory.make()
        let keyPath = try key.writeP8(in: directory)
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        environment.merge([
            "HERALD_APNS_KEY_PATH": keyPath, "HERALD_APNS_KEY_ID": key.keyID, "HERALD_APNS_TEAM_ID": key.teamID,
            "HERALD_APNS_TOPIC": "io.herald.app",
        ]) { _, new in new }
        let check = try await HeraldProcess(["apns", "check"], environment: environment)
        #expect(await check.waitForExit() == 0, "\(check.log)")
        #expect(check.log.contains("key id: \(key.keyID)"))
        #expect(check.log.contains("topic: io.herald.app"))
        #expect(!check.log.contains("PRIVATE KEY"))

        environment["HERALD_APNS_KEY_PATH"] = try TestKeys.writeFile(named: "not-a-key.p8", containing: "hello")
        let bad = try await HeraldProcess(["apns", "check"], environment: environment)
        #expect(await bad.waitForExit() != 0)
        #expect(bad.log.contains("HERALD_APNS_KEY_PATH:"))

        let server = try TestServer(dailyLimit: 1)
        let registration = try await server.run { client in try await client.register() }
        var storeEnvironment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        storeEnvironment["HERALD_DATABASE_URL"] = server.databasePath
        let set = try await HeraldProcess(["limits", "set", registration.userID, "5"], environment: storeEnvironment)
        #expect(await set.waitForExit() == 0, "\(set.log)")
        #expect(set.log.contains("set to 5"))
        try await server.run { client in
            let response = try await client.notify(registration.userID)
            #expect(response.headers[.init("RateLimit-Limit")!] == "5")
        }
    }

    @Test func tokenCreateTakesScopesAndSlugsAndTheTokenIsHeldToThem() async throws {
        let server = try TestServer()
        let registration = try await server.run { client in try await client.register() }
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        environment["HERALD_DATABASE_URL"] = server.databasePath
        let create = try await HeraldProcess(
            ["token", "create", "--user-id", registration.userID, "--name", "oven", "--scope", "activity:update", "--slug", "oven-*"],
            environment: environment)
        #expect(await create.waitForExit() == 0, "\(create.log)")
        let secret = try #require(create.log.split(separator: "\n").first { $0.hasPrefix("hrd_") }.map(String.init))
        let list = try await HeraldProcess(["token", "list", "--user-id", registration.userID], environment: environment)
        #expect(await list.waitForExit() == 0, "\(list.log)")
        #expect(list.log.contains("\tactivity:update\toven-*"))
        let refused = try await HeraldProcess(
            ["token", "create", "--user-id", registration.userID, "--name", "x", "--scope", "activity:write"], environment: environment)
        #expect(await refused.waitForExit() == 1)
        #expect(refused.log.contains("\"activity:write\" is not a scope"))
        try await server.run { client throws in
            #expect(try await client.sendAction([.authorization: "Bearer \(secret)"]).status == .forbidden)
            #expect(try await client.execute(uri: "/auth/me", method: .get, headers: [.authorization: "Bearer \(secret)"]).status == .ok)
        }
    }

    @Test func fcmCheckValidatesTheServiceAccountOfflineAndServeRefusesABadOneWithOneLine() async throws {
        let account = FCMTestServer.account
        let path = try TestKeys.writeFile(named: "service-account.json", containing: account.json(tokenURI: "https://oauth2.googleapis.com/token"))
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        environment["HERALD_FCM_SERVICE_ACCOUNT"] = path
        let check = try await HeraldProcess(["fcm", "check"], environment: environment)
        #expect(await check.waitForExit() == 0, "\(check.log)")
        #expect(check.log.contains("project: \(account.projectID)"))
        #expect(check.log.contains("client email: \(account.clientEmail)"))
        #expect(!check.log.contains("PRIVATE KEY"))

        // An APNs key where the service account belongs: serve stops with one line naming the option.
        environment["HERALD_FCM_SERVICE_ACCOUNT"] = try TestKeys.writeFile(named: "AuthKey.p8", containing: TestKey().p8PEM)
        environment["HERALD_DATABASE_URL"] = try TemporaryDirectory.make().appendingPathComponent("herald.sqlite").path
        environment["HERALD_PORT"] = "0"
        let serve = try await HeraldProcess(["serve"], environment: environment)
        #expect(await serve.waitForExit() != 0)
        #expect(serve.log.contains("HERALD_FCM_SERVICE_ACCOUNT: \(environment["HERALD_FCM_SERVICE_ACCOUNT"] ?? ""): is not a service-account JSON file"))

        let unconfigured = try await HeraldProcess(["fcm", "check"], environment: ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") })
        #expect(await unconfigured.waitForExit() != 0)
        #expect(unconfigured.log.contains("FCM is not configured"))
    }

    @Test func registerWithFCMRegistersAnFCMDeviceThatReceivesThroughFCM() async throws {
        let fcm = try await FCMTestServer.start()
        let token = Fixtures.fcmToken(40)
        try await fcm.server.run { client in
            let server = "http://127.0.0.1:\(try #require(client.port))"
            let registered = try await HeraldProcess.run(["register", "--server", server, "--fcm", "--token", token, "--json"])
            #expect(registered.status == 0, "\(registered.output)")
            let credentials = try #require(JSONValue.decode(Data(registered.output.utf8)).objectValue)
            let userID = try #require(credentials["user_id"]?.stringValue)
            #expect(try await client.notify(userID).json()["status"] == "delivered")
            #expect(await fcm.acceptedMessage(to: token) != nil)
            let refused = try await HeraldProcess.run(["register", "--server", server, "--fcm"])
            #expect(refused.status != 0)
            #expect(refused.output.contains("--fcm needs --token"))
        }
        try await fcm.shutdown()
    }
}
