import AsyncHTTPClient
import Foundation
import HeraldCore
import HeraldTesting
import NIOCore
import NIOHTTP1
import _CryptoExtras

/// Talks to an `FCMDouble` with hand-made requests over real sockets. One `HTTPClient` = one HTTP/2 connection.
struct FCMClient {
    struct Answer {
        var status: Int
        var headers: HTTPHeaders
        var body: Data

        var json: JSONObject? {
            guard case .object(let object)? = try? JSONValue.decode(body) else { return nil }
            return object
        }
        /// `error` of a Google API error body.
        var error: JSONObject? { json?["error"]?.objectValue }
        /// `error.message`.
        var message: String? { error?["message"]?.stringValue }
        /// `error.status`.
        var canonicalStatus: String? { error?["status"]?.stringValue }
        /// The `errorCode` of the FcmError detail.
        var errorCode: String? {
            error?["details"].flatMap { details -> [JSONValue]? in
                if case .array(let items) = details { return items }
                return nil
            }?.compactMap(\.objectValue)
                .first { $0["@type"] == "type.googleapis.com/google.firebase.fcm.v1.FcmError" }?["errorCode"]?.stringValue
        }
    }

    let client: HTTPClient
    let double: FCMDouble

    static func run(
        against double: FCMDouble, httpVersion: HTTPClient.Configuration.HTTPVersion = .automatic,
        _ body: (FCMClient) async throws -> Void
    ) async throws {
        var configuration = HTTPClient.Configuration(tlsConfiguration: try double.certificates.clientTLSConfiguration())
        configuration.httpVersion = httpVersion
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        do {
            try await body(FCMClient(client: client, double: double))
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    /// Sends a request; `headers` go out exactly as given.
    func request(
        _ method: HTTPMethod = .POST, path: String, headers: [(String, String)], body: Data, timeout: TimeAmount = .seconds(10)
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: double.baseURL + path)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if !body.isEmpty { request.body = .bytes(body) }
        let response = try await client.execute(request, timeout: timeout)
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return Answer(status: Int(response.status.code), headers: response.headers, body: Data(bytes.readableBytesView))
    }

    /// `POST /token` with the JWT-bearer grant form.
    func exchange(_ assertion: String, grantType: String = "urn:ietf:params:oauth:grant-type:jwt-bearer") async throws -> Answer {
        let form = "grant_type=\(grantType.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")&assertion=\(assertion)"
        return try await request(
            path: "/token", headers: [("content-type", "application/x-www-form-urlencoded")], body: Data(form.utf8))
    }

    /// A fresh access token, by a correct exchange.
    func accessToken(scope: String = FCMDouble.messagingScope) async throws -> String {
        let assertion = try double.serviceAccount.assertion(
            tokenURI: double.tokenURI, scope: scope, issuedAt: double.clock.now())
        let answer = try await exchange(assertion)
        guard let token = answer.json?["access_token"]?.stringValue else { throw UnexpectedAnswer(answer: answer) }
        return token
    }

    /// `POST /v1/projects/<project>/messages:send` with `{"message": message}` (and `validate_only` when given).
    func send(
        _ message: JSONObject, accessToken: String?, validateOnly: Bool? = nil, project: String? = nil,
        timeout: TimeAmount = .seconds(10)
    ) async throws -> Answer {
        var body: JSONObject = ["message": .object(message)]
        if let validateOnly { body["validate_only"] = .bool(validateOnly) }
        return try await send(body: try JSONValue.object(body).encoded(), accessToken: accessToken, project: project, timeout: timeout)
    }

    /// `POST /v1/projects/<project>/messages:send` with a raw body.
    func send(body: Data, accessToken: String?, project: String? = nil, timeout: TimeAmount = .seconds(10)) async throws -> Answer {
        var headers = [("content-type", "application/json; charset=UTF-8")]
        if let accessToken { headers.append(("authorization", "Bearer \(accessToken)")) }
        return try await request(
            path: "/v1/projects/\(project ?? double.projectID)/messages:send", headers: headers, body: body, timeout: timeout)
    }

    struct UnexpectedAnswer: Error, CustomStringConvertible {
        var answer: Answer
        var description: String { "unexpected answer \(answer.status): \(String(decoding: answer.body, as: UTF8.self))" }
    }
}

/// A registration token shaped like FCM's (`<instance id>:APA91b…`), different for each seed.
func registrationToken(_ seed: Int = 1) -> String {
    "dGVzdC1pbnN0YW5jZS1\(seed):APA91b" + String(repeating: "Hq7kLm2Xw9", count: 14)
}
