import Foundation
import HTTPTypes
import HeraldCore
import HeraldDelivery
import Hummingbird

/// ntfy's publishing API (docs/senders.md, "ntfy"): `PUT/POST /<topic>` with the message as the body,
/// `GET/PUT/POST /<topic>/publish` (also `send`, `trigger`) with query parameters, and `POST /` (and `PUT /`) with ntfy's
/// JSON. The topic is a USER_ID or a topic id (`tp_…`, every member of the topic). Answers are ntfy's: the published
/// message with 200, errors as `{code, http, error, link}`.
///
/// The `/<topic>` paths share the root with Herald's own routes: they are reached through ``SenderPathMiddleware``,
/// which takes only paths whose first segment is a USER_ID, so no route of Herald's changes.
struct NtfyController<Context: RemoteAddressRequestContext>: Sendable {
    let senders: SenderDelivery

    /// `POST /` and `PUT /`.
    func addRoutes(to router: some RouterMethods<Context>) {
        let root = router.group().add(middleware: ErrorShapeMiddleware(.ntfy))
        root.post("/", use: publishJSON)
        root.put("/", use: publishJSON)
    }

    @Sendable func publishJSON(_ request: Request, context: Context) async throws -> Response {
        let input = try await SenderRequest.read(request, limit: senders.bodyLimit)
        guard let json = input.jsonObject else {
            throw APIError.malformedJSON("POST / takes ntfy's JSON message, an object with topic and message")
        }
        let message = try NtfyMessage(json: json, request: input)
        return try await send(message, request: request, context: context)
    }

    /// `PUT/POST /<topic>`, `GET/PUT/POST /<topic>/publish`: the body, headers and query parameters.
    func publish(topic: String, input: SenderRequest, request: Request, context: Context) async throws -> Response {
        try await send(try NtfyMessage(topic: topic, request: input), request: request, context: context)
    }

    private func send(_ message: NtfyMessage, request: Request, context: Context) async throws -> Response {
        if let delay = message.delay {  // a scheduled send (NtfyDelay), to one device
            let sendAt = try NtfyDelay.sendAt(delay, now: senders.clock.now())
            guard !TopicID.accepts(message.topic) else {
                throw APIError.invalidField("delay", "delay is taken for a USER_ID, not a topic id: send to the topic when it is due.")
            }
            let device = try await senders.device(userID: message.topic, field: "topic", request: request, context: context)
            let scheduled = try await senders.schedule(message.draft, to: device, at: sendAt, field: "delay")
            return NtfyAnswers.published(message, scheduled: scheduled, timeToLive: senders.pipeline.timeToLive)
        }
        if TopicID.accepts(message.topic) {  // a topic id: every member (issue 42)
            let receipt = try await senders.send(message.draft, toTopic: message.topic, field: "topic", request: request, context: context)
            return NtfyAnswers.published(message, fanout: receipt)
        }
        let device = try await senders.device(userID: message.topic, field: "topic", request: request, context: context)
        let receipt = try await senders.send(message.draft, to: device)
        return NtfyAnswers.published(message, receipt: receipt)
    }
}
