import Foundation
import HeraldCore

extension ActionNotificationRequest {
    /// Every member `POST /notifications` takes: PushWard's `CreateNotificationRequest` and Herald's own `image_url`,
    /// `notification_id` and `encrypted`, and `acknowledge` (Receipts/). Anything else is refused (PushWard's `additionalProperties: false`).
    static let members: Set<String> = [
        "title", "body", "subtitle", "source", "source_display_name", "level", "url", "image_url", "notification_id",
        "collapse_id", "thread_id", "volume", "media", "icon_url", "metadata", "activity_slug", "push", "tags", "actions",
        "encrypted", "acknowledge", "callback_url",
    ]

    /// The members of PushWard's `CreateNotificationRequest` that Herald's first dialect did not have (issue 39).
    struct PushWardMembers {
        static let maximumSubtitleLength = 256
        static let maximumThreadIDLength = 128
        static let maximumMetadataKeys = 20
        static let maximumMetadataValueLength = 512
        static let maximumTags = 10
        static let maximumTagLength = 64
        static let mediaTypes = ["image", "video", "audio"]

        struct Media: Equatable {
            var url: String
            var type: String
        }

        var subtitle: String?
        var threadID: String?
        var collapseID: String?
        /// The volume of a critical alert, 0 to 1.
        var volume: Double?
        var media: Media?
        var iconURL: String?
        var metadata: [String: String]?
        var activitySlug: String?
        /// `false`: kept in the inbox, not pushed.
        var push: Bool
        var tags: [String]

        init(_ fields: FieldReader, level: NotificationContent.Level) throws {
            subtitle = try fields.optionalString("subtitle")
            if let subtitle { try ActionNotificationRequest.checkLength(subtitle, of: "subtitle", maximum: Self.maximumSubtitleLength) }
            threadID = try fields.optionalString("thread_id")
            if let threadID { try ActionNotificationRequest.checkLength(threadID, of: "thread_id", maximum: Self.maximumThreadIDLength) }
            collapseID = try fields.optionalString("collapse_id").map { try CollapseIDRule.validated($0, field: "collapse_id") }
            volume = try Self.volume(fields, level: level)
            media = try Self.media(fields)
            iconURL = try fields.optionalString("icon_url").map { try Self.webURL($0, field: "icon_url", schemes: ["http", "https"]) }
            metadata = try Self.metadata(fields)
            activitySlug = try fields.optionalString("activity_slug")
            if let activitySlug, !Self.isSlug(activitySlug) {
                throw APIError.invalidField(
                    "activity_slug", "activity_slug must be an activity's slug: 1 to 128 letters, digits, - and _, starting with a letter or digit.")
            }
            push = try fields.optionalBool("push") ?? true
            tags = try Self.tags(fields)
        }

        /// The members the app receives among the notification's own keys (docs/payloads.md), when given.
        func addPayloadMembers(to data: inout JSONObject) {
            data["icon_url"] = iconURL.map(JSONValue.string)
            data["media_url"] = media.map { .string($0.url) }
            data["media_type"] = media.map { .string($0.type) }
            data["metadata"] = metadata.map { .object($0.mapValues(JSONValue.string)) }
            data["activity_slug"] = activitySlug.map(JSONValue.string)
        }

        /// What Herald keeps and no renderer sends (``NotificationContent/meta``).
        var meta: JSONObject {
            tags.isEmpty ? [:] : ["tags": .array(tags.map(JSONValue.string))]
        }

        private static func volume(_ fields: FieldReader, level: NotificationContent.Level) throws -> Double? {
            guard let value = fields.value("volume") else { return nil }
            guard let volume = value.doubleValue, volume.isFinite, (0...1).contains(volume) else {
                throw APIError.invalidField("volume", "volume must be a number from 0 to 1.")
            }
            guard level == .critical else {
                throw APIError.invalidField("volume", "volume is the volume of a critical alert; send it with level \"critical\".")
            }
            return volume
        }

        private static func media(_ fields: FieldReader) throws -> Media? {
            guard let media = try fields.optionalObject("media", emptyStringIsAbsent: false) else { return nil }
            try media.refuseUnknownMembers(allowed: ["url", "type"])
            guard let url = try media.optionalString("url") else {
                throw APIError.invalidField("media.url", "media.url and media.type are required when media is set.")
            }
            guard let type = try media.optionalChoice("type", from: mediaTypes) else {
                throw APIError.invalidField("media.type", "media.url and media.type are required when media is set.")
            }
            return Media(url: try webURL(url, field: "media.url", schemes: ["https"]), type: type)
        }

        private static func metadata(_ fields: FieldReader) throws -> [String: String]? {
            guard let metadata = try fields.optionalObject("metadata", emptyStringIsAbsent: false) else { return nil }
            guard metadata.object.count <= maximumMetadataKeys else {
                throw APIError.invalidField(
                    "metadata", "metadata must have at most \(maximumMetadataKeys) keys; got \(metadata.object.count).")
            }
            var values: [String: String] = [:]
            for key in metadata.object.keys.sorted() {
                let field = metadata.path(of: key)
                guard !key.isEmpty else { throw APIError.invalidField("metadata", "metadata keys must not be empty.") }
                guard case .string(let value) = metadata.object[key] else {
                    throw APIError.invalidField(field, "\(field) must be a string.")
                }
                try ActionNotificationRequest.checkLength(value, of: field, maximum: maximumMetadataValueLength)
                values[key] = value
            }
            return values
        }

        private static func tags(_ fields: FieldReader) throws -> [String] {
            guard let tags = try fields.optionalStringArray("tags") else { return [] }
            guard tags.count <= maximumTags else {
                throw APIError.invalidField("tags", "tags must hold at most \(maximumTags) tags; got \(tags.count).")
            }
            for (index, tag) in tags.enumerated() {
                guard !tag.isEmpty, tag.count <= maximumTagLength, HeaderValueRule.accepts(tag) else {
                    throw APIError.invalidField(
                        "tags[\(index)]", "tags[\(index)] must be 1 to \(maximumTagLength) characters without control characters.")
                }
            }
            return tags
        }

        /// An action URL (``ActionButton/validURL(_:field:)``) with one of `schemes`.
        private static func webURL(_ raw: String, field: String, schemes: Set<String>) throws -> String {
            let url = try ActionButton.validURL(raw, field: field)
            guard let scheme = ActionButton.scheme(of: url), schemes.contains(scheme) else {
                let names = schemes.sorted().map { "\($0)://" }.joined(separator: " or ")
                throw APIError.invalidField(field, "\(field) must be an \(names) URL.")
            }
            return url
        }

        /// PushWard's slug: `^[a-zA-Z0-9][a-zA-Z0-9_-]{0,127}$`.
        static func isSlug(_ slug: String) -> Bool {
            let bytes = Array(slug.utf8)
            func isAlphanumeric(_ byte: UInt8) -> Bool {
                (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
            }
            guard let first = bytes.first, isAlphanumeric(first), bytes.count <= 128 else { return false }
            return bytes.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
        }
    }
}

extension FieldReader {
    /// 400 `unknown_field` naming the first member (in key order) that is not in `allowed`.
    func refuseUnknownMembers(allowed: Set<String>) throws {
        guard let unknown = object.keys.sorted().first(where: { !allowed.contains($0) }) else { return }
        let field = path(of: unknown)
        throw APIError(
            .unknownField, message: "\(field) is not a member this request takes (unknown members are refused; see docs/api.md).",
            field: field)
    }
}
