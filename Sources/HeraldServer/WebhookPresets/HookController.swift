import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird

/// `POST /api/push/hooks/{preset}`: the payloads monitoring tools send as they are (docs/senders.md, "Webhook
/// presets"): `alertmanager` (webhook v4), `grafana` (unified alerting), `uptime-kuma`, and `generic` (JSON paths in
/// the query). Authenticated with a Herald API token (`notifications` scope) as `Authorization: Bearer` or `?token=` for
/// tools that cannot set a header; the notification goes to the token's device. Answers are Herald's send answers.
struct HookController<Context: RemoteAddressRequestContext>: Sendable {
    let senders: SenderDelivery

    static var presets: [String] { ["alertmanager", "grafana", "uptime-kuma", "generic"] }

    func addRoutes(to group: RouterGroup<Context>) {
        group.post("hooks/{preset}", use: hook)
    }

    @Sendable func hook(_ request: Request, context: Context) async throws -> Response {
        let preset = context.parameters.get("preset") ?? ""
        guard Self.presets.contains(preset) else {
            throw APIError.notFound("There is no webhook preset \"\(preset)\"; the presets are \(Self.presets.joined(separator: ", ")).")
        }
        let input = try await SenderRequest.read(request, limit: senders.bodyLimit)
        let device = try await senders.device(
            apiToken: Credentials.bearer(request) ?? input.query["token"], request: request, context: context)
        guard let json = input.jsonObject else { throw APIError.malformedJSON(input.body.isEmpty ? "the body is empty" : "it is not a JSON object") }
        let draft: NotificationDraft
        switch preset {
        case "alertmanager": draft = try AlertPreset(json, flavor: .alertmanager).draft
        case "grafana": draft = try AlertPreset(json, flavor: .grafana).draft
        case "uptime-kuma": draft = try UptimeKumaPreset(json).draft
        default: draft = try GenericPreset(json, query: input.query).draft
        }
        let receipt = try await senders.send(draft, to: device)
        return SendAnswers.created(receipt, now: senders.clock.now())
    }
}
