import Foundation

/// One provider's payload, rendered from a notification's content, before it is fitted to the provider's limit.
public struct RenderedPayload: Sendable, Equatable {
    /// The JSON the provider sends (for FCM without the message's target).
    public var payload: JSONObject
    /// Where the body sits that may be shortened to fit the limit; `nil` when nothing may be shortened.
    public var bodyPath: [String]?
    /// The priority the provider sends it with (the draft's, or lower where the provider says so).
    public var priority: NotificationPriority

    public init(payload: JSONObject, bodyPath: [String]?, priority: NotificationPriority) {
        self.payload = payload
        self.bodyPath = bodyPath
        self.priority = priority
    }
}

/// A payload fitted to its provider's limit: the bytes that are stored and sent.
public struct FittedPayload: Sendable, Equatable {
    public var data: Data
    /// The body was shortened to fit.
    public var truncated: Bool
    public var priority: NotificationPriority
    /// The renderer that made it (``PayloadRenderer/name``).
    public var renderedBy: String
}

/// Turns provider-neutral content into one provider's wire payload. Each provider module owns one; adding a
/// provider adds a renderer, and no dialect changes. Renderers are pure: no I/O, no clock.
public protocol PayloadRenderer: Sendable {
    /// The name the store keeps with a rendered payload and the key of the content's raw part for this provider.
    var name: String { get }
    /// The largest payload the provider takes, in bytes, with whatever the provider adds at send time set aside.
    var sizeLimit: Int { get }
    /// The payload for `content`'s provider-neutral fields, sent with `priority` unless the provider lowers it;
    /// `collapseID` is the notification's (APNs sends it as a header, FCM in the message). Called through
    /// ``render(_:priority:collapseID:)``, which sends a raw part the dialect gave for this provider instead.
    func renderContent(_ content: NotificationContent, priority: NotificationPriority, collapseID: String?) -> RenderedPayload
}

extension PayloadRenderer {
    /// The payload for `content`: the raw part the dialect gave for this provider
    /// (``NotificationContent/providerPayloads``), sent as it is, or else ``renderContent(_:priority:collapseID:)``.
    public func render(_ content: NotificationContent, priority: NotificationPriority, collapseID: String?) -> RenderedPayload {
        if let raw = content.providerPayloads[name] {
            return RenderedPayload(payload: raw.payload, bodyPath: raw.bodyPath, priority: priority)
        }
        return renderContent(content, priority: priority, collapseID: collapseID)
    }

    /// Renders `content` and shortens its body until it fits ``sizeLimit``.
    /// - Throws: ``PayloadFitter/TooLarge`` when it cannot fit; an encoding error for a value JSON cannot hold.
    public func fitted(_ content: NotificationContent, priority: NotificationPriority, collapseID: String?) throws -> FittedPayload {
        let rendered = render(content, priority: priority, collapseID: collapseID)
        let (data, truncated) = try PayloadFitter.fit(rendered.payload, limit: sizeLimit, bodyPath: rendered.bodyPath)
        return FittedPayload(data: data, truncated: truncated, priority: rendered.priority, renderedBy: name)
    }

    /// The bytes to send for a stored notification: its payload when this renderer made it (or when it has no content,
    /// as rows stored before the content was kept), otherwise its content rendered again (the device registered
    /// again on another platform since it was accepted).
    public func payload(of notification: PushNotification) throws -> Data {
        guard let content = notification.content, notification.renderedBy != name else { return notification.payload }
        return try fitted(content, priority: notification.priority, collapseID: notification.collapseID).data
    }
}

/// The renderer of each platform, built once by the composition root from the providers it knows.
public struct PayloadRenderers: Sendable {
    private let byPlatform: [Platform: any PayloadRenderer]
    private let fallback: any PayloadRenderer

    /// - Parameters:
    ///   - renderers: each platform's renderer.
    ///   - fallback: the renderer of a platform without its own (WebSocket-only devices get the APNs payload).
    public init(_ renderers: [Platform: any PayloadRenderer], fallback: any PayloadRenderer) {
        self.byPlatform = renderers
        self.fallback = fallback
    }

    public func renderer(for platform: Platform) -> any PayloadRenderer { byPlatform[platform] ?? fallback }
}
