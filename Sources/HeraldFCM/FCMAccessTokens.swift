// Hand-written: Google's service-account flow (an RS256 assertion signed with swift-crypto, exchanged at the token
// endpoint over the provider's own AsyncHTTPClient). No measured figure keeps it; no maintained Swift server library
// for Google's OAuth was at hand. Replace it with one when one is, keeping one shared exchange per expiry and the
// renewal five minutes early.

import AsyncHTTPClient
import Foundation
import HeraldCore
import Logging
import NIOCore
import NIOHTTP1
import Synchronization
import _CryptoExtras

/// Obtains, caches and renews the OAuth 2.0 access token that authorises FCM sends (Google's service-account flow).
///
/// 1. An assertion is signed with the service account's RSA key (RS256): header `{"alg":"RS256","typ":"JWT","kid"}`,
///    claims `iss` = `client_email`, `scope` = `https://www.googleapis.com/auth/firebase.messaging`, `aud` =
///    `token_uri`, `iat` = now, `exp` = `iat` + 3,600.
/// 2. It is POSTed as a form (`grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=…`) to `token_uri`,
///    which answers `{"access_token", "expires_in", "token_type": "Bearer"}`.
/// 3. The token is reused until five minutes before it expires (``renewalMargin``), then exchanged again. A send
///    answered `401` renews it once at once (``renew(after:)``).
///
/// Concurrent callers share one exchange. Tokens and assertions are secrets: they are never logged.
public final class FCMAccessTokens: Sendable {
    /// An access token and when it stops being used.
    public struct Token: Sendable, Equatable {
        /// `Authorization: Bearer <value>`. A secret.
        public let value: String
        /// When it was obtained.
        public let obtainedAt: Date
        /// `obtainedAt + expires_in`.
        public let expiresAt: Date
    }

    /// Why no access token could be obtained.
    public struct ExchangeError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The token endpoint's HTTP status; `nil` when it gave no answer.
        public let status: Int?
        /// Google's `error` (e.g. `invalid_grant`) and `error_description`, or the transport error.
        public let description: String
    }

    /// The OAuth scope of FCM sends.
    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    /// How long before its expiry a token is renewed.
    public static let renewalMargin: TimeInterval = 300
    /// The lifetime of an assertion (Google's maximum).
    static let assertionLifetime = 3_600

    private struct State {
        var current: Token?
        var exchange: Task<Token, any Error>?
    }

    private let serviceAccount: FCMServiceAccount
    private let clients: FCMClientPool
    private let clock: any WallClock
    private let timeout: TimeAmount
    private let logger: Logger
    private let state = Mutex(State())

    init(serviceAccount: FCMServiceAccount, clients: FCMClientPool, clock: any WallClock, timeout: TimeAmount, logger: Logger) {
        self.serviceAccount = serviceAccount
        self.clients = clients
        self.clock = clock
        self.timeout = timeout
        self.logger = logger
    }

    /// The token to send with now: the cached one while it is more than five minutes from expiry, otherwise a new one.
    public func current() async throws(ExchangeError) -> Token {
        let now = clock.now()
        let cached = state.withLock { $0.current }
        if let cached, now < cached.expiresAt.addingTimeInterval(-Self.renewalMargin) { return cached }
        return try await exchange(replacing: cached)
    }

    /// Renews the token after FCM answered `401` to `rejected`; when another request already renewed it, returns the
    /// renewed one without a new exchange.
    public func renew(after rejected: Token) async throws(ExchangeError) -> Token {
        let cached = state.withLock { $0.current }
        if let cached, cached != rejected { return cached }
        return try await exchange(replacing: rejected)
    }

    /// One exchange shared by every caller that finds `stale` (or nothing) cached.
    private func exchange(replacing stale: Token?) async throws(ExchangeError) -> Token {
        enum Step {
            case renewed(Token)
            case await(Task<Token, any Error>)
        }
        let step: Step = state.withLock { state in
            if let running = state.exchange { return .await(running) }
            // Another caller renewed it since `stale` was read.
            if let current = state.current, current != stale { return .renewed(current) }
            let task = Task { [self] in try await self.obtain() }
            state.exchange = task
            return .await(task)
        }
        let task: Task<Token, any Error>
        switch step {
        case .renewed(let token): return token
        case .await(let running): task = running
        }
        do {
            let token = try await task.value
            state.withLock { state in
                if state.exchange == task {
                    state.exchange = nil
                    state.current = token
                }
            }
            return token
        } catch {
            state.withLock { state in if state.exchange == task { state.exchange = nil } }
            throw (error as? ExchangeError) ?? ExchangeError(status: nil, description: "\(error)")
        }
    }

    /// Signs an assertion and exchanges it at the token endpoint.
    private func obtain() async throws -> Token {
        let now = clock.now()
        let assertion = try makeAssertion(issuedAt: now)
        var request = HTTPClientRequest(url: serviceAccount.tokenURI)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "accept", value: "application/json")
        request.body = .bytes(
            ByteBuffer(string: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"))
        let status: Int
        let body: ByteBuffer
        guard let lease = clients.lease() else {
            throw ExchangeError(status: nil, description: "the FCM provider is shut down")
        }
        do {
            let response = try await lease.client.execute(request, timeout: timeout, logger: logger)
            status = Int(response.status.code)
            body = try await response.body.collect(upTo: 64 * 1024)
        } catch {
            if FCMClassification.replacesConnection(after: FCMClassification.outcome(of: error)) {
                await clients.replace(lease)
            }
            throw ExchangeError(status: nil, description: "token endpoint \(serviceAccount.tokenURI): \(error)")
        }
        let json = (try? JSONValue.decode(Data(body.readableBytesView)))?.objectValue ?? [:]
        guard status == 200 else {
            let error = json["error"]?.stringValue ?? "HTTP \(status)"
            let detail = json["error_description"]?.stringValue.map { ": \($0)" } ?? ""
            throw ExchangeError(status: status, description: "\(error)\(detail)")
        }
        guard let value = json["access_token"]?.stringValue, !value.isEmpty,
            let lifetime = json["expires_in"]?.doubleValue, lifetime > 0
        else {
            throw ExchangeError(status: status, description: "the token endpoint's answer has no access_token and expires_in")
        }
        logger.debug("FCM: obtained an access token", metadata: ["expires_in": "\(Int(lifetime))"])
        return Token(value: value, obtainedAt: now, expiresAt: now.addingTimeInterval(lifetime))
    }

    /// The compact RS256 JWT that asks for an access token.
    func makeAssertion(issuedAt date: Date) throws -> String {
        let issuedAt = Int(date.timeIntervalSince1970.rounded(.down))
        var header: JSONObject = ["alg": "RS256", "typ": "JWT"]
        if let keyID = serviceAccount.privateKeyID { header["kid"] = .string(keyID) }
        let claims: JSONObject = [
            "iss": .string(serviceAccount.clientEmail), "scope": .string(Self.scope), "aud": .string(serviceAccount.tokenURI),
            "iat": .int(issuedAt), "exp": .int(issuedAt + Self.assertionLifetime),
        ]
        let signingInput =
            Base64URL.encode(try JSONValue.object(header).encoded()) + "." + Base64URL.encode(try JSONValue.object(claims).encoded())
        let signature = try serviceAccount.privateKey.signature(for: Data(signingInput.utf8), padding: .insecurePKCS1v1_5)
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }
}
