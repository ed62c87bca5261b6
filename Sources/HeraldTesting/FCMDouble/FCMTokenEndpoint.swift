import Foundation
import HeraldCore
import _CryptoExtras

/// Google's OAuth 2.0 token endpoint for service accounts (the JWT-bearer grant, RFC 7523), as the double plays it:
/// `POST /token` with the form `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<JWT>`, the JWT
/// signed RS256 with the account's key (reference §3, "OAuth2 (service account)").
///
/// Checks, first failure wins, each answered 400 with Google's `{"error", "error_description"}`:
///
/// | Check | `error` | `error_description` |
/// |---|---|---|
/// | `grant_type` is the JWT-bearer URN | `unsupported_grant_type` | `Invalid grant_type: <value>` |
/// | `assertion` present | `invalid_request` | `Missing required parameter: assertion` |
/// | three base64url parts, JSON header and claims | `invalid_grant` | `Invalid JWT Signature.` |
/// | `iss` an email | `invalid_grant` | `Not a valid email.` |
/// | `iss` is the account's `client_email` | `invalid_grant` | `Invalid grant: account not found` |
/// | `alg` RS256, `typ` JWT if present, `kid` the `private_key_id` if present, signature | `invalid_grant` | `Invalid JWT Signature.` |
/// | `aud` is the token URI | `invalid_grant` | `Invalid JWT: Failed audience check. The right audience is <uri>` |
/// | numeric `iat` and `exp`, `exp − iat ≤ 3600`, `exp > now`, `iat ≤ now + 60 s` | `invalid_grant` | `Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.` |
/// | `scope` present and not empty | `invalid_scope` | `Empty or missing scope not allowed.` |
/// | every scope a Google API scope (`https://www.googleapis.com/auth/…`) | `invalid_scope` | `Invalid OAuth scope or ID token audience provided.` |
///
/// Descriptions as Google words them in answers quoted in public issues (e.g. google-api-ruby-client#862,
/// google/oculi#5, SteveWinward/GoogleSheetsWrapper#42); the audience one as commonly reported.
///
/// Like Google, the endpoint grants a token for any Google scope; one without `firebase.messaging` or
/// `cloud-platform` is then refused by the send endpoint (403 "Request had insufficient authentication scopes.").
enum FCMTokenEndpoint {
    static let jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    static let shortLivedDescription =
        "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. "
        + "Check your iat and exp values in the JWT claim."
    /// How far in the future an assertion's `iat` may be.
    static let allowedClockSkew: TimeInterval = 60

    /// A refusal: the OAuth `error` and `error_description` (always answered 400).
    struct Refusal: Error, Sendable, Equatable {
        var error: String
        var description: String

        static func invalidGrant(_ description: String) -> Refusal {
            Refusal(error: "invalid_grant", description: description)
        }
    }

    /// Checks a token request's form; returns the scopes granted.
    static func check(
        form: [String: String], assertion: CompactJWT?, account: FCMTestServiceAccount, tokenURI: String, now: Date
    ) -> Result<Set<String>, Refusal> {
        guard form["grant_type"] == jwtBearerGrant else {
            return .failure(
                Refusal(error: "unsupported_grant_type", description: "Invalid grant_type: \(form["grant_type"] ?? "")"))
        }
        guard let text = form["assertion"], !text.isEmpty else {
            return .failure(Refusal(error: "invalid_request", description: "Missing required parameter: assertion"))
        }
        guard let jwt = assertion else { return .failure(.invalidGrant("Invalid JWT Signature.")) }
        let header = jwt.header
        let claims = jwt.claims

        guard let issuer = claims["iss"]?.stringValue, issuer.contains("@") else {
            return .failure(.invalidGrant("Not a valid email."))
        }
        guard issuer == account.clientEmail else { return .failure(.invalidGrant("Invalid grant: account not found")) }
        guard header["alg"] == "RS256", header["typ"].map({ $0 == "JWT" }) ?? true,
            header["kid"].map({ $0 == .string(account.privateKeyID) }) ?? true,
            let signature = jwt.signature,
            account.publicKey.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: jwt.signingInput,
                padding: .insecurePKCS1v1_5)
        else { return .failure(.invalidGrant("Invalid JWT Signature.")) }
        guard claims["aud"] == .string(tokenURI) else {
            return .failure(.invalidGrant("Invalid JWT: Failed audience check. The right audience is \(tokenURI)"))
        }
        guard let issuedAt = claims["iat"]?.doubleValue, let expiresAt = claims["exp"]?.doubleValue,
            expiresAt - issuedAt <= 3_600, expiresAt > now.timeIntervalSince1970,
            issuedAt <= now.timeIntervalSince1970 + allowedClockSkew
        else { return .failure(.invalidGrant(shortLivedDescription)) }
        let scopes = Set((claims["scope"]?.stringValue ?? "").split(separator: " ").map(String.init))
        guard !scopes.isEmpty else {
            return .failure(Refusal(error: "invalid_scope", description: "Empty or missing scope not allowed."))
        }
        guard scopes.allSatisfy({ $0.hasPrefix("https://www.googleapis.com/auth/") }) else {
            return .failure(
                Refusal(error: "invalid_scope", description: "Invalid OAuth scope or ID token audience provided."))
        }
        return .success(scopes)
    }

    /// The fields of an `application/x-www-form-urlencoded` body (`+` is a space, `%XX` an escaped byte; a field
    /// given twice keeps its first value).
    static func formFields(_ body: Data) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ text: Substring) -> String {
                let spaced = text.replacingOccurrences(of: "+", with: " ")
                return spaced.removingPercentEncoding ?? spaced
            }
            let name = decode(parts[0])
            if fields[name] == nil { fields[name] = parts.count > 1 ? decode(parts[1]) : "" }
        }
        return fields
    }

    /// The answer to a token request: `200 {"access_token", "expires_in", "token_type": "Bearer"}` or the refusal.
    static func response(_ outcome: FCMDouble.TokenOutcome) -> DoubleResponse {
        let status: Int
        let body: JSONObject
        switch outcome {
        case .granted(let accessToken, let expiresIn):
            status = 200
            body = ["access_token": .string(accessToken), "expires_in": .int(expiresIn), "token_type": "Bearer"]
        case .refused(let code, let error, let description):
            status = code
            body = ["error": .string(error), "error_description": .string(description)]
        }
        return DoubleResponse(
            headers: [(":status", String(status)), ("content-type", "application/json; charset=utf-8")],
            body: (try? JSONValue.object(body).encoded()) ?? Data())
    }

    /// The OAuth error of an injected failure (``FCMDouble/failNextTokenRequests(_:status:)``).
    static func injectedFailure(status: Int) -> FCMDouble.TokenOutcome {
        switch status {
        case 503: .refused(status: status, error: "temporarily_unavailable", description: "The service is currently unavailable.")
        case 500...: .refused(status: status, error: "server_error", description: "Internal error encountered.")
        default: .refused(status: status, error: "invalid_request", description: "Bad Request")
        }
    }
}
