import Foundation
import HeraldCore
import Testing

@testable import HeraldActivities

/// The request bodies' shape (400) and ranges (422), the answers' JSON, the cursor and the list query.
@Suite("Activity requests and answers")
struct RequestAndJSONTests {
    func problem(_ body: String, create: Bool = false) -> ActivityProblem? {
        do {
            if create { _ = try ActivityRequest.create(json: bytes(body)) } else { _ = try ActivityRequest.patch(json: bytes(body)) }
            return nil
        } catch {
            return error
        }
    }

    @Test func createDecodesTheDocumentsExampleAndRefusesWhatTheSchemaRefuses() throws {
        let request = try ActivityRequest.create(json: bytes(#"{"slug": "dishwasher", "name": "Dishwasher", "priority": 3}"#))
        #expect(request == ActivityCreateRequest(slug: "dishwasher", name: "Dishwasher", priority: 3))
        #expect(problem("", create: true) == .bodyRequired)
        #expect(problem("  \n", create: true) == .bodyRequired)
        #expect(problem("{", create: true)?.code == .requestBodyInvalid)
        #expect(problem("[]", create: true)?.code == .requestBodyInvalid)
        #expect(problem(#"{"name":"x"}"#, create: true)?.code == .requestBodyInvalid)
        #expect(problem(#"{"slug":"x"}"#, create: true)?.code == .requestBodyInvalid)
        #expect(problem(#"{"slug":"-x","name":"x"}"#, create: true) == .slugInvalid)
        #expect(problem(#"{"slug":"\#(String(repeating: "a", count: 129))","name":"x"}"#, create: true) == .slugInvalid)
        #expect(problem(#"{"slug":"x","name":""}"#, create: true)?.status == 422)
        #expect(problem(#"{"slug":"x","name":"x","priority":11}"#, create: true) == .priorityInvalid)
        #expect(problem(#"{"slug":"x","name":"x","ended_ttl":0}"#, create: true)?.status == 422)
        #expect(problem(#"{"slug":"x","name":"x","stale_ttl":2592001}"#, create: true)?.status == 422)
        #expect(problem(#"{"slug":"x","name":"x","dismissal_ttl":14401}"#, create: true)?.status == 422)
        #expect(problem(#"{"slug":"x","name":"x","content":{}}"#, create: true)?.code == .requestBodyInvalid, "additionalProperties: false")
        #expect(ActivitySlug.isValid("a_B-9") && !ActivitySlug.isValid("a b") && !ActivitySlug.isValid("") && !ActivitySlug.isValid("_a"))
    }

    @Test func patchDecodesTriStateTTLsSoundAndPriority() throws {
        let patch = try ActivityRequest.patch(json: bytes(#"{"ended_ttl":null,"stale_ttl":60,"sound":"ding","priority":10}"#))
        #expect(patch.endedTTL == .clear)
        #expect(patch.staleTTL == .set(60))
        #expect(patch.dismissalTTL == .keep)
        #expect(patch.sound == "ding")
        #expect(patch.priority == 10)
        #expect(problem(#"{"priority":-1}"#) == .priorityInvalid)
        #expect(problem(#"{"priority":"high"}"#)?.code == .activityPriorityInvalid)
        #expect(problem(#"{"sound":"trumpet"}"#)?.status == 422)
        #expect(problem(#"{"content":"x"}"#)?.code == .requestBodyInvalid)
        #expect(problem(#"{"name":"renamed"}"#)?.code == .requestBodyInvalid)
        #expect(problem("")?.code == .requestBodyRequired)
        #expect(problem(#"{"a":1,"a":2}"#)?.code == .requestBodyInvalid)
    }

    @Test func theAnswerMatchesTheActivitySchemaWithNoNulls() throws {
        let created = freshActivity(priority: 3)
        let answer = try #require(try JSONValue.decode(Data(ActivityJSON.body(created))).objectValue)
        #expect(
            answer == [
                "id": "550e8400-e29b-41d4-a716-446655440000", "kind": "owned", "slug": "dishwasher", "name": "Dishwasher", "state": "ended",
                "priority": 3, "content": ["template": "generic"], "created_at": "2025-06-15T15:06:40Z", "updated_at": "2025-06-15T15:06:40Z",
            ])
        let started = try #require(
            try patched(created, #"{"state":"ongoing","ended_ttl":3600,"content":{"template":"log","lines":[{"text":"a"}]}}"#).activity)
        let ended = try #require(try patched(started, #"{"state":"ended"}"#, at: testNow.addingTimeInterval(60)).activity)
        let object = ActivityJSON.object(ended)
        #expect(object["ended_ttl"] == 3600)
        #expect(object["ended_at"] == "2025-06-15T15:07:40Z")
        #expect(object["delete_at"] == "2025-06-15T16:07:40Z")
        #expect(object["content"]?.objectValue?["log_backlog"] == nil)
        #expect(ActivityJSON.object(ended, includeLogBacklog: true)["content"]?.objectValue?["log_backlog"] == [["text": "a"]])
    }

    @Test func aPageCarriesACursorOnlyWhenMoreFollow() throws {
        let items = [freshActivity("a"), freshActivity("b")]
        let page = try #require(try JSONValue.decode(Data(ActivityJSON.page(items, hasMore: true))).objectValue)
        let cursor = try #require(page["next_cursor"]?.stringValue)
        #expect(try ActivityCursor.slug(from: cursor) == "b")
        #expect(page["items"]?.arrayValue?.count == 2)
        let last = try #require(try JSONValue.decode(Data(ActivityJSON.page(items, hasMore: false))).objectValue)
        #expect(last["next_cursor"] == nil)
        #expect(try JSONValue.decode(Data(ActivityJSON.page([], hasMore: false))) == ["items": []])
    }

    @Test func theListQueryIsCheckedAsTheDocumentSays() throws {
        #expect(try ActivityListQuery.parse(limit: nil, after: nil, state: nil) == ActivityListQuery(limit: 50))
        let query = try ActivityListQuery.parse(limit: "10", after: ActivityCursor.make(after: "oven"), state: "ONGOING")
        #expect(query == ActivityListQuery(limit: 10, afterSlug: "oven", state: .ongoing))
        #expect(throws: ActivityProblem.cursorInvalid) { _ = try ActivityListQuery.parse(limit: nil, after: "!!!", state: nil) }
        #expect(throws: ActivityProblem.cursorInvalid) { _ = try ActivityListQuery.parse(limit: nil, after: Base64URL.encode(Array("a b".utf8)), state: nil) }
        #expect(throws: ActivityProblem.stateInvalid("paused", allowed: "ongoing, ended, preempted")) {
            _ = try ActivityListQuery.parse(limit: nil, after: nil, state: "paused")
        }
        for limit in ["0", "101", "ten"] {
            #expect { _ = try ActivityListQuery.parse(limit: limit, after: nil, state: nil) } throws: { ($0 as? ActivityProblem)?.status == 422 }
        }
        #expect(ActivityListQuery.includesLogBacklog("foo, log_backlog") && !ActivityListQuery.includesLogBacklog(nil))
    }

    @Test func anActivityRoundTripsThroughItsStoredDocument() throws {
        let activity = try #require(
            try patched(freshActivity(), #"{"state":"ongoing","stale_ttl":60,"content":{"template":"timeline","value":{"cpu":1.25}}}"#).activity)
        #expect(try Activity(storedJSON: activity.storedJSON()) == activity)
    }

    @Test func theProblemBodyCarriesRetryAndFieldErrors() throws {
        let body = try JSONValue.decode(Data(ActivityProblem.limitExceeded(maximum: 50).body()))
        #expect(
            body == [
                "code": "activity.limit_exceeded", "detail": "activity limit reached (max 50)", "retry_after_ms": 3000, "status": 409,
                "title": "Conflict", "type": "about:blank",
            ])
        #expect(ActivityProblem.limitExceeded(maximum: 50).retryAfterSeconds == 3)
        let invalid = try JSONValue.decode(Data(ActivityProblem.contentInvalid("x", location: "body.content.progress").body()))
        #expect(invalid.objectValue?["errors"] == [["location": "body.content.progress", "message": "x"]])
    }
}
