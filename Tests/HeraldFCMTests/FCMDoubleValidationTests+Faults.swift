import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTesting
import NIOCore
import NIOHTTP1
import Testing
import _CryptoExtras

/// Faults the double injects, and its transport (HTTP/2 sharing, HTTP/1.1, delays).
extension FCMDoubleValidationTests {
    // MARK: Faults

    @Test func markedTokensAnswerTheirErrors() async throws {
        try await run { double, client, _ in
            let accessToken = try await client.accessToken()
            double.markUnregistered(registrationToken(1))
            double.markSenderMismatch(registrationToken(2))
            double.markInvalid(registrationToken(3))
            let unregistered = try await client.send(message(to: registrationToken(1)), accessToken: accessToken)
            #expect(unregistered.status == 404)
            #expect(
                unregistered.json
                    == errorBody(404, "NOT_FOUND", "Requested entity was not found.", details: [fcmError("UNREGISTERED")]))
            let mismatch = try await client.send(message(to: registrationToken(2)), accessToken: accessToken)
            #expect(mismatch.json == errorBody(403, "PERMISSION_DENIED", "SenderId mismatch", details: [fcmError("SENDER_ID_MISMATCH")]))
            let invalid = try await client.send(message(to: registrationToken(3)), accessToken: accessToken)
            #expect(invalid.status == 400)
            #expect(
                invalid.json
                    == errorBody(
                        400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token",
                        details: [
                            fcmError("INVALID_ARGUMENT"),
                            badRequest("message.token", "The registration token is not a valid FCM registration token"),
                        ]))
            #expect(double.requests.map(\.errorCode) == ["UNREGISTERED", "SENDER_ID_MISMATCH", "INVALID_ARGUMENT"])
            double.unmark(registrationToken(1))
            #expect(try await client.send(message(to: registrationToken(1)), accessToken: accessToken).status == 200)
            #expect(double.acceptedMessages.map(\.token) == [registrationToken(1)])
        }
    }

    @Test func failNextAnswersCanonicalStatusesWithRetryAfter() async throws {
        try await run { double, client, _ in
            let accessToken = try await client.accessToken()
            double.failNext(2, .unavailable, retryAfter: 10)
            double.failNext(.quotaExceeded, retryAfter: 60)
            double.failNext(.internal)
            double.failNext(.thirdPartyAuthError)
            var answers: [FCMClient.Answer] = []
            for _ in 0..<6 { answers.append(try await client.send(message(), accessToken: accessToken)) }
            #expect(answers.map(\.status) == [503, 503, 429, 500, 401, 200])
            #expect(answers.map(\.canonicalStatus) == ["UNAVAILABLE", "UNAVAILABLE", "RESOURCE_EXHAUSTED", "INTERNAL", "UNAUTHENTICATED", nil])
            #expect(answers.map(\.errorCode) == ["UNAVAILABLE", "UNAVAILABLE", "QUOTA_EXCEEDED", "INTERNAL", "THIRD_PARTY_AUTH_ERROR", nil])
            #expect(answers.map { $0.headers["retry-after"] } == [["10"], ["10"], ["60"], [], [], []])
            #expect(answers[0].message == "The service is currently unavailable.")
            #expect(answers[2].message?.hasPrefix("Quota exceeded for quota metric") == true)
            #expect(answers[3].message == "Internal error encountered.")
            #expect(double.acceptedMessages.count == 1)
            #expect(
                FCMErrorCode.allCases.map(\.httpStatus) == [500, 400, 404, 403, 429, 503, 500, 401])
            // Validation comes first: an invalid message does not use up a fault.
            double.failNext(.unavailable)
            #expect(try await client.send(["data": ["a": "b"]], accessToken: accessToken).status == 400)
            #expect(try await client.send(message(), accessToken: accessToken).status == 503)
        }
    }

    @Test func droppedConnectionAndStalledRequestAreNotAnswered() async throws {
        try await run { double, client, _ in
            let accessToken = try await client.accessToken()
            double.dropConnectionOnNextRequest()
            await #expect(throws: (any Error).self) { _ = try await client.send(message(), accessToken: accessToken) }
            #expect(double.requests.last?.outcome == .droppedConnection)
            // The client reconnects once its pool has seen the connection close; then the request is answered.
            var answer: FCMClient.Answer?
            for _ in 0..<200 where answer == nil {
                answer = try? await client.send(message(), accessToken: accessToken)
                if answer == nil { try await Task.sleep(for: .milliseconds(20)) }
            }
            #expect(answer?.status == 200)
            #expect(double.counters.connections == 2)

            double.stallNext()
            // The client waits until the double has the request (on a loaded machine that may take a while), then
            // gives up: it had no answer.
            let stalledSend = Task { try await client.send(message(), accessToken: accessToken, timeout: .seconds(60)) }
            #expect(await eventually { double.requests.last?.outcome == .stalled })
            stalledSend.cancel()
            await #expect(throws: (any Error).self) { _ = try await stalledSend.value }
            #expect(double.acceptedMessages.count == 1)
        }
    }

    @Test func validateOnlyIsAnsweredButNotDelivered() async throws {
        try await run { double, client, _ in
            let accessToken = try await client.accessToken()
            let answer = try await client.send(message(), accessToken: accessToken, validateOnly: true)
            #expect(answer.status == 200)
            #expect(answer.json == ["name": .string("projects/\(Self.project)/messages/fake_message_id")])
            #expect(double.acceptedMessages.isEmpty)
            #expect(double.requests.last?.validateOnly == true)
            #expect(double.requests.last?.status == 200)
            // It is validated all the same.
            double.markUnregistered(registrationToken())
            #expect(try await client.send(message(), accessToken: accessToken, validateOnly: true).status == 404)
            #expect(double.counters.sendsValidated == 1 && double.counters.sendsAccepted == 0)
        }
    }

    // MARK: Transport

    @Test func concurrentSendsShareOneHTTP2Connection() async throws {
        try await run { double, client, _ in
            let accessToken = try await client.accessToken()
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for seed in 0..<50 {
                    group.addTask { try await client.send(message(to: registrationToken(seed)), accessToken: accessToken).status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 50))
            #expect(Set(double.acceptedMessages.compactMap(\.token)).count == 50)
            #expect(Set(double.requests.map(\.connectionID)).count == 1)
            #expect(double.requests.allSatisfy { $0.streamID % 2 == 1 })
        }
    }

    @Test func http1ClientsAreServedToo() async throws {
        try await run(httpVersion: .http1Only) { double, client, _ in
            let accessToken = try await client.accessToken()
            #expect(try await client.send(message(), accessToken: accessToken).status == 200)
            double.markUnregistered(registrationToken(2))
            let refused = try await client.send(message(to: registrationToken(2)), accessToken: accessToken)
            #expect(refused.errorCode == "UNREGISTERED")
            #expect(double.requests.map(\.streamID) == [2, 3])
            #expect(double.requests.first?.header(":authority") == "127.0.0.1:\(double.port)")
            #expect(double.counters.connections == 1)
        }
    }

    @Test func responseDelayHoldsEveryAnswer() async throws {
        try await run { double, client, _ in
            let accessToken = try await client.accessToken()
            double.setResponseDelay(.milliseconds(200))
            let start = ContinuousClock.now
            #expect(try await client.send(message(), accessToken: accessToken).status == 200)
            #expect(ContinuousClock.now - start >= .milliseconds(200))
            double.setResponseDelay(nil)
            double.resetLog()
            #expect(double.requests.isEmpty && double.acceptedMessages.isEmpty && double.tokenRequests.isEmpty)
            #expect(double.counters.sendsAccepted == 1)
        }
    }
}
