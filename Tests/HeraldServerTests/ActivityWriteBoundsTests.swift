import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Testing

/// Issue 37 over real HTTP: a stored row the dispatcher cannot read is set aside once (never retried in a loop),
/// activity writes are rate-limited per token, lengths count UTF-8 bytes as well as characters, and a log's backlog
/// lives apart from the document every change reads.
@Suite("PushWard activities: poison rows, write rate, byte limits")
struct ActivityWriteBoundsTests {
    @Test func aRowWhoseDocumentCannotBeReadIsSetAsideNotRetried() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            let store = try apns.server.openStore()
            let deviceID = try await ActivitySafetyTests.deviceID(device, in: store)
            let due = apns.server.clock.now().addingTimeInterval(-1)
            // What the swallowed encoding error used to store: an empty document, due for its push and its schedule.
            for (slug, document) in [("empty", Data()), ("garbage", Data("{not json".utf8))] {
                let row = ActivityRecord(
                    deviceID: deviceID, slug: slug, state: "ongoing", priority: 0, createdAt: due, updatedAt: due, document: document,
                    nextDueAt: due, version: 1, pushDueAt: due)
                try await store.changeActivities(deviceID: deviceID) { _ in (ActivityWrites(upserts: [row]), ()) }
            }
            func setAside() async throws -> Bool {
                try await store.activities(deviceID: deviceID).allSatisfy { $0.dueAt == nil && $0.lease == nil }
            }
            #expect(try await eventually { try await setAside() })
            // Later passes leave them alone: nothing due, however far the clock moves.
            for _ in 0..<5 {
                apns.server.clock.advance(by: 400)
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(try await setAside())
            #expect(try await store.nextActivityDue() == nil)
            // The server answers as before: the rows read as absent, and a good activity still works.
            #expect(try await client.activity(.get, "/activities/empty", as: device).status == .notFound)
            #expect(try await client.activity(.get, "/activities", as: device).status == .ok)
            let good = try await client.activity(.patch, "/activities/good?upsert=true", #"{"content": {"template": "generic"}}"#, as: device)
            #expect(good.status == .created)
            try await store.close()
        }
        try await apns.shutdown()
    }

    @Test func activityWritesAreRateLimitedPerToken() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            let other = try await client.activityDevice(number: 2)
            for index in 0..<60 {
                let answer = try await client.activity(
                    .patch, "/activities/busy?upsert=true", #"{"content": {"template": "generic", "state": "\#(index)"}}"#, as: device)
                #expect(answer.status == (index == 0 ? .created : .ok))
            }
            let refused = try await client.activity(.patch, "/activities/busy", #"{"content": {"state": "more"}}"#, as: device)
            #expect(refused.status == .tooManyRequests)
            #expect(refused.jsonObject?["code"] == "rate_limit.exceeded")
            #expect((1...1_000).contains(refused.jsonObject?["retry_after_ms"]?.doubleValue ?? 0))
            #expect(refused.headers[.retryAfter] == "1")
            #expect(try await client.activity(.get, "/activities/busy", as: device).jsonObject?["content"]?.objectValue?["state"] == "59")
            // Reads are not limited; another token is not affected; the bucket refills with time.
            #expect(try await client.activity(.get, "/activities/busy", as: device).status == .ok)
            #expect(try await client.activity(.post, "/activities", #"{"slug": "calm", "name": "Calm"}"#, as: other).status == .created)
            apns.server.clock.advance(by: 1)
            for _ in 0..<10 {
                #expect(try await client.activity(.patch, "/activities/busy", #"{"content": {"state": "again"}}"#, as: device).status == .ok)
            }
            #expect(try await client.activity(.delete, "/activities/busy", as: device).status == .tooManyRequests)
        }
        try await apns.shutdown()
    }

    @Test func lengthsCountUTF8BytesAsWellAsCharacters() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            // One character of 2,201 bytes (a line may have 512 characters, 2,048 bytes): an "a" with 1,100 combining
            // acute accents.
            let heavy = "a" + String(repeating: "\u{0301}", count: 1_100)
            let line = try await client.activity(
                .patch, "/activities/log?upsert=true", #"{"content": {"template": "log", "lines": [{"text": "\#(heavy)"}]}}"#, as: device)
            #expect(line.status == .unprocessableContent)
            #expect(ActivitySafetyTests.location(line) == "body.content.lines[0].text")
            #expect(line.jsonObject?["detail"]?.stringValue?.contains("bytes") == true)
            let name = try await client.activity(.post, "/activities", #"{"slug": "named", "name": "\#(heavy)\#(heavy)"}"#, as: device)
            #expect(name.status == .unprocessableContent)
            #expect(ActivitySafetyTests.location(name) == "body.name")
            let color = try await client.activity(
                .patch, "/activities/tint?upsert=true",
                #"{"content": {"template": "generic", "accent_color": "\#(String(repeating: "f", count: 1_025))"}}"#, as: device)
            #expect(ActivitySafetyTests.location(color) == "body.content.accent_color")
            // The content as a whole: members the schemas do not name are kept, but content that cannot fit a push
            // (or past 64 KiB as stored, for a log whose lines are cut to fit) is refused at body.content.
            let notes = (0..<20).map { _ in "\"" + String(repeating: "n", count: 1_000) + "\"" }.joined(separator: ", ")
            let big = try await client.activity(
                .patch, "/activities/big?upsert=true", #"{"content": {"template": "generic", "notes": [\#(notes)]}}"#, as: device)
            #expect(big.status == .unprocessableContent)
            #expect(ActivitySafetyTests.location(big) == "body.content")
            // A log at its maxima (20 lines of 2,048 bytes) is accepted: the push keeps the newest lines that fit.
            let longLine = #"{"text": "\#(String(repeating: "\u{1F600}", count: 512))"}"#
            let lines = Array(repeating: longLine, count: 20).joined(separator: ", ")
            let full = try await client.activity(
                .patch, "/activities/full?upsert=true", #"{"content": {"template": "log", "lines": [\#(lines)]}}"#, as: device)
            #expect(full.status == .created)
            for slug in ["log", "named", "tint", "big"] {
                #expect(try await client.activity(.get, "/activities/\(slug)", as: device).status == .notFound)
            }
        }
        try await apns.shutdown()
    }

    @Test func aLogBacklogIsStoredApartFromTheDocumentAndLoadedWhenAsked() async throws {
        let apns = try await APNsTestServer.start()
        try await apns.server.run { client in
            let device = try await client.activityDevice()
            for index in 0..<3 {
                let answer = try await client.activity(
                    .patch, "/activities/ci?upsert=true",
                    #"{"content": {"template": "log", "lines": [{"text": "step \#(index)", "level": "info"}]}}"#, as: device)
                #expect(answer.status == (index == 0 ? .created : .ok))
                #expect(answer.jsonObject?["content"]?.objectValue?["log_backlog"] == nil)
            }
            let asked = try await client.activity(.get, "/activities/ci?include=log_backlog", as: device)
            let backlog = asked.jsonObject?["content"]?.objectValue?["log_backlog"]?.arrayValue?.compactMap { $0.objectValue?["text"]?.stringValue }
            #expect(backlog == ["step 2", "step 1", "step 0"])
            let store = try apns.server.openStore()
            let row = try #require(try await store.activity(deviceID: try await ActivitySafetyTests.deviceID(device, in: store), slug: "ci"))
            #expect(!String(decoding: row.document, as: UTF8.self).contains("step 0"))
            #expect(String(decoding: try #require(row.extras), as: UTF8.self).contains("step 0"))
            try await store.close()
        }
        try await apns.shutdown()
    }
}
