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

    /// Resolves and vets the host, waits for a place under the host's cap, and POSTs the message once.
    func send(authorizedBy authorization: String) async -> (outcome: WebPushAttemptOutcome, carrier: Never?)? {
        guard let host = endpoint.host?.lowercased() else { return (.refusedByPolicy("the endpoint has no host"), nil) }
        let addresses: [IPAddressBytes]
        switch await vettedAddresses(of: host) {
        case .success(let vetted): addresses = vetted
        case .failure(let outcome): return (outcome, nil)
        }
        let hostAndPort = "\(host):\(endpoint.port ?? 443)"
        let gate = hosts.gate(for: hostAndPort)
        await gate.enter()
        defer { gate.leave() }
        guard let client = hosts.client(host: hostAndPort, name: host, addresses: addresses) else { return nil }
        var request = HTTPClientRequest(url: endpoint.absoluteString)
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
