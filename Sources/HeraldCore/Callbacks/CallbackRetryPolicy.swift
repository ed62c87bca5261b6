import Foundation

/// What one attempt to deliver a callback came to, as the sender saw it.
public enum CallbackAttemptAnswer: Sendable, Equatable {
    /// The receiver answered with an HTTP status (and, on 429 or 503, perhaps `Retry-After` in seconds).
    case answered(status: Int, retryAfter: Int?)
    /// No answer: the name did not resolve, the connection failed, or a deadline passed.
    case unreachable(String)
    /// Herald may not connect there (egress rules: a private address not listed in `HERALD_CALLBACK_ALLOWED_NETWORKS`,
    /// not https).
    case refused(String)
    /// Not attempted: the receiver's host already had its cap of requests in flight (not counted as an attempt).
    case hostBusy
}

/// What to do with a callback after an attempt.
public enum CallbackStep: Sendable, Equatable {
    /// A 2xx: done.
    case delivered
    /// A 410: the receiver asks for no more; done, not retried.
    case gone
    /// Given up: egress refused, or every attempt failed (`reason` says which).
    case failed(reason: String)
    /// Try again at `date`; `countsAttempt` is false when nothing was sent (the host was busy).
    case retry(at: Date, countsAttempt: Bool)
}

/// When callbacks are tried again, and which answers end them: a pure decision, facts in and a step out.
///
/// | Answer | Step |
/// |---|---|
/// | 2xx | delivered |
/// | 410 Gone | gone (Standard Webhooks: the endpoint asks to be disabled) |
/// | egress refused | failed at once |
/// | any other status (3xx: redirects are not followed; 4xx; 5xx), no answer, a deadline | retry on the schedule |
/// | the host's cap full | retry in ``busyDelay`` seconds, not counted |
///
/// The schedule (``delays``): 30 s, 2 min, 5 min, 10 min, 15 min, 30 min after the attempts before, so the first two
/// retries come within 3 minutes (30 s and 2 min 30 s after the first attempt) and the last about an hour after it
/// (62 min 30 s); seven attempts in all. A `Retry-After` (on 429 or 503) longer than the scheduled delay postpones the
/// retry to it, never beyond ``maximumRetryAfter``.
///
/// ```swift
/// let policy = CallbackRetryPolicy()
/// policy.step(after: .answered(status: 500, retryAfter: nil), attemptsMade: 1, now: now)   // .retry(at: now + 30 s, countsAttempt: true)
/// policy.step(after: .answered(status: 410, retryAfter: nil), attemptsMade: 1, now: now)   // .gone
/// ```
public struct CallbackRetryPolicy: Sendable, Equatable {
    /// The delay before each retry, by the number of attempts already made (the first entry follows attempt 1).
    public static let delays: [TimeInterval] = [30, 120, 300, 600, 900, 1_800]
    /// How long a callback whose host was busy waits before it is looked at again.
    public static let busyDelay: TimeInterval = 1
    /// The longest `Retry-After` honoured (seconds).
    public static let maximumRetryAfter = 3_600

    /// The most attempts: the first and one per entry of ``delays``.
    public var maximumAttempts: Int { Self.delays.count + 1 }

    public init() {}

    /// The step after an attempt; `attemptsMade` counts the attempts including this one (1 after the first).
    public func step(after answer: CallbackAttemptAnswer, attemptsMade: Int, now: Date) -> CallbackStep {
        let reason: String
        var retryAfter: Int?
        switch answer {
        case .answered(let status, let after):
            if (200...299).contains(status) { return .delivered }
            if status == 410 { return .gone }
            reason = "the receiver answered \(status)"
            if status == 429 || status == 503 { retryAfter = after }
        case .unreachable(let cause):
            reason = cause
        case .refused(let cause):
            return .failed(reason: cause)
        case .hostBusy:
            return .retry(at: now.addingTimeInterval(Self.busyDelay), countsAttempt: false)
        }
        guard attemptsMade >= 1, attemptsMade < maximumAttempts else {
            return .failed(reason: "\(reason) (after \(max(attemptsMade, 0)) attempts)")
        }
        var delay = Self.delays[attemptsMade - 1]
        if let retryAfter, retryAfter > 0 {
            delay = max(delay, TimeInterval(min(retryAfter, Self.maximumRetryAfter)))
        }
        return .retry(at: now.addingTimeInterval(delay), countsAttempt: true)
    }

    /// `Retry-After` as whole seconds (its HTTP-date form is not honoured); `nil` when absent, negative or not a number.
    public static func seconds(fromRetryAfter text: String?) -> Int? {
        guard let text = text?.trimmingCharacters(in: .whitespaces), !text.isEmpty, text.utf8.count <= 10,
            text.utf8.allSatisfy({ (48...57).contains($0) })
        else { return nil }
        return Int(text)
    }
}
