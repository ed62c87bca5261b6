import AsyncHTTPClient
import Crypto
import Foundation
import HeraldCore
import HeraldTesting
import NIOCore
import NIOHTTP1

/// Talks to an `APNsDouble` with hand-made requests, bypassing `APNsProvider`. One `HTTPClient` = one HTTP/2 connection.
struct DirectClient {
    struct Answer {
        var status: Int
        var headers: HTTPHeaders
        var body: Data

        var reason: String? {
            guard case .object(let object)? = try? JSONValue.decode(body) else { return nil }
            return object["reason"]?.stringValue
        }
        var json: JSONObject? {
            guard case .object(let object)? = try? JSONValue.decode(body) else { return nil }
            return object
        }
    }

    let client: HTTPClient
    let baseURL: String

    static func run(
        against double: APNsDouble, baseURL: String? = nil,
        httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic,
        _ body: (DirectClient) async throws -> Void
    ) async throws {
        var configuration = HTTPClient.Configuration(tlsConfiguration: try double.certificates.clientTLSConfiguration())
        configuration.httpVersion = httpVersion
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        do {
            try await body(DirectClient(client: client, baseURL: baseURL ?? double.baseURL))
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    /// Sends a request; `headers` go out exactly as given (repeats included).
    func send(
        method: HTTPMethod = .POST, path: String = "/3/device/\(Fixtures.apnsToken())", headers: [(String, String)],
        body: Data = Data(#"{"aps":{"alert":"Hi"}}"#.utf8)
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if !body.isEmpty { request.body = .bytes(body) }
        let response = try await client.execute(request, timeout: .seconds(10))
        let bytes = try await response.body.collect(upTo: 1 << 16)
        return Answer(status: Int(response.status.code), headers: response.headers, body: Data(bytes.readableBytesView))
    }
}

/// Builds JWTs by hand, including broken ones.
enum JWTFactory {
    static func make(header: JSONObject, claims: JSONObject, signingKey: P256.Signing.PrivateKey) throws -> String {
        let input = base64URL(try JSONValue.object(header).encoded()) + "." + base64URL(try JSONValue.object(claims).encoded())
        let signature = try signingKey.signature(for: Data(input.utf8)).rawRepresentation
        return input + "." + base64URL(signature)
    }

    /// A correct provider token for `key` issued at `iat`.
    static func valid(for key: TestKey, issuedAt iat: Date) throws -> String {
        try make(
            header: ["alg": "ES256", "kid": .string(key.keyID)],
            claims: ["iss": .string(key.teamID), "iat": .int(Int(iat.timeIntervalSince1970))],
            signingKey: key.privateKey)
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decodeBase64URL(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}

/// Headers of a request that passes every check of the double, given a provider token.
func validHeaders(jwt: String, topic: String = APNsHarness.topic) -> [(String, String)] {
    [
        ("authorization", "bearer \(jwt)"), ("apns-push-type", "alert"), ("apns-topic", topic),
        ("apns-priority", "10"), ("apns-id", UUID().uuidString.lowercased()),
    ]
}
