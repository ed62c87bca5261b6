import Foundation
import HTTPTypes
import HeraldCore
import HeraldTesting
import HummingbirdTesting
import NIOCore
import Testing

/// A device registered with a push-to-start token and an API token for PushWard's activity paths.
struct ActivityDevice: Sendable {
    var owner: Registration
    var bearer: HTTPFields
    var pushToStartToken: String
    var deviceToken: String
}

extension TestClientProtocol {
    /// Registers an APNs device (with a push-to-start token unless `pushToStart` is false) and creates an API token
    /// with every scope.
    func activityDevice(number: Int = 1, pushToStart: Bool = true) async throws -> ActivityDevice {
        let token = Fixtures.apnsToken(number)
        let startToken = Fixtures.apnsToken(100 + number)
        let extra = pushToStart ? #", "live_activity_push_to_start_token": "\#(startToken)""# : ""
        let response = try await post("/api/push/register", #"{"token": "\#(token)", "environment": "production"\#(extra)}"#)
        #expect(response.status == .created)
        let body = try response.json()
        let owner = Registration(userID: try #require(body["user_id"]?.stringValue), secret: try #require(body["device_secret"]?.stringValue))
        let created = try await createToken(for: owner, scopes: nil)
        return ActivityDevice(
            owner: owner, bearer: [.authorization: "Bearer \(created.token)"], pushToStartToken: startToken, deviceToken: token)
    }

    /// A request to PushWard's paths with the device's API token (`body` as JSON text).
    func activity(
        _ method: HTTPRequest.Method, _ uri: String, _ body: String? = nil, as device: ActivityDevice,
        contentType: String = "application/json"
    ) async throws -> TestResponse {
        var headers = device.bearer
        if body != nil { headers[.contentType] = contentType }
        return try await execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
    }

    /// `PUT /api/push/activities/{slug}/token` with the owner's credentials.
    func reportUpdateToken(_ token: String, slug: String, as device: ActivityDevice) async throws -> TestResponse {
        try await post("/api/push/activities/\(slug)/token", #"{"token": "\#(token)"}"#, headers: device.owner.basic, method: .put)
    }
}

extension TestResponse {
    /// The body as a JSON object, whatever the content type.
    var jsonObject: JSONObject? { try? JSONValue.decode(Data(body.readableBytesView)).objectValue }
}

extension APNsDouble.RecordedRequest {
    /// The `aps` dictionary of the payload.
    var aps: JSONObject? { (try? JSONValue.decode(body))?.objectValue?["aps"]?.objectValue }
}
