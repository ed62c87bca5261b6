import Testing

@testable import HeraldActivities

@Suite("Activity problems")
struct ActivityProblemTests {
    @Test func theBodyIsPushWardsProblemSchema() {
        let body = String(decoding: ActivityProblem.notFound.body(instance: "/requests/abc"), as: UTF8.self)
        #expect(
            body
                == #"{"code":"activity.not_found","detail":"activity not found","instance":"/requests/abc","status":404,"title":"Not Found","type":"about:blank"}"#
        )
    }
}
