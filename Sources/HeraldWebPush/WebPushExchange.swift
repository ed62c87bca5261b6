import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldProviderKit
import Logging
import NIOCore
import NIOHTTP1

/// One notification's exchange with a push service, as the shared attempt loop (``ProviderAttempts``) drives it: the
/// VAPID `Authorization` value is the credential, a client of ``WebPushHosts`` carries the request to the vetted
/// address, ``WebPushClassification`` decides.
struct WebPushExchange: ProviderExchange {
    let notificationID: UUID
    let endpoint: URL
    let body: ByteBuffer
    /// `TTL`, `Urgency`, `Topic`, `Content-Encoding`, `Content-Type`.
    let headers: HTTPHeaders
    let signer: VAPIDSigner
    let hosts: WebPushHosts
    let policy: WebPushEgressPolicy
    let resolver: any WebPushResolver
    let requestTimeout: TimeAmount
    let timeoutDescription: String
    let logger: Logger

    var logMetadata: Logger.Metadata {
        ["notification": "\(notificationID)", "push-service": "\(endpoint.host ?? "?")"]
    }

    /// The `Authorization` header's value for the endpoint's origin (cached per origin by the signer).
    func credential() async throws(CredentialUnavailable) -> String {
        signer.authorization(for: endpoint)
    }

    /// Never asked for: a refused VAPID token is not renewed (``WebPushClassification``).
    func renewedCredential(after rejected: String) async throws(CredentialUnavailable) -> String {
        rejected
    }

    /// Resolves and vets the host (lower-cased), takes a place under the host's cap (or answers "busy" at once), and
    /// POSTs the message once to the vetted address. The request's URL carries the host lower-cased, the name the
    /// client's `dnsOverride` holds the vetted address under, so however the endpoint spells it nothing looks it up
    /// again.
    func send(authorizedBy authorization: String) async -> (outcome: WebPushAttemptOutcome, carrier: Never?)? {
        guard let target = Self.lowercasingHost(endpoint) else {
            return (.refusedByPolicy("the endpoint's host cannot be read"), nil)
        }
        let addresses: [IPAddressBytes]
        switch await vettedAddresses(of: target.host) {
        case .success(let vetted): addresses = vetted
        case .failure(let outcome): return (outcome, nil)
        }
        let hostAndPort = "\(target.host):\(target.url.port ?? 443)"
        let client: HTTPClient
        switch hosts.begin(host: hostAndPort, name: target.host, addresses: addresses) {
        case .admitted(let admitted): client = admitted
        case .hostBusy(let limit): return (.busy("\(target.host) already has \(limit) requests in flight"), nil)
        case .clientsBusy(let limit): return (.busy("all \(limit) push service connections are busy"), nil)
        case .shutDown: return nil
        }
        defer { hosts.end(host: hostAndPort, client: client) }
        var request = HTTPClientRequest(url: target.url.absoluteString)
        request.method = .POST
        request.headers = headers
        request.headers.add(name: "authorization", value: authorization)
        request.body = .bytes(body)
        do {
            let response = try await client.execute(request, timeout: requestTimeout, logger: logger)
            let answer = try await response.body.collect(upTo: 16 * 1024)
            return (
                .answered(
                    WebPushResponse(
                        status: Int(response.status.code),
                        retryAfter: WebPushClassification.seconds(fromRetryAfter: response.headers.first(name: "retry-after")),
                        text: WebPushClassification.reasonText(answer), location: response.headers.first(name: "location"))),
                nil
            )
        } catch {
            return (WebPushClassification.outcome(of: error), nil)
        }
    }

    /// `endpoint` with its host's ASCII letters lower-cased, and that host as the URL now gives it (what AsyncHTTPClient
    /// connects to); `nil` when the URL cannot be rewritten so that its host reads back exactly so.
    static func lowercasingHost(_ endpoint: URL) -> (url: URL, host: String)? {
        func lower(_ text: String) -> String {
            String(decoding: text.utf8.map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
        }
        guard let written = endpoint.host, !written.isEmpty else { return nil }
        // Already lower-case, or an address (connected to as it is, no lookup): nothing to rewrite.
        if written == lower(written) || IPAddressBytes(written) != nil { return (endpoint, lower(written)) }
        guard var components = URLComponents(url: endpoint, resolvingAgainstBaseURL: false),
            let encodedHost = components.percentEncodedHost
        else { return nil }
        components.percentEncodedHost = lower(encodedHost)
        guard let url = components.url, let host = url.host, host == lower(written) else { return nil }
        return (url, host)
    }

    private enum Vetting {
        case success([IPAddressBytes])
        case failure(WebPushAttemptOutcome)
    }

    /// The addresses that may be connected to: the host's own when it is an address, otherwise those it resolves to,
    /// once every one of them passed the egress policy.
    private func vettedAddresses(of host: String) async -> Vetting {
        let addresses: [IPAddressBytes]
        if let literal = IPAddressBytes(host) {
            addresses = [literal]
        } else {
            do {
                addresses = try await resolver.addresses(of: host)
            } catch {
                return .failure(.unresolved("\(error)"))
            }
        }
        if let refusal = policy.refusal(host: host, addresses: addresses) { return .failure(.refusedByPolicy(refusal)) }
        guard !addresses.isEmpty else { return .failure(.unresolved("\(host) has no address")) }
        return .success(addresses)
    }

    /// Connections belong to AsyncHTTPClient's pool, which replaces lost ones itself.
    func replaceIfSpent(_ carrier: Never?, after outcome: WebPushAttemptOutcome) async -> Bool {
        false
    }

    func nextStep(after outcome: WebPushAttemptOutcome, hasRenewedCredential: Bool, hasResent: Bool) -> AttemptStep {
        WebPushClassification.nextStep(after: outcome, timeout: timeoutDescription)
    }
}
