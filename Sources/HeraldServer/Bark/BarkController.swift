import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird

extension ErrorShape {
    /// Bark's error body: `{"code": 400, "message": "…", "timestamp": 1700000000}`.
    static let bark = ErrorShape(name: "bark") { error in
        ["code": .int(error.status.code), "message": .string(error.message), "timestamp": .int(Int(Date().timeIntervalSince1970))]
    }
}

/// Bark's push API (docs/senders.md, "Bark"): `POST /push` with `device_key` (or `device_keys`), and the path forms
/// `/:key`, `/:key/:body`, `/:key/:title/:body`, `/:key/:title/:subtitle/:body` with GET or POST (form or JSON). The key
/// is a USER_ID. Answers are Bark's: `{"code": 200, "message": "success", "timestamp"}`.
///
/// The path forms share the root with Herald's own routes: they are reached through ``SenderPathMiddleware``.
struct BarkController<Context: RemoteAddressRequestContext>: Sendable {
    let senders: SenderDelivery

    /// The most keys one `POST /push` may name.
    static var maximumKeys: Int { 20 }

    func addRoutes(to router: some RouterMethods<Context>) {
        router.group("push").add(middleware: ErrorShapeMiddleware(.bark)).post(use: push)
    }

    @Sendable func push(_ request: Request, context: Context) async throws -> Response {
        let input = try await SenderRequest.read(request, limit: senders.bodyLimit)
        let parameters: [String: String]
        var keys: [String]
        if let json = input.jsonObject {
            parameters = try BarkMessage.parameters(json: json)
            let fields = FieldReader(json)
            keys = try fields.optionalStringArray("device_keys") ?? []
            if let key = try fields.optionalString("device_key") { keys.insert(key, at: 0) }
        } else if let form = input.form {
            parameters = form.merging(input.query) { body, _ in body }
            keys = parameters["device_key"].map { [$0] } ?? []
        } else {
            throw APIError.malformedJSON("POST /push takes a JSON object with device_key and body")
        }
        guard !keys.isEmpty else { throw APIError.invalidField("device_key", "device_key (or device_keys) is required.") }
        guard keys.count <= Self.maximumKeys else {
            throw APIError.invalidField("device_keys", "device_keys must name at most \(Self.maximumKeys) keys; got \(keys.count).")
        }
        let message = try BarkMessage(parameters: parameters)
        if keys.count == 1 {
            try await send(message, key: keys[0], field: "device_key", request: request, context: context)
            return Self.success(now: senders.clock.now())
        }
        // Several keys: each gets its own answer, as Bark's server gives them in `data`.
        var results: [JSONValue] = []
        for (index, key) in keys.enumerated() {
            do {
                try await send(message, key: key, field: "device_keys[\(index)]", request: request, context: context)
                results.append(["device_key": .string(key), "code": 200, "message": "success"])
            } catch let error as APIError {
                results.append(["device_key": .string(key), "code": .int(error.status.code), "message": .string(error.message)])
            }
        }
        return Self.success(now: senders.clock.now(), data: .array(results))
    }

    /// The path forms; `segments` are the path's, percent-decoded, the key first.
    func pathPush(segments: [String], input: SenderRequest, request: Request, context: Context) async throws -> Response {
        var parameters = input.query
        if let json = input.jsonObject {
            parameters.merge(try BarkMessage.parameters(json: json)) { _, body in body }
        } else if let form = input.form {
            parameters.merge(form) { _, body in body }
        }
        let message: BarkMessage
        switch segments.count {
        case 2: message = try BarkMessage(parameters: parameters, pathBody: segments[1])
        case 3: message = try BarkMessage(parameters: parameters, pathTitle: segments[1], pathBody: segments[2])
        case 4: message = try BarkMessage(parameters: parameters, pathTitle: segments[1], pathSubtitle: segments[2], pathBody: segments[3])
        default: message = try BarkMessage(parameters: parameters)
        }
        try await send(message, key: segments[0], field: "device_key", request: request, context: context)
        return Self.success(now: senders.clock.now())
    }

    private func send(_ message: BarkMessage, key: String, field: String, request: Request, context: Context) async throws {
        if TopicID.accepts(key) {  // a topic id: every member (issue 42); Bark's answer stays Bark's
            _ = try await senders.send(message.draft, toTopic: key, field: field, request: request, context: context)
            return
        }
        let device = try await senders.device(userID: key, field: field, request: request, context: context)
        _ = try await senders.send(message.draft, to: device)
    }

    static func success(now: Date, data: JSONValue? = nil) -> Response {
        var body: JSONObject = ["code": 200, "message": "success", "timestamp": .int(Int(now.timeIntervalSince1970))]
        body["data"] = data
        return JSONResponse.make(status: .ok, body: body)
    }
}
