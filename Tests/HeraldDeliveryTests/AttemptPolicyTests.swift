import Foundation
import HeraldTesting
import Testing

@testable import HeraldCore
@testable import HeraldDelivery

/// The delivery policy alone: no store, no channel, no clock of its own.
@Suite("Attempt policy")
struct AttemptPolicyTests {
    let now = Date(timeIntervalSince1970: 1_763_812_800)
    let device = Fixtures.device().device
    /// No jitter: the back-off's full delay.
    let policy = AttemptPolicy(retryPolicy: RetryPolicy(initialDelay: 2, maximumDelay: 600), handOverTimeout: 15, jitter: { 1 })

    func notification(attempts: Int = 0, ttl: TimeInterval = 86_400) -> PushNotification {
        var notification = Fixtures.notification(for: device, at: now, ttl: ttl)
        notification.attempts = attempts
        return notification
    }

    func decision(_ step: DeliveryStep) -> AttemptDecision? {
        guard case .finish(let decision) = step else { return nil }
        return decision
    }

    /// Asks the provider, then finishes with its answer.
    func afterProvider(_ result: DeliveryResult, attempts: Int = 0, ttl: TimeInterval = 86_400, at time: Date? = nil)
        -> AttemptDecision?
    {
        let original = notification(attempts: attempts, ttl: ttl)
        var facts = AttemptFacts(device: device, hasProvider: true)
        guard case .sendToProvider(let sent) = policy.next(for: original, facts, at: now) else { return nil }
        #expect(sent.attempts == attempts + 1, "the attempt is counted before the provider sees it")
        facts.providerResult = result
        return decision(policy.next(for: original, facts, at: time ?? now))
    }

    @Test func aDeliveryIsRecordedWithTheProvidersID() throws {
        let delivered = try #require(afterProvider(.delivered(providerMessageID: "apns-1")))
        #expect(delivered.verdict == .delivered)
        #expect(delivered.channel == "apns")
        #expect(delivered.outcome.notification.status == .delivered)
        #expect(delivered.outcome.notification.providerMessageID == "apns-1")
        #expect(delivered.outcome.notification.attempts == 1)
        #expect(!delivered.outcome.releasesQuota)
    }

    @Test func retriesBackOffExponentiallyNeverBeforeTheProvidersMinimumAndUpToTheCap() throws {
        let first = try #require(afterProvider(.retry(reason: "503", after: nil)))
        #expect(first.verdict == .willRetry)
        #expect(first.outcome.notification.status == .pending)
        #expect(first.outcome.notification.nextAttemptAt == now.addingTimeInterval(2))
        #expect(first.outcome.notification.lastError == "503")
        let fourth = try #require(afterProvider(.retry(reason: "503", after: nil), attempts: 3))
        #expect(fourth.outcome.notification.nextAttemptAt == now.addingTimeInterval(16), "2 × 2^3")
        let asked = try #require(afterProvider(.retry(reason: "429", after: .seconds(30))))
        #expect(asked.outcome.notification.nextAttemptAt == now.addingTimeInterval(30), "the provider's Retry-After wins")
        let capped = try #require(afterProvider(.retry(reason: "503", after: nil), attempts: 20))
        #expect(capped.outcome.notification.nextAttemptAt == now.addingTimeInterval(600))
        let later = now.addingTimeInterval(5)
        let answeredLate = try #require(afterProvider(.retry(reason: "503", after: nil), at: later))
        #expect(answeredLate.outcome.notification.nextAttemptAt == later.addingTimeInterval(2), "from when the provider answered")
    }

    @Test func theJitterSpreadsRetriesBetweenHalfAndAllOfTheDelay() {
        let retries = RetryPolicy(initialDelay: 2, maximumDelay: 600)
        #expect(retries.delay(afterAttempts: 3, providerMinimum: nil, jitter: 0.5) == 4)
        #expect(retries.delay(afterAttempts: 3, providerMinimum: nil, jitter: 7) == 8, "clamped to 1")
        for _ in 0..<50 {
            let delay = retries.delay(afterAttempts: 3)
            #expect(delay >= 4 && delay <= 8)
        }
    }

    @Test func aRetryThatWouldFallAfterTheExpiryExpiresNowAndGivesItsQuotaBack() throws {
        let expired = try #require(afterProvider(.retry(reason: "503", after: .seconds(120)), ttl: 60))
        #expect(expired.verdict == .expired)
        #expect(expired.outcome.notification.status == .expired)
        #expect(expired.outcome.releasesQuota)
    }

    @Test func aDeadTokenFailsTheNotificationAndDeactivatesTheTokenButNotForALiveActivity() throws {
        let dead = try #require(afterProvider(.deadToken(reason: "Unregistered")))
        #expect(dead.verdict == .deadToken(reason: "Unregistered"))
        #expect(dead.outcome.notification.status == .failed)
        #expect(dead.outcome.deadToken == device.token)
        #expect(dead.outcome.releasesQuota)

        var activity = notification()
        activity.liveActivityToken = "activity-token"
        let facts = AttemptFacts(device: device, hasProvider: true, providerResult: .deadToken(reason: "ExpiredToken"))
        let ended = try #require(decision(policy.next(for: activity, facts, at: now)))
        #expect(ended.verdict == .deadToken(reason: "ExpiredToken"))
        #expect(ended.outcome.deadToken == nil, "an ended activity leaves the device active")
    }

    @Test func aRefusalIsFinal() throws {
        let refused = try #require(afterProvider(.failed(reason: "PayloadTooLarge")))
        #expect(refused.verdict == .refused(reason: "PayloadTooLarge"))
        #expect(refused.outcome.notification.status == .failed)
        #expect(refused.outcome.releasesQuota)
    }

    @Test func anExpiredNotificationIsNotSentAnywhere() throws {
        let late = now.addingTimeInterval(61)
        let facts = AttemptFacts(device: device, isConnectedLocally: true, hasProvider: true)
        let expired = try #require(decision(policy.next(for: notification(ttl: 60), facts, at: late)))
        #expect(expired.verdict == .expired)
        #expect(expired.channel == DeliveryMetrics.noProvider)
        #expect(expired.outcome.notification.status == .expired)
        #expect(expired.outcome.releasesQuota)
    }

    @Test func aRemovedOrInactiveDeviceIsUnavailable() throws {
        let removed = try #require(
            decision(policy.next(for: notification(), AttemptFacts(device: nil, hasProvider: true), at: now)))
        #expect(removed.verdict == .deviceUnavailable(reason: "The device was removed"))
        var inactive = device
        inactive.isActive = false
        inactive.inactiveReason = "Unregistered"
        let facts = AttemptFacts(device: inactive, hasProvider: true)
        let unavailable = try #require(decision(policy.next(for: notification(), facts, at: now)))
        #expect(unavailable.verdict == .deviceUnavailable(reason: "The device must register again: Unregistered"))
        #expect(unavailable.outcome.notification.status == .failed)
    }

    @Test func aConnectedClientIsOfferedTheNotificationBeforeTheProvider() throws {
        var facts = AttemptFacts(device: device, isConnectedLocally: true, hasProvider: true)
        #expect(policy.next(for: notification(), facts, at: now) == .offerLocally)
        facts.local = .taken
        let taken = try #require(decision(policy.next(for: notification(), facts, at: now)))
        #expect(taken.verdict == .delivered)
        #expect(taken.channel == "websocket")
        #expect(taken.outcome.notification.attempts == 1)
        facts.local = .notTaken
        guard case .sendToProvider = policy.next(for: notification(), facts, at: now) else {
            Issue.record("a client that did not take it falls back to the provider")
            return
        }
    }

    @Test func aParkedConfirmationEndsDeliveredOrFallsBackToTheProvider() throws {
        var facts = AttemptFacts(device: device, isConnectedLocally: true, local: .awaitingConfirmation, hasProvider: true)
        #expect(policy.next(for: notification(), facts, at: now) == .awaitConfirmation)
        facts.local = .confirmed
        let late = now.addingTimeInterval(86_401)
        let confirmed = try #require(decision(policy.next(for: notification(), facts, at: late)))
        #expect(confirmed.verdict == .delivered, "a client has it, whatever the time now")
        facts.local = .unconfirmed
        facts.isConnectedLocally = false  // the client left meanwhile
        guard case .sendToProvider(let sent) = policy.next(for: notification(), facts, at: now) else {
            Issue.record("an unconfirmed offer falls back to the provider")
            return
        }
        #expect(sent.attempts == 1)
        facts.hasProvider = false
        let retry = try #require(decision(policy.next(for: notification(), facts, at: now)))
        #expect(retry.verdict == .willRetry, "nothing else can deliver: the client is tried again")
        #expect(retry.channel == "websocket")
        #expect(retry.outcome.notification.lastError == "The WebSocket client did not confirm the notification")
        #expect(retry.outcome.notification.nextAttemptAt == now.addingTimeInterval(2))
    }

    @Test func aClientOnAnotherInstanceIsHandedTheNotification() throws {
        let facts = AttemptFacts(device: device, otherInstance: "herald-b", hasProvider: true)
        let handedOver = try #require(decision(policy.next(for: notification(), facts, at: now)))
        #expect(handedOver.verdict == .handedOver(instance: "herald-b"))
        #expect(handedOver.outcome.notification.status == .pending)
        #expect(handedOver.outcome.notification.attempts == 0, "not attempted here")
        #expect(
            handedOver.outcome.notification.nextAttemptAt == now.addingTimeInterval(15), "due here again if B does not take it")
        let connectedHere = AttemptFacts(device: device, isConnectedLocally: true, otherInstance: "herald-b", hasProvider: true)
        #expect(policy.next(for: notification(), connectedHere, at: now) == .offerLocally, "a client here comes first")
    }

    @Test func nothingAbleToDeliverParksTheNotificationUntilItsExpiry() throws {
        let webSocketOnly = Fixtures.device(platform: .websocket).device
        let waiting = Fixtures.notification(for: webSocketOnly, at: now)
        let parked = try #require(decision(policy.next(for: waiting, AttemptFacts(device: webSocketOnly), at: now)))
        #expect(parked.verdict == .parked)
        #expect(parked.outcome.isParked)
        #expect(parked.outcome.notification.nextAttemptAt == waiting.expiresAt)
        #expect(parked.outcome.notification.attempts == 0)
    }
}
