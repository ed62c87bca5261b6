import Foundation
import HeraldCore
import HeraldProviderKit
import HeraldServer
import HeraldTesting

/// A provider that exists only in the tests ("Pigeon Post"), published as every provider module is: its description,
/// its renderer, its registration rules and its provider. Registered in a test by one ``ProviderEntry``, it must
/// reach registration, delivery, the status API, the inbox and the dashboard with no change to a dialect, the store
/// schema or a Core type (issue 38, section 2).
enum PigeonModule: ProviderModule {
    static let platform = Platform(rawValue: "pigeon")!

    static let description = ProviderDescription(
        name: "pigeon", displayName: "Pigeon Post", platform: platform, credentialName: "leg ring",
        notConfiguredNotice: "Pigeon Post is not configured", messageIDField: "pigeon_id")

    static let renderer: any PayloadRenderer = PigeonRenderer()

    static let checkCommand = ProviderCheck(abstract: "Check the pigeon loft.", notConfigured: "No pigeon loft.")

    static func makeProvider(_ configuration: PigeonSettings, services: ProviderServices) throws -> PigeonProvider {
        PigeonProvider(fake: configuration.fake)
    }

    static func check(_ configuration: PigeonSettings) throws -> [String] { ["loft: ready"] }

    static func addressRules(_ configuration: PigeonSettings?) -> any PushAddressRules { PigeonAddressRules() }
}

/// What the composition root hands the module: the fake that records what the pigeons carried.
struct PigeonSettings: Sendable {
    let fake: FakeProvider
}

/// The pigeon's address: `loft` is the token; `ring`, the leg ring's colour, is the provider's own data, which only
/// this module reads.
struct PigeonAddressRules: PushAddressRules {
    func address(from registration: RegistrationFields) throws(RegistrationFieldError) -> PushAddress {
        guard let loft = try registration.optionalString("loft") else {
            throw RegistrationFieldError("loft", "loft is required for platform pigeon.")
        }
        guard let ring = try registration.optionalString("ring"), ["blue", "red"].contains(ring) else {
            throw RegistrationFieldError("ring", "ring must be blue or red.")
        }
        return PushAddress(token: loft, data: "ring=\(ring)")
    }
}

/// The message a pigeon carries: the title and body on one slip.
struct PigeonRenderer: PayloadRenderer {
    var name: String { "pigeon" }
    var sizeLimit: Int { 256 }

    func renderContent(_ content: NotificationContent, priority: NotificationPriority, collapseID: String?) -> RenderedPayload {
        var slip: JSONObject = [:]
        if let title = content.title { slip["title"] = .string(title) }
        if let body = content.body { slip["body"] = .string(body) }
        return RenderedPayload(payload: ["slip": .object(slip)], bodyPath: ["slip", "body"], priority: priority)
    }
}

/// The provider: a ``FakeProvider`` of the pigeon platform, closed with the server.
struct PigeonProvider: ClosablePushProvider {
    let fake: FakeProvider

    var platform: Platform { PigeonModule.platform }

    func send(_ notification: PushNotification, to device: Device) async -> DeliveryResult {
        await fake.send(notification, to: device)
    }

    func shutdown() async throws {}
}
