import Foundation
import HeraldCore
import HeraldTesting
import Testing

/// Issue 39, section 4: the callbacks' signing (Standard Webhooks, PushWard's secret derivation) and retry policy.
@Suite("Callback signing")
struct CallbackSigningTests {
    static let token = "hrd_" + String(repeating: "0123456789abcdef", count: 4)
    /// Computed independently (Python's hashlib and hmac): HMAC-SHA256(SHA-256(token), "pushward/callback/v1").
    static let displayedSecret = "whsec_wkU5vKv8Mge4IhnOpJC9ASqKnaUEfWLv/agam4I+fqs="

    @Test func theSecretIsDerivedFromTheTokenTextOrFromTheHashTheStoreKeeps() throws {
        #expect(CallbackSigning.displayed(CallbackSigning.secret(tokenText: Self.token)) == Self.displayedSecret)
        let hash = Secrets.hash(Self.token)
        #expect(hash == "c5428d4b3a683e3dfe8d6d6e371aa62c32f826ba54533b8b7aa150aa9bc57c0a")
        #expect(try CallbackSigning.displayed(#require(CallbackSigning.secret(tokenHash: hash))) == Self.displayedSecret)
        #expect(try CallbackSigning.displayed(#require(CallbackSigning.secret(tokenHash: hash.uppercased()))) == Self.displayedSecret)
        // Anything but 64 hex digits is not a stored hash.
        for bad in ["", String(hash.dropLast()), hash + "0", String(hash.dropLast()) + "g", String(repeating: "é", count: 32)] {
            #expect(CallbackSigning.secret(tokenHash: bad) == nil)
        }
    }

    @Test func theSignatureIsV1Base64OfHMACOverIdTimestampAndBody() throws {
        let secret = CallbackSigning.secret(tokenText: Self.token)
        let body = Data(#"{"type":"notification.delivered"}"#.utf8)
        #expect(
            CallbackSigning.signature(id: "msg_1", timestamp: 1_700_000_000, body: body, secret: secret)
                == "v1,FMMGWiNxz0GRgkFd/vDtgkuBBOGnxYBTCnhkKh0rNiA=")
        let headers = CallbackSigning.headers(id: "msg_1", at: Date(timeIntervalSince1970: 1_700_000_000.9), body: body, secret: secret)
        #expect(headers.map(\.name) == ["webhook-id", "webhook-timestamp", "webhook-signature"])
        #expect(headers.map(\.value) == ["msg_1", "1700000000", "v1,FMMGWiNxz0GRgkFd/vDtgkuBBOGnxYBTCnhkKh0rNiA="])
    }

    @Test func aCallbackBodyHasTypeTimestampAndDataAndAStableWebhookID() throws {
        let now = Date(timeIntervalSince1970: 1_763_769_600)
        let callback = try CallbackDelivery.make(
            event: .acknowledged, data: ["id": "r1"], url: "https://example.com/cb", deviceID: UUID(), tokenID: UUID(), now: now)
        let body = try #require(JSONValue.decode(callback.body).objectValue)
        #expect(body["type"] == "notification.acknowledged")
        #expect(body["timestamp"] == .string(now.iso8601WithMilliseconds))
        #expect(body["data"] == ["id": "r1"])
        #expect(callback.webhookID.hasPrefix("msg_") && callback.webhookID.count == 36)
        #expect(callback.nextAttemptAt == now && callback.status == .pending && callback.attempts == 0)
        #expect(CallbackEvent.allCases.map(\.rawValue) == [
            "notification.acknowledged", "notification.expired", "notification.delivered", "notification.failed", "notification.answered",
        ])
    }
}

@Suite("Callback retry policy")
struct CallbackRetryPolicyTests {
    let policy = CallbackRetryPolicy()
    let clock = TestClock()

    @Test func twoXXDeliversAnd410StopsWhateverTheAttempt() {
        for status in [200, 201, 204, 299] {
            #expect(policy.step(after: .answered(status: status, retryAfter: nil), attemptsMade: 1, now: clock.now()) == .delivered)
        }
        for attempts in [1, 4, 7] {
            #expect(policy.step(after: .answered(status: 410, retryAfter: nil), attemptsMade: attempts, now: clock.now()) == .gone)
        }
    }

    @Test func everyOtherAnswerRetriesOnTheScheduleForAboutAnHour() {
        // A receiver that always answers 500: the attempts' times on a test clock.
        var attempts = 0
        var times: [TimeInterval] = []
        let start = clock.now()
        while true {
            attempts += 1
            times.append(clock.now().timeIntervalSince(start))
            let step = policy.step(after: .answered(status: 500, retryAfter: nil), attemptsMade: attempts, now: clock.now())
            guard case .retry(let date, let counts) = step else {
                #expect(step == .failed(reason: "the receiver answered 500 (after 7 attempts)"))
                break
            }
            #expect(counts)
            clock.set(date)
        }
        #expect(times == [0, 30, 150, 450, 1_050, 1_950, 3_750])
        // The first two retries within 3 minutes; the last about an hour after the first attempt.
        #expect(times[2] < 180)
        #expect((3_000...4_200).contains(times.last ?? 0))
        #expect(policy.maximumAttempts == 7)
    }

    @Test func redirectsClientErrorsAndNoAnswerRetryAndEgressRefusalFailsAtOnce() {
        let now = clock.now()
        for answer: CallbackAttemptAnswer in [
            .answered(status: 301, retryAfter: nil), .answered(status: 400, retryAfter: nil), .answered(status: 404, retryAfter: nil),
            .answered(status: 429, retryAfter: nil), .answered(status: 599, retryAfter: nil), .unreachable("timed out"),
        ] {
            #expect(policy.step(after: answer, attemptsMade: 1, now: now) == .retry(at: now.addingTimeInterval(30), countsAttempt: true))
        }
        #expect(policy.step(after: .refused("private"), attemptsMade: 1, now: now) == .failed(reason: "private"))
        #expect(policy.step(after: .hostBusy, attemptsMade: 0, now: now) == .retry(at: now.addingTimeInterval(1), countsAttempt: false))
        // Attempt counts out of range never trap.
        #expect(policy.step(after: .unreachable("x"), attemptsMade: 0, now: now) == .failed(reason: "x (after 0 attempts)"))
        #expect(policy.step(after: .unreachable("x"), attemptsMade: -5, now: now) == .failed(reason: "x (after 0 attempts)"))
        #expect(policy.step(after: .unreachable("x"), attemptsMade: .max, now: now) == .failed(reason: "x (after \(Int.max) attempts)"))
    }

    @Test func retryAfterOn429And503PostponesUpToAnHourAndIsIgnoredElsewhere() {
        let now = clock.now()
        func delay(_ status: Int, _ after: Int?, attempts: Int = 1) -> TimeInterval? {
            guard case .retry(let date, _) = policy.step(after: .answered(status: status, retryAfter: after), attemptsMade: attempts, now: now)
            else { return nil }
            return date.timeIntervalSince(now)
        }
        #expect(delay(429, 10) == 30)  // shorter than the schedule: the schedule
        #expect(delay(429, 90) == 90)
        #expect(delay(503, 3_600) == 3_600)
        #expect(delay(503, 3_601) == 3_600)
        #expect(delay(503, .max) == 3_600)
        #expect(delay(503, 0) == 30)
        #expect(delay(503, -1) == 30)
        #expect(delay(500, 900) == 30)
        #expect(delay(429, 10, attempts: 6) == 1_800)
    }

    @Test func retryAfterParsesWholeSecondsOnly() {
        #expect(CallbackRetryPolicy.seconds(fromRetryAfter: "120") == 120)
        #expect(CallbackRetryPolicy.seconds(fromRetryAfter: " 0 ") == 0)
        #expect(CallbackRetryPolicy.seconds(fromRetryAfter: "9999999999") == 9_999_999_999)
        for bad: String? in [nil, "", "-1", "1.5", "+3", "99999999999", "Wed, 21 Oct 2015 07:28:00 GMT", "١٢"] {
            #expect(CallbackRetryPolicy.seconds(fromRetryAfter: bad) == nil)
        }
    }

    @Test func applyingAStepCountsAttemptsAndFinishes() {
        let now = clock.now()
        let callback = CallbackDelivery(
            deviceID: UUID(), tokenID: UUID(), url: "https://example.com", event: .delivered, body: Data("{}".utf8), nextAttemptAt: now,
            createdAt: now)
        let busy = callback.applying(.retry(at: now.addingTimeInterval(1), countsAttempt: false), now: now)
        #expect(busy.attempts == 0 && busy.status == .pending && busy.nextAttemptAt == now.addingTimeInterval(1))
        let retry = callback.applying(.retry(at: now.addingTimeInterval(30), countsAttempt: true), now: now)
        #expect(retry.attempts == 1 && retry.status == .pending)
        let done = retry.applying(.delivered, now: now)
        #expect(done.attempts == 2 && done.status == .delivered && done.nextAttemptAt == nil)
        #expect(retry.applying(.gone, now: now).status == .gone)
        let failed = retry.applying(.failed(reason: "no"), now: now)
        #expect(failed.status == .failed && failed.lastError == "no" && failed.nextAttemptAt == nil)
    }
}
