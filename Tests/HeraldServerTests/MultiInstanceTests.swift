import Foundation
import HeraldCore
import HeraldTesting
import NIOHTTP1
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 11: several `herald serve` processes on one PostgreSQL database behave as one node.
@Suite("Several instances on PostgreSQL", .serialized)
struct MultiInstanceTests {
    /// Says loudly when these tests did not run; fails where they must (CI sets HERALD_REQUIRE_POSTGRES=1).
    @Test func theMultiInstanceTestsRanAgainstPostgreSQL() {
        guard HeraldCluster.postgresURL == nil else { return }
        if HeraldCluster.isPostgresRequired {
            Issue.record("PostgreSQL is required (HERALD_REQUIRE_POSTGRES=1) but HERALD_TEST_POSTGRES_URL is not set")
        } else {
            print("⚠️  Multi-instance tests DID NOT RUN: set HERALD_TEST_POSTGRES_URL (postgres://user@127.0.0.1:55432/postgres)")
        }
    }

    /// A client connected to instance B receives what instance A accepted; its confirmation counts wherever it lands
    /// (here on instance C); without one, the APNs fallback happens once.
    @Test(.enabled(if: HeraldCluster.postgresURL != nil))
    func theWebSocketChannelWorksAcrossInstances() async throws {
        // Long enough for a confirmation made through another socket on a loaded test machine.
        let cluster = try await HeraldCluster(count: 3, options: ["HERALD_WEBSOCKET_CONFIRM_TIMEOUT": "10"])
        let registered = try await clusterRequest(.POST, cluster.base(0) + "/api/push/register", body: #"{"token": "\#(Fixtures.apnsToken(0x31))"}"#)
        #expect(registered.status == 201)
        let device = Registration(
            userID: try #require(registered.json["user_id"]?.stringValue), secret: try #require(registered.json["device_secret"]?.stringValue))

        let onB = WebSocketTestClient(port: cluster.ports[1])
        await onB.subscribe(device)
        try await Task.sleep(for: .seconds(1))  // instance A hears of the client (LISTEN/NOTIFY)

        // Accepted by A, delivered by B, confirmed through C.
        let first = try await clusterRequest(
            .POST, cluster.base(0) + "/api/push/notify", body: #"{"user_id": "\#(device.userID)", "title": "Door", "body": "Open"}"#)
        #expect(first.status == 201)
        let firstID = try #require(first.json["id"]?.stringValue)
        let event = try #require(await onB.next(), "the client on instance B got the notification accepted by A")
        #expect(event["type"] == "event")
        let content = try #require(event["event"]?.objectValue)
        #expect(content["id"]?.stringValue == firstID)
        #expect(content["title"] == "Door")
        let confirmID = try #require(content["hass_confirm_id"]?.stringValue)
        let onC = WebSocketTestClient(port: cluster.ports[2])
        await onC.subscribe(device)
        onC.send(#"{"id": 2, "type": "push_notification_confirm", "confirm_id": "\#(confirmID)"}"#)
        #expect(await onC.next() == ["id": 2, "type": "result", "success": true])
        let delivered = await eventually {
            let status = try? await clusterRequest(
                .GET, cluster.base(0) + "/api/push/notifications/\(firstID)", headers: [basicAuthorization(device)])
            return status?.json["status"] == "delivered"
        }
        #expect(delivered, "the confirmation reached instance B through C")
        await onC.close()

        // Accepted by A, sent to the client on B, not confirmed: B falls back to APNs, once.
        try await Task.sleep(for: .seconds(1))  // A hears that the client on C left
        let second = try await clusterRequest(
            .POST, cluster.base(0) + "/api/push/notify", body: #"{"user_id": "\#(device.userID)", "title": "Garage", "body": "Open"}"#)
        let secondID = try #require(second.json["id"]?.stringValue)
        // Within the hand-over timeout even if A had not heard yet that C's client left (it would hand it to C first).
        let unconfirmed = try #require(await onB.next(within: 30))
        #expect(unconfirmed["event"]?.objectValue?["id"]?.stringValue == secondID)
        #expect(await eventually(attempts: 1_200) { cluster.apns.acceptedPushes.contains { $0.header("apns-id") == secondID } })
        try await Task.sleep(for: .seconds(3))  // a second fallback would have happened by now
        let pushes = cluster.apns.acceptedPushes.map { $0.header("apns-id") }
        #expect(pushes.filter { $0 == secondID }.count == 1, "one APNs fallback")
        #expect(!pushes.contains(firstID), "the confirmed notification never went to APNs")
        await onB.close()
        try await cluster.stop()
    }

    /// The daily limit is counted in the database: 15 sends at once, 5 to each of three instances, against a limit
    /// of 5, are 5 accepted and 10 refused.
    @Test(.enabled(if: HeraldCluster.postgresURL != nil))
    func theDailyLimitIsExactAcrossInstances() async throws {
        let cluster = try await HeraldCluster(count: 3, options: ["HERALD_RATE_LIMIT_DAILY": "5"])
        let registered = try await clusterRequest(.POST, cluster.base(0) + "/api/push/register", body: #"{"token": "\#(Fixtures.apnsToken(0x32))"}"#)
        let userID = try #require(registered.json["user_id"]?.stringValue)
        let statuses = try await withThrowingTaskGroup(of: UInt.self) { group in
            for index in 0..<15 {
                group.addTask {
                    try await clusterRequest(
                        .POST, cluster.base(index % 3) + "/api/push/notify",
                        body: #"{"user_id": "\#(userID)", "title": "Motion \#(index)", "body": "Yard"}"#
                    ).status
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses.filter { $0 == 201 }.count == 5)
        #expect(statuses.filter { $0 == 429 }.count == 10)
        try await cluster.stop()
    }

    /// A token revoked on one instance is refused by the others at once; a device registered again on one instance
    /// is seen with its new token by the others (their device caches are invalidated).
    @Test(.enabled(if: HeraldCluster.postgresURL != nil))
    func revocationsAndReRegistrationsReachEveryInstance() async throws {
        let cluster = try await HeraldCluster(count: 3)
        let registered = try await clusterRequest(.POST, cluster.base(0) + "/api/push/register", body: #"{"token": "\#(Fixtures.apnsToken(0x33))"}"#)
        let device = Registration(
            userID: try #require(registered.json["user_id"]?.stringValue), secret: try #require(registered.json["device_secret"]?.stringValue))
        let created = try await clusterRequest(
            .POST, cluster.base(0) + "/api/push/tokens", body: #"{"name": "Home Assistant"}"#, headers: [basicAuthorization(device)])
        #expect(created.status == 201)
        let token = try #require(created.json["token"]?.stringValue)
        let tokenID = try #require(created.json["id"]?.stringValue)
        let bearer = ("Authorization", "Bearer \(token)")
        for index in 0..<3 {
            let sent = try await clusterRequest(
                .POST, cluster.base(index) + "/notifications", body: #"{"title": "T\#(index)", "body": "works"}"#, headers: [bearer])
            #expect(sent.status == 201, "instance \(index) takes the token")
        }
        let revoked = try await clusterRequest(
            .DELETE, cluster.base(0) + "/api/push/tokens/\(tokenID)", headers: [basicAuthorization(device)])
        #expect(revoked.status == 204)
        for index in 1..<3 {
            let refused = try await clusterRequest(
                .POST, cluster.base(index) + "/notifications", body: #"{"title": "Late", "body": "refused"}"#, headers: [bearer])
            #expect(refused.status == 401, "instance \(index) refuses the revoked token at once")
            #expect(refused.json["code"] == "invalid_token")
        }

        // Instance B has the device cached (it just authenticated a send for it); A registers a new token for it.
        let newToken = Fixtures.apnsToken(0x34)
        let again = try await clusterRequest(
            .POST, cluster.base(0) + "/api/push/register", body: #"{"token": "\#(newToken)"}"#, headers: [basicAuthorization(device)])
        #expect(again.status == 200 || again.status == 201)
        let viaB = try await clusterRequest(
            .POST, cluster.base(1) + "/api/push/notify", body: #"{"user_id": "\#(device.userID)", "title": "New", "body": "token"}"#)
        let viaBID = try #require(viaB.json["id"]?.stringValue)
        #expect(await eventually { cluster.apns.acceptedPushes.contains { $0.header("apns-id") == viaBID } })
        let push = cluster.apns.acceptedPushes.first { $0.header("apns-id") == viaBID }
        #expect(push?.path?.hasSuffix(newToken) == true, "instance B sent to the token registered on A")

        // Deleted on A: B and C no longer know the device.
        let deleted = try await clusterRequest(.DELETE, cluster.base(0) + "/api/push/register", headers: [basicAuthorization(device)])
        #expect(deleted.status == 200 || deleted.status == 204)
        for index in 1..<3 {
            let gone = try await clusterRequest(
                .POST, cluster.base(index) + "/api/push/notify", body: #"{"user_id": "\#(device.userID)", "title": "Gone", "body": "x"}"#)
            #expect(gone.status == 404, "instance \(index) no longer knows the deleted device")
        }
        try await cluster.stop()
    }

    /// Three instances take 3,000 notifications; one is killed with SIGKILL midway. Every accepted notification
    /// reaches APNs; a notification reaches it twice only if it was sent before the kill by the killed instance and
    /// its outcome died with it (then another instance takes it over when its lease expires).
    @Test(.enabled(if: HeraldCluster.postgresURL != nil))
    func everyAcceptedNotificationIsDeliveredWhenAnInstanceIsKilled() async throws {
        // Debug: should an instance not stop, the end of its log (in the failure) names the services that did not
        // finish their graceful shutdown (swift-service-lifecycle logs each at debug). A clean-clone CI run once hung
        // in this test with instance-2 alive and idle, most likely in `cluster.stop()`.
        let cluster = try await HeraldCluster(
            count: 3,
            options: [
                "HERALD_LEASE_SECONDS": "3", "HERALD_DELIVERY_WAIT_MS": "0", "HERALD_RATE_LIMIT_DAILY": "100000",
                "HERALD_LOG_LEVEL": "debug",
            ])
        var users: [String] = []
        for index in 0..<12 {
            let registered = try await clusterRequest(
                .POST, cluster.base(index % 3) + "/api/push/register", body: #"{"token": "\#(Fixtures.apnsToken(0x40 + index))"}"#)
            users.append(try #require(registered.json["user_id"]?.stringValue))
        }

        final class Progress: Sendable {
            let accepted = Mutex<[String: Int]>([:])  // notification id → instance that accepted it
            let killed = Atomic(false)
            var count: Int { accepted.withLock { $0.count } }
        }
        let progress = Progress()
        let target = 3_000
        let sendingEnds = ContinuousClock.now + .seconds(300)  // refused sends are tried again, but not forever
        let senders = Task { [users] in
            await withTaskGroup(of: Void.self) { group in
                for sender in 0..<12 {
                    group.addTask {
                        var index = 0
                        while progress.count < target, ContinuousClock.now < sendingEnds {
                            index += 1
                            var instance = (sender + index) % 3
                            if instance == 1, progress.killed.load(ordering: .relaxed) { instance = 2 }
                            let body = #"{"user_id": "\#(users[sender])", "title": "s\#(sender)-\#(index)", "body": "b"}"#
                            guard let id = try? await postNotify(port: cluster.ports[instance], body: body) else { continue }
                            progress.accepted.withLock { $0[id] = instance }
                        }
                    }
                }
            }
        }
        #expect(await eventually(attempts: 2_400) { progress.count >= target / 2 })
        cluster.instances[1].kill(SIGKILL)  // requests and deliveries are in flight on it
        progress.killed.store(true, ordering: .relaxed)
        #expect(await cluster.instances[1].waitForExit() != 0)
        await senders.value
        let accepted = progress.accepted.withLock { $0 }
        #expect(accepted.count >= target)

        let everyDelivered = await eventually(attempts: 2_400) {
            Set(cluster.apns.acceptedPushes.compactMap { $0.header("apns-id") }).isSuperset(of: accepted.keys)
        }
        let pushes = cluster.apns.acceptedPushes
        let delivered = Set(pushes.compactMap { $0.header("apns-id") })
        #expect(everyDelivered, "\(accepted.keys.filter { !delivered.contains($0) }.count) of \(accepted.count) accepted notifications never reached APNs")
        var deliveries: [String: [APNsDouble.RecordedRequest]] = [:]
        for push in pushes {
            if let id = push.header("apns-id") { deliveries[id, default: []].append(push) }
        }
        // The killed instance's connections to the double are the only ones closed (the others stay open until the end).
        let closed = Set(cluster.apns.connectionEvents.filter { $0.kind == .closed }.map(\.connectionID))
        let duplicates = deliveries.filter { $0.value.count > 1 }
        for (id, twice) in duplicates {
            #expect(closed.contains(twice[0].connectionID), "\(id) was delivered twice but first by a live instance")
            #expect(twice.count == 2, "\(id) was delivered \(twice.count) times")
        }
        print(
            "Multi-instance kill -9: \(accepted.count) accepted (\(accepted.values.filter { $0 == 1 }.count) by the killed instance), "
                + "\(delivered.count) delivered, \(duplicates.count) delivered twice (in flight at the kill)")
        try await cluster.stop()
    }
}
