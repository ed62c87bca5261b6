import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import Synchronization

/// Slows down credential guessing on every endpoint that checks a credential: counts failed checks per client
/// address in fixed one-minute windows. Once an address has failed ``maximumFailures`` times in its window, it is
/// locked out until the window ends: a request from it is answered 429 `too_many_auth_failures` with `Retry-After`
/// before the store is asked, unless it carries a credential this process has recently seen authenticate (or has
/// issued), which proceeds as usual. So a guesser gets no answer that tells a right guess from a wrong one, and the
/// owner of a valid credential behind the same address is not locked out with the guesser.
///
/// A failure is a credential check answered 401, 403 or 404 (missing, wrong or unknown credential); a 400 for a
/// malformed one, a 410 for a deactivated device and a 503 for an unavailable store are not. A window starts at the
/// first failure; addresses whose window has ended are forgotten.
///
/// An IPv6 client is counted by its /64 and, so that an attacker spread over many /64s of one site is throttled too,
/// also by its /48: the /48 is locked out after ``maximumFailuresPerWiderPrefix`` failures of all its /64s together,
/// and a request is refused when either is locked out. At most ``maximumTrackedAddresses`` windows are kept; when
/// that many are there, ended windows go first, then a tenth of them, those with the fewest failures (a lock-out is
/// the last thing forgotten: flooding the tracker with new addresses does not lift one). Everything is in memory: a restart forgets it, each
/// Herald process counts on its own, and a valid credential not seen by this process since it started is refused
/// during a lock-out like any other (for at most one window).
///
/// ```swift
/// let device = try await limiter.guarding(client, credential: .owner(userID: id, secret: secret)) {
///     try await directory.owner(userID: id, secret: secret)
/// }
/// ```
final class AuthFailureLimiter: Sendable {
    /// Failures allowed per window and client (an IPv4 address or an IPv6 /64); the next request is refused.
    static let maximumFailures = 10
    /// Failures allowed per window to all the /64s of one IPv6 /48 together.
    static let maximumFailuresPerWiderPrefix = 100
    /// The length of a window.
    static let window: TimeInterval = 60
    /// How many addresses are remembered at most; beyond that the oldest windows are dropped.
    static let maximumTrackedAddresses = 10_000
    /// How many credentials that authenticated are remembered at most (about 40 bytes each).
    static let maximumRememberedCredentials = 100_000

    private struct Window {
        var start: Date
        var failures: Int
    }

    private struct State {
        var windows: [String: Window] = [:]
        /// Credentials seen to authenticate, in two generations: `recent` fills up to half the capacity and then
        /// becomes `older` (the previous `older` is forgotten); a credential found in `older` moves back to `recent`.
        /// An approximate least-recently-used set with constant-time operations.
        var recent: Set<CredentialFingerprint> = []
        var older: Set<CredentialFingerprint> = []

        mutating func isRemembered(_ credential: CredentialFingerprint) -> Bool {
            if recent.contains(credential) { return true }
            guard older.contains(credential) else { return false }
            remember(credential)
            return true
        }

        mutating func remember(_ credential: CredentialFingerprint) {
            guard !recent.contains(credential) else { return }
            older.remove(credential)
            if recent.count >= AuthFailureLimiter.maximumRememberedCredentials / 2 {
                older = recent
                recent = []
            }
            recent.insert(credential)
        }
    }

    private let clock: any WallClock
    private let state = Mutex(State())

    init(clock: any WallClock) {
        self.clock = clock
    }

    /// Runs `authenticate`, which checks `credential` (`nil` when the request carries none), for a request from
    /// `client`, unless the client is locked out and the credential is not remembered (429). A 401, 403 or 404
    /// `APIError` it throws counts as a failure; success remembers the credential.
    func guarding<Value>(
        _ client: String, credential: CredentialFingerprint?, _ authenticate: () async throws -> Value
    ) async throws -> Value {
        try checkAllowed(client, credential: credential)
        do {
            let value = try await authenticate()
            if let credential { remember(credential) }
            return value
        } catch let error as APIError where Self.isFailure(error) {
            recordFailure(client)
            throw error
        }
    }

    /// Whether a refusal of a credential check counts as a failed guess.
    static func isFailure(_ error: APIError) -> Bool {
        [.unauthorized, .forbidden, .notFound].contains(error.status)
    }

    /// Throws 429 when `client` used up its failures in the current window and `credential` is not remembered.
    func checkAllowed(_ client: String, credential: CredentialFingerprint?) throws {
        let now = clock.now()
        let retryAfter: Int? = state.withLock { state in
            var lockoutEnd: Date?
            for (key, limit) in Self.keys(of: client) {
                guard let window = state.windows[key] else { continue }
                let end = window.start.addingTimeInterval(Self.window)
                if now >= end {
                    state.windows[key] = nil
                } else if window.failures >= limit {
                    lockoutEnd = max(lockoutEnd ?? end, end)
                }
            }
            guard let lockoutEnd else { return nil }
            if let credential, state.isRemembered(credential) { return nil }
            return max(1, Int(lockoutEnd.timeIntervalSince(now).rounded(.up)))
        }
        if let retryAfter { throw APIError.tooManyAuthFailures(retryAfter: retryAfter) }
    }

    /// Remembers a credential that authenticated or that Herald just issued.
    func remember(_ credential: CredentialFingerprint) {
        state.withLock { $0.remember(credential) }
    }

    /// Counts one failure of `client`.
    func recordFailure(_ client: String) {
        let now = clock.now()
        state.withLock { state in
            for (key, _) in Self.keys(of: client) {
                if var window = state.windows[key], now < window.start.addingTimeInterval(Self.window) {
                    window.failures += 1
                    state.windows[key] = window
                    continue
                }
                if state.windows.count >= Self.maximumTrackedAddresses {
                    state.windows = state.windows.filter { now < $0.value.start.addingTimeInterval(Self.window) }
                }
                if state.windows.count >= Self.maximumTrackedAddresses {
                    // A tenth at once, the fewest failures first and of those the oldest: lock-outs stay.
                    let weakest = state.windows.sorted { ($0.value.failures, $0.value.start) < ($1.value.failures, $1.value.start) }
                    for (dropped, _) in weakest.prefix(Self.maximumTrackedAddresses / 10) { state.windows[dropped] = nil }
                }
                state.windows[key] = Window(start: now, failures: 1)
            }
        }
    }

    /// The keys a client's failures count under, each with its limit: the client itself, and for an IPv6 /64 its /48.
    private static func keys(of client: String) -> [(key: String, limit: Int)] {
        guard let wider = IPAddress.widerKey(ofClientKey: client) else { return [(client, maximumFailures)] }
        return [(client, maximumFailures), (wider, maximumFailuresPerWiderPrefix)]
    }
}

/// A credential as ``AuthFailureLimiter`` remembers it: 128 bits of the SHA-256 of its kind and value, never the value.
struct CredentialFingerprint: Hashable, Sendable {
    private let high: UInt64
    private let low: UInt64

    private init(_ kind: String, _ value: String) {
        (high, low) = Secrets.fingerprint(kind + "\u{0}" + value)
    }

    /// The device owner's `user_id`/`device_secret` (Basic, body, WebSocket).
    static func owner(userID: String, secret: String) -> Self { Self("owner", userID.lowercased() + ":" + secret) }
    /// A USER_ID as a sender's credential (`/api/push/notify`, Home Assistant's `push_token`, Bearer), as the dialect
    /// parsed it (its text is lowercase).
    static func userID(_ userID: UserID) -> Self { Self("user_id", userID.text) }
    /// An API token (`hrd_…`).
    static func apiToken(_ token: String) -> Self { Self("api_token", token) }
    /// The operator's registration token (`X-Herald-Registration-Token`).
    static func registrationToken(_ token: String) -> Self { Self("registration_token", token) }
    /// The operator's dashboard token (`HERALD_ADMIN_TOKEN`, at `POST /admin/login`).
    static func adminToken(_ token: String) -> Self { Self("admin_token", token) }
    /// A topic id (`tp_…`) as a sender's or a joining device's credential.
    static func topicID(_ id: String) -> Self { Self("topic_id", id.lowercased()) }

    /// The owner credentials of a request's `Authorization: Basic` header, if it has them.
    static func basic(of request: Request) -> Self? {
        Credentials.basic(request).map { owner(userID: $0.userID, secret: $0.secret) }
    }
}

/// The failed-credential limiter and the client-address rule together, as the controllers use them.
struct CredentialGuard: Sendable {
    let limiter: AuthFailureLimiter
    let addresses: ClientAddressResolver

    /// Runs `authenticate` under ``AuthFailureLimiter/guarding(_:credential:_:)`` for the request's client. A request
    /// that carries no credential at all is not a guess: `authenticate` answers it (401), neither counted nor refused
    /// by a lock-out.
    func check<Value>(
        _ credential: CredentialFingerprint?, of request: Request, context: some RemoteAddressRequestContext,
        _ authenticate: () async throws -> Value
    ) async throws -> Value {
        guard let credential else { return try await authenticate() }
        return try await limiter.guarding(addresses.clientKey(of: request, context: context), credential: credential, authenticate)
    }
}
