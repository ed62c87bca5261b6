import Foundation
import HTTPTypes
import HeraldCore
import HeraldTesting
import HummingbirdTesting
import Testing

/// PushWard's activity paths over real HTTP, with the Live Activity pushes they cause checked at the APNs double:
/// create, start, update, end, the device's update token, coalescing, errors as problem details (issue 31).
@Suite("PushWard activities")
struct PushWardActivityTests {
    static let updateToken = String(repeating: "cd34", count: 16)

    /// Live Activity pushes the production double accepted, oldest first.
    static func activityPushes(_ apns: APNsTestServer) -> [APNsDouble.RecordedRequest] {
        apns.production.acceptedPushes.filter { $0.header("apns-push-type") == "liveactivity" }
    }

    @Test func createStartUpdateAndEndReachAPNsAsLiveActivityPushes() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            let created = try await client.activity(.post, "/activities", #"{"slug": "oven", "name": "Oven", "priority": 3}"#, as: device)
            #expect(created.status == .created)
            #expect(created.headers[.init("X-Resource-Action")!] == "created")
            #expect(created.jsonObject?["content"] == ["template": "generic"])
            #expect(created.jsonObject?["state"] == "ended")
            let again = try await client.activity(.post, "/activities", #"{"slug": "oven", "name": "Oven 2"}"#, as: device)
            #expect(again.status == .created)
            #expect(again.headers[.init("X-Resource-Action")!] == "updated")
            #expect(again.jsonObject?["name"] == "Oven 2")

            // Start: to the push-to-start token, priority 10, with attributes.
            let started = try await client.activity(
                .patch, "/activities/oven", #"{"state": "ongoing", "content": {"template": "generic", "state": "Heating", "progress": 0.2}}"#,
                as: device, contentType: "application/merge-patch+json")
            #expect(started.status == .ok)
            #expect(started.jsonObject?["state"] == "ongoing")
            #expect(await eventually { Self.activityPushes(apns).count == 1 })
            let start = try #require(Self.activityPushes(apns).first)
            #expect(start.deviceToken == device.pushToStartToken)
            #expect(start.header("apns-topic") == APNsTestServer.topic + ".push-type.liveactivity")
            #expect(start.header("apns-priority") == "10")
            #expect(start.warnings.isEmpty)
            let startAPS = try #require(start.aps)
            #expect(startAPS["event"] == "start")
            #expect(startAPS["attributes-type"] == "HeraldActivityAttributes")
            #expect(startAPS["attributes"] == ["slug": "oven", "name": "Oven 2"])
            #expect(startAPS["input-push-token"] == 1)
            #expect(startAPS["content-state"]?.objectValue?["state"] == "Heating")
            #expect(startAPS["relevance-score"]?.doubleValue == 0.3)

            // The app reports the activity's update token; a silent update goes to it at priority 5.
            #expect(try await client.reportUpdateToken(Self.updateToken, slug: "oven", as: device).status == .noContent)
            let updated = try await client.activity(.patch, "/activities/oven", #"{"content": {"state": "Baking"}}"#, as: device)
            #expect(updated.status == .ok)
            #expect(await eventually { Self.activityPushes(apns).count == 2 })
            let update = try #require(Self.activityPushes(apns).last)
            #expect(update.deviceToken == Self.updateToken)
            #expect(update.header("apns-priority") == "5")
            #expect(update.warnings.isEmpty)
            #expect(update.aps?["event"] == "update")
            #expect(update.aps?["content-state"]?.objectValue?["state"] == "Baking")
            #expect(update.aps?["attributes"] == nil)

            // End: dismissal-date only here, priority 10.
            let ended = try await client.activity(.patch, "/activities/oven", #"{"state": "ended"}"#, as: device)
            #expect(ended.status == .ok)
            #expect(await eventually { Self.activityPushes(apns).count == 3 })
            let end = try #require(Self.activityPushes(apns).last)
            #expect(end.deviceToken == Self.updateToken)
            #expect(end.header("apns-priority") == "10")
            #expect(end.aps?["event"] == "end")
            #expect(end.aps?["dismissal-date"]?.doubleValue != nil)
            #expect(end.warnings.isEmpty)
            let timestamps = Self.activityPushes(apns).compactMap { $0.aps?["timestamp"]?.doubleValue }
            #expect(timestamps.count == 3 && zip(timestamps, timestamps.dropFirst()).allSatisfy { $0 < $1 })
        }
        try await apns.shutdown()
    }

    @Test func updatesWaitForTheUpdateTokenAndOnlyTheNewestGoesOut() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            let start = try await client.activity(
                .patch, "/activities/build?upsert=true", #"{"state": "ongoing", "content": {"template": "generic", "state": "Queued"}}"#,
                as: device)
            #expect(start.status == .created)
            #expect(start.headers[.init("X-Resource-Action")!] == "created")
            #expect(await eventually { Self.activityPushes(apns).count == 1 })
            // Three updates before the app reports the activity's token: nothing can go out yet.
            for step in ["Compiling", "Linking", "Testing"] {
                let response = try await client.activity(.patch, "/activities/build", #"{"content": {"state": "\#(step)"}}"#, as: device)
                #expect(response.status == .ok)
            }
            try await Task.sleep(for: .seconds(1))
            #expect(Self.activityPushes(apns).count == 1)
            // The token arrives: the newest state goes out, once.
            #expect(try await client.reportUpdateToken(Self.updateToken, slug: "build", as: device).status == .noContent)
            #expect(await eventually { Self.activityPushes(apns).count == 2 })
            try await Task.sleep(for: .seconds(1))
            let pushes = Self.activityPushes(apns)
            #expect(pushes.count == 2)
            #expect(pushes.last?.deviceToken == Self.updateToken)
            #expect(pushes.last?.aps?["content-state"]?.objectValue?["state"] == "Testing")
        }
        try await apns.shutdown()
    }

    @Test func aStartForADeviceWithoutAPushToStartTokenIsAConflict() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice(pushToStart: false)
            #expect(try await client.activity(.post, "/activities", #"{"slug": "oven", "name": "Oven"}"#, as: device).status == .created)
            let response = try await client.activity(.patch, "/activities/oven", #"{"state": "ongoing"}"#, as: device)
            #expect(response.status == .conflict)
            let problem = try response.problem()
            #expect(problem["code"] == "activity.push_to_start_unavailable")
            #expect(problem["detail"]?.stringValue?.contains("live_activity_push_to_start_token") == true)
            #expect(Self.activityPushes(apns).isEmpty)
        }
        try await apns.shutdown()
    }

    @Test func refusalsAreProblemDetailsWithPushWardsCodes() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            let missing = try await client.activity(.get, "/activities/nothing-here", as: device)
            #expect(missing.status == .notFound)
            #expect(try missing.problem()["code"] == "activity.not_found")
            let badSlug = try await client.activity(.get, "/activities/-bad", as: device)
            #expect(badSlug.status == .badRequest)
            #expect(try badSlug.problem()["code"] == "slug.invalid")
            #expect(try await client.activity(.post, "/activities", #"{"slug": "g", "name": "G"}"#, as: device).status == .created)
            let badContent = try await client.activity(.patch, "/activities/g", #"{"content": {"template": "gauge", "value": "x"}}"#, as: device)
            #expect(badContent.status == .unprocessableContent)
            #expect(try badContent.problem()["code"] == "activity.content_invalid")
            let noBody = try await client.activity(.post, "/activities", "", as: device)
            #expect(noBody.status == .badRequest)
            #expect(try noBody.problem()["code"] == "request.body_required")
            let badCursor = try await client.activity(.get, "/activities?after=%21%21", as: device)
            #expect(badCursor.status == .badRequest)
            #expect(try badCursor.problem()["code"] == "cursor.invalid")
            let anonymous = try await client.execute(uri: "/activities", method: .get, headers: [:], body: nil)
            #expect(anonymous.status == .unauthorized)
            #expect(try anonymous.problem()["code"] == "token.invalid")
        }
        try await apns.shutdown()
    }

    @Test func theListIsPagedBySlugAndFilteredByState() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            for slug in ["c", "a", "b"] {
                #expect(try await client.activity(.post, "/activities", #"{"slug": "\#(slug)", "name": "\#(slug)"}"#, as: device).status == .created)
            }
            #expect(try await client.activity(.patch, "/activities/b", #"{"state": "ongoing"}"#, as: device).status == .ok)
            let first = try await client.activity(.get, "/activities?limit=2", as: device)
            #expect(first.status == .ok)
            let page = try #require(first.jsonObject)
            #expect(page["items"]?.arrayValue?.compactMap { $0.objectValue?["slug"]?.stringValue } == ["a", "b"])
            let cursor = try #require(page["next_cursor"]?.stringValue)
            let second = try #require(try await client.activity(.get, "/activities?limit=2&after=\(cursor)", as: device).jsonObject)
            #expect(second["items"]?.arrayValue?.compactMap { $0.objectValue?["slug"]?.stringValue } == ["c"])
            #expect(second["next_cursor"] == nil)
            let ongoing = try #require(try await client.activity(.get, "/activities?state=ongoing", as: device).jsonObject)
            #expect(ongoing["items"]?.arrayValue?.compactMap { $0.objectValue?["slug"]?.stringValue } == ["b"])
            // DELETE: 204, gone from the list, and the ongoing one was ended on the phone (no update token: it waits).
            #expect(try await client.activity(.delete, "/activities/a", as: device).status == .noContent)
            #expect(try await client.activity(.get, "/activities/a", as: device).status == .notFound)
        }
        try await apns.shutdown()
    }

    @Test func theDeviceDismissingAnActivityEndsItsPushes() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            let start = try await client.activity(.patch, "/activities/tea?upsert=true", #"{"state": "ongoing"}"#, as: device)
            #expect(start.status == .created)
            #expect(await eventually { Self.activityPushes(apns).count == 1 })
            #expect(try await client.reportUpdateToken(Self.updateToken, slug: "tea", as: device).status == .noContent)
            let dismissed = try await client.execute(
                uri: "/api/push/activities/tea/token", method: .delete, headers: device.owner.basic, body: nil)
            #expect(dismissed.status == .noContent)
            #expect(try await client.activity(.get, "/activities/tea", as: device).jsonObject?["state"] == "ended")
            #expect(try await client.activity(.patch, "/activities/tea", #"{"content": {"template": "generic", "state": "Steeping"}}"#, as: device).status == .ok)
            try await Task.sleep(for: .seconds(1))
            #expect(Self.activityPushes(apns).count == 1)
            let unknown = try await client.reportUpdateToken(Self.updateToken, slug: "coffee", as: device)
            #expect(unknown.status == .notFound)
        }
        try await apns.shutdown()
    }

    @Test func aSixthOngoingActivityPreemptsTheLowestPriorityAndEndsItOnThePhone() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            for (index, priority) in [5, 1, 7, 3, 9].enumerated() {
                let created = try await client.activity(
                    .post, "/activities", #"{"slug": "a\#(index)", "name": "A\#(index)", "priority": \#(priority)}"#, as: device)
                #expect(created.status == .created)
                #expect(try await client.activity(.patch, "/activities/a\(index)", #"{"state": "ongoing"}"#, as: device).status == .ok)
                #expect(await eventually { Self.activityPushes(apns).count == index + 1 })
                let token = String(format: "%064x", 0xa0 + index)
                #expect(try await client.reportUpdateToken(token, slug: "a\(index)", as: device).status == .noContent)
            }
            let sixth = try await client.activity(.patch, "/activities/a5?upsert=true", #"{"state": "ongoing", "priority": 4}"#, as: device)
            #expect(sixth.status == .created)
            // The start of a5 and the end of a1 (priority 1), to a1's update token.
            #expect(await eventually { Self.activityPushes(apns).count == 7 })
            let last = Self.activityPushes(apns).suffix(2)
            let end = try #require(last.first { $0.aps?["event"] == "end" })
            #expect(end.deviceToken == String(format: "%064x", 0xa1))
            #expect(last.contains { $0.aps?["event"] == "start" && $0.deviceToken == device.pushToStartToken })
            #expect(try await client.activity(.get, "/activities/a1", as: device).jsonObject?["state"] == "preempted")
            let ongoing = try #require(try await client.activity(.get, "/activities?state=ongoing", as: device).jsonObject)
            #expect(ongoing["items"]?.arrayValue?.count == 5)
        }
        try await apns.shutdown()
    }

    @Test func aDeadUpdateTokenEndsTheActivitysPushesNotTheDevice() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            #expect(try await client.activity(.patch, "/activities/car?upsert=true", #"{"state": "ongoing"}"#, as: device).status == .created)
            #expect(await eventually { Self.activityPushes(apns).count == 1 })
            #expect(try await client.reportUpdateToken(Self.updateToken, slug: "car", as: device).status == .noContent)
            apns.production.failNext(1, status: 410, reason: "Unregistered")
            let update = try await client.activity(.patch, "/activities/car", #"{"content": {"template": "generic", "state": "Parked"}}"#, as: device)
            #expect(update.status == .ok)
            #expect(await eventually { apns.production.requests.contains { $0.status == 410 } })
            #expect(try await eventually { try await client.activity(.get, "/activities/car", as: device).jsonObject?["state"] == "ended" })
            // The device itself still takes notifications.
            let notified = try await client.notify(device.owner.userID)
            #expect(notified.status == .created)
            #expect(await eventually { apns.production.acceptedPushes.contains { $0.deviceToken == device.deviceToken } })
        }
        try await apns.shutdown()
    }

    @Test func scopesAndSlugsOfTheAPITokenDecide() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            #expect(try await client.activity(.post, "/activities", #"{"slug": "printer-1", "name": "P1"}"#, as: device).status == .created)
            #expect(try await client.activity(.post, "/activities", #"{"slug": "oven", "name": "Oven"}"#, as: device).status == .created)
            let updater = try await client.createToken(for: device.owner, scopes: #"["activity:update"]"#, slugs: #"["printer-*"]"#)
            var limited = device
            limited.bearer = updater.bearer
            // activity:update reads and patches what its slugs cover, and sees only those.
            let list = try #require(try await client.activity(.get, "/activities", as: limited).jsonObject)
            #expect(list["items"]?.arrayValue?.compactMap { $0.objectValue?["slug"]?.stringValue } == ["printer-1"])
            #expect(try await client.activity(.patch, "/activities/printer-1", #"{"priority": 2}"#, as: limited).status == .ok)
            let outside = try await client.activity(.get, "/activities/oven", as: limited)
            #expect(outside.status == .forbidden)
            #expect(try outside.problem()["code"] == "integration_key.slug_invalid")
            // It may not create or delete.
            #expect(try await client.activity(.post, "/activities", #"{"slug": "printer-2", "name": "P2"}"#, as: limited).status == .forbidden)
            #expect(try await client.activity(.delete, "/activities/printer-1", as: limited).status == .forbidden)
            let upsert = try await client.activity(.patch, "/activities/printer-3?upsert=true", #"{"priority": 1}"#, as: limited)
            #expect(upsert.status == .forbidden)
            #expect(try upsert.problem()["code"] == "activity.upsert_forbidden")
        }
        try await apns.shutdown()
    }

    @Test func snoozeMovesACountdownsEnd() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            let end = Int(apns.server.clock.now().timeIntervalSince1970) + 600
            let content = #"{"template": "countdown", "end_date": \#(end)}"#
            let start = try await client.activity(.patch, "/activities/tea?upsert=true", #"{"state": "ongoing", "content": \#(content)}"#, as: device)
            #expect(start.status == .created)
            let snoozed = try await client.activity(.post, "/activities/tea/snooze", #"{"seconds": 120}"#, as: device)
            #expect(snoozed.status == .ok)
            #expect(snoozed.jsonObject?["content"]?.objectValue?["end_date"] == .int(end + 120))
            let missing = try await client.activity(.post, "/activities/coffee/snooze", as: device)
            #expect(missing.status == .notFound)
        }
        try await apns.shutdown()
    }
}
