import Foundation

/// What a notification says, independent of the provider that carries it.
///
/// Every send dialect validates its request and produces one of these; each provider's ``PayloadRenderer`` turns it
/// into that provider's wire payload (APNs JSON, an FCM message, the WebSocket event). A dialect never builds a
/// provider's payload itself, except through ``providerPayloads``: the raw parts a dialect carries for one provider
/// because its own contract defines them byte for byte (Home Assistant's relay builds the APNs payload from `data.push`
/// and `data.apns_headers`, and the Android message from its own keys; a Live Activity's `aps`).
///
/// The store keeps the content with the notification, so that a notification is rendered again for its device's
/// current platform (a device that registered again with another platform) and for the WebSocket channel.
public struct NotificationContent: Sendable, Equatable {
    /// How the notification sounds.
    public enum Sound: Sendable, Equatable {
        /// The platform's default sound.
        case `default`
        /// A sound the app bundles.
        case named(String)
        /// A critical alert at full volume with the default sound (iOS breaks through silent mode).
        case critical
    }

    /// How strongly the notification interrupts, as APNs' `interruption-level` names the levels.
    public enum Level: String, Sendable, Equatable, CaseIterable {
        case passive
        case active
        case timeSensitive = "time-sensitive"
        case critical
    }

    /// A payload a dialect defines for one provider, sent as it is when the device is on that provider.
    public struct ProviderPayload: Sendable, Equatable {
        /// The whole payload: for APNs `aps` and the custom keys, for FCM the `message` without its target.
        public var payload: JSONObject
        /// Where the body sits that may be shortened to fit the provider's limit (`nil`: nothing may be shortened).
        public var bodyPath: [String]?

        public init(payload: JSONObject, bodyPath: [String]?) {
            self.payload = payload
            self.bodyPath = bodyPath
        }
    }

    public var title: String?
    public var subtitle: String?
    public var body: String?
    /// `nil`: silent.
    public var sound: Sound?
    /// `nil`: the platform's default (no `interruption-level`, FCM's high priority).
    public var level: Level?
    /// Notifications of one thread are grouped (APNs `thread-id`, the Android channel).
    public var thread: String?
    /// An image the platform can show by itself (FCM `notification.image`; Web Push `image`).
    public var imageURL: String?
    /// The app's notification extension fetches media for it (an image, a camera snapshot): APNs `mutable-content`.
    public var hasMedia: Bool
    /// Action buttons, as the dialect validated them (``NotificationAction``).
    public var actions: [NotificationAction]
    /// What a tap opens, when it is a URL.
    public var tapURL: String?
    /// The dialect's own keys, as the app receives them (APNs: top-level keys; FCM: `data`, as strings).
    public var data: JSONObject
    /// Raw payloads for one provider each, keyed by the renderer's ``PayloadRenderer/name`` (`apns`, `fcm`).
    public var providerPayloads: [String: ProviderPayload]
    /// A `pw1` end-to-end envelope (docs/e2e.md), carried unchanged by every renderer; `title` and `body` are then the
    /// placeholder a device without the key shows. Herald checked its shape and never opens it.
    public var encrypted: E2EEnvelope?
    /// The volume of a critical alert, 0 to 1 (`nil`: full volume); only with ``Sound/critical``.
    public var criticalVolume: Double?
    /// What Herald keeps about the notification that no renderer sends: the id of the API token that sent it
    /// (`sender_token`, who may read its answer) and the sender's `tags` (`POST /notifications`).
    public var meta: JSONObject

    public init(
        title: String? = nil, subtitle: String? = nil, body: String? = nil, sound: Sound? = .default, level: Level? = nil,
        thread: String? = nil, imageURL: String? = nil, hasMedia: Bool = false, actions: [NotificationAction] = [],
        tapURL: String? = nil, data: JSONObject = [:], providerPayloads: [String: ProviderPayload] = [:],
        encrypted: E2EEnvelope? = nil, criticalVolume: Double? = nil, meta: JSONObject = [:]
    ) {
        self.criticalVolume = criticalVolume
        self.meta = meta
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.sound = sound
        self.level = level
        self.thread = thread
        self.imageURL = imageURL
        self.hasMedia = hasMedia
        self.actions = actions
        self.tapURL = tapURL
        self.data = data
        self.providerPayloads = providerPayloads
        self.encrypted = encrypted
    }
}

// MARK: Stored form

extension NotificationContent {
    /// The JSON the store keeps (`notification.content`): short keys, absent values left out.
    public var json: JSONObject {
        var json: JSONObject = [:]
        json["title"] = title.map(JSONValue.string)
        json["subtitle"] = subtitle.map(JSONValue.string)
        json["body"] = body.map(JSONValue.string)
        switch sound {
        case .default?: json["sound"] = "default"
        case .named(let name)?: json["sound"] = ["name": .string(name)]
        case .critical?: json["sound"] = "critical"
        case nil: break
        }
        json["level"] = level.map { .string($0.rawValue) }
        json["thread"] = thread.map(JSONValue.string)
        json["image_url"] = imageURL.map(JSONValue.string)
        if hasMedia { json["has_media"] = true }
        if !actions.isEmpty { json["actions"] = .array(actions.map { .object($0.json) }) }
        json["tap_url"] = tapURL.map(JSONValue.string)
        if !data.isEmpty { json["data"] = .object(data) }
        json["encrypted"] = encrypted.map { .string($0.text) }
        json["critical_volume"] = criticalVolume.map(JSONValue.double)
        if !meta.isEmpty { json["meta"] = .object(meta) }
        if !providerPayloads.isEmpty {
            var raw: JSONObject = [:]
            for (name, part) in providerPayloads {
                var entry: JSONObject = ["payload": .object(part.payload)]
                entry["body_path"] = part.bodyPath.map { .array($0.map(JSONValue.string)) }
                raw[name] = .object(entry)
            }
            json["providers"] = .object(raw)
        }
        return json
    }

    /// Reads what ``json`` wrote; unknown keys are ignored, so that a newer Herald's rows stay readable.
    public init(json: JSONObject) {
        let sound: Sound? =
            switch json["sound"] {
            case .string("default")?: .default
            case .string("critical")?: .critical
            case .object(let named)?: named["name"]?.stringValue.map(Sound.named)
            default: nil
            }
        var raw: [String: ProviderPayload] = [:]
        for (name, value) in json["providers"]?.objectValue ?? [:] {
            guard let entry = value.objectValue, let payload = entry["payload"]?.objectValue else { continue }
            let path: [String]? =
                if case .array(let keys)? = entry["body_path"] { keys.compactMap(\.stringValue) } else { nil }
            raw[name] = ProviderPayload(payload: payload, bodyPath: path)
        }
        // Actions stored before they were typed are the same objects (``NotificationAction/init(json:)``).
        let actions: [NotificationAction] =
            if case .array(let elements)? = json["actions"] { elements.compactMap { $0.objectValue.flatMap(NotificationAction.init(json:)) } } else { [] }
        self.init(
            title: json["title"]?.stringValue, subtitle: json["subtitle"]?.stringValue, body: json["body"]?.stringValue,
            sound: sound, level: json["level"]?.stringValue.flatMap(Level.init(rawValue:)),
            thread: json["thread"]?.stringValue, imageURL: json["image_url"]?.stringValue,
            hasMedia: json["has_media"] == .bool(true), actions: actions, tapURL: json["tap_url"]?.stringValue,
            data: json["data"]?.objectValue ?? [:], providerPayloads: raw,
            encrypted: json["encrypted"]?.stringValue.flatMap { try? E2EEnvelope($0) },
            criticalVolume: json["critical_volume"]?.doubleValue, meta: json["meta"]?.objectValue ?? [:])
    }

    /// The stored bytes.
    public func encoded() throws -> Data { try JSONValue.object(json).encoded() }

    /// Reads stored bytes; `nil` when they are not a JSON object.
    public init?(stored: Data) {
        guard let object = try? JSONValue.decode(stored).objectValue else { return nil }
        self.init(json: object)
    }
}
