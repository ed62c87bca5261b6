import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird
import Mustache
import NIOCore

/// The dashboard's HTML: Mustache templates compiled into the binary (`Resources/Admin/*.mustache`), every value
/// HTML-escaped by `{{ }}`, and the headers every dashboard answer carries.
///
/// ```swift
/// pages.render("overview", title: "Overview", session: session, values: ["outboxDepth": 3])
/// ```
struct AdminPages: Sendable {
    /// A line at the top of a page.
    struct Notice: Sendable {
        enum Kind: String, Sendable {
            case info
            case error
        }

        var kind: Kind
        var text: String

        static func info(_ text: String) -> Self { Self(kind: .info, text: text) }
        static func error(_ text: String) -> Self { Self(kind: .error, text: text) }
    }

    private let library: MustacheLibrary
    private let clock: any WallClock

    init(clock: any WallClock) {
        self.clock = clock
        var library = MustacheLibrary()
        for (name, bytes) in Self.templates {
            do {
                try library.register(String(decoding: bytes, as: UTF8.self), named: name)
            } catch {
                // Compiled in and parsed by the tests: a template that does not parse is a bug of the build.
                preconditionFailure("The dashboard template \(name) does not parse: \(error)")
            }
        }
        self.library = library
    }

    /// The templates, by the names their partials use.
    static let templates: [(String, [UInt8])] = [
        ("header", PackageResources.header_mustache), ("footer", PackageResources.footer_mustache),
        ("login", PackageResources.login_mustache), ("message", PackageResources.message_mustache),
        ("overview", PackageResources.overview_mustache), ("notifications", PackageResources.notifications_mustache),
        ("live", PackageResources.live_mustache), ("notification", PackageResources.notification_mustache),
        ("device", PackageResources.device_mustache), ("send", PackageResources.send_mustache),
    ]

    static let stylesheet = ByteBuffer(bytes: PackageResources.style_css)

    /// Headers of every dashboard answer: no caching, no framing, no referrer, nothing loaded from elsewhere (the
    /// stylesheet comes from `/admin/style.css`; there is no script).
    static let securityHeaders: HTTPFields = [
        .cacheControl: "no-store",
        .contentSecurityPolicy:
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        HTTPField.Name("X-Content-Type-Options")!: "nosniff",
        HTTPField.Name("X-Frame-Options")!: "DENY",
        HTTPField.Name("Referrer-Policy")!: "no-referrer",
    ]

    /// A page: `template` with the layout's values (title, navigation and the session's CSRF token when signed in,
    /// a notice, an automatic reload) and `values`.
    func render(
        _ template: String, title: String, session: AdminSessions.Session?, status: HTTPResponse.Status = .ok,
        notice: Notice? = nil, refreshSeconds: Int? = nil, headers: HTTPFields = [:], values: [String: Any] = [:]
    ) -> Response {
        var context = values
        context["title"] = title
        context["version"] = HeraldVersion.current
        context["now"] = Self.time(clock.now())
        if let session {
            context["signedIn"] = true
            context["csrf"] = session.csrfToken
        }
        if let notice { context["notice"] = ["kind": notice.kind.rawValue, "text": notice.text] }
        if let refreshSeconds { context["refreshSeconds"] = refreshSeconds }
        let html = library.render(context, withTemplate: template) ?? ""
        var fields = Self.securityHeaders
        fields[.contentType] = "text/html; charset=utf-8"
        fields.append(contentsOf: headers)
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }

    /// A page that says one thing, with a link onwards.
    func message(
        _ message: String, title: String, session: AdminSessions.Session?, status: HTTPResponse.Status,
        back: String = "/admin", backLabel: String = "Back to the overview", headers: HTTPFields = [:]
    ) -> Response {
        render(
            "message", title: title, session: session, status: status, headers: headers,
            values: ["message": message, "back": back, "backLabel": backLabel])
    }

    /// `303 See Other` to `location`, with the dashboard's headers and `extra` (a cookie).
    static func redirect(to location: String, headers extra: HTTPFields = [:]) -> Response {
        var fields = securityHeaders
        fields[.location] = location
        fields.append(contentsOf: extra)
        return Response(status: .seeOther, headers: fields)
    }

    // MARK: Values

    /// `2025-11-22 10:01:07 UTC`.
    static func time(_ date: Date) -> String {
        shortTime(date) + " UTC"
    }

    /// `2025-11-22 10:01:07`, in UTC (for lists whose heading says so).
    static func shortTime(_ date: Date) -> String {
        let text = date.iso8601WithMilliseconds  // 2025-11-22T10:01:07.123Z
        return text.prefix(19).replacingOccurrences(of: "T", with: " ")
    }

    /// A push token as the dashboard shows it: its first 8 characters and its length, never the whole.
    static func maskedToken(_ token: String) -> String {
        token.count <= 8 ? "…" : "\(token.prefix(8))… (\(token.count) characters)"
    }

    /// One row of a list of notifications.
    static func row(_ notification: PushNotification, platform: Platform?) -> [String: Any] {
        let updated = shortTime(notification.updatedAt)
        var row: [String: Any] = [
            "id": notification.id.lowercasedText,
            "shortID": String(notification.id.lowercasedText.prefix(8)) + "…",
            "status": notification.status.rawValue, "attempts": notification.attempts,
            "updatedDay": String(updated.prefix(10)), "updatedTime": String(updated.suffix(8)),
            "platform": platform?.rawValue ?? "–",
        ]
        if let error = notification.lastError { row["lastError"] = error }
        return row
    }

    /// What is known of a notification's life, oldest first: accepted, its latest attempt or state, its expiry.
    /// What the app reported (issue 39) and the answer join in at their times.
    static func history(
        of notification: PushNotification, lease: Lease?, appEvents: [NotificationEvent] = [], answer: NotificationAnswer? = nil
    ) -> [[String: Any]] {
        var events: [(Date, String)] = appEvents.map { ($0.at, "The app reported: \($0.event.rawValue).") }
        if let answer {
            let text = answer.text.map { " with text \"\($0)\"" } ?? ""
            events.append((answer.answeredAt, "Answered: \(answer.actionID)\(text)."))
        }
        let quota = notification.quotaDay.map { "counted against the quota of \($0)" } ?? "exempt from the daily quota"
        events.append((notification.createdAt, "Accepted, \(quota)."))
        let tries = notification.attempts == 1 ? "1 attempt" : "\(notification.attempts) attempts"
        let error = notification.lastError.map { ": \($0)" } ?? ""
        switch notification.status {
        case .delivered:
            let providerID = notification.providerMessageID.map { " (provider id \($0))" } ?? ""
            events.append((notification.updatedAt, "Delivered after \(tries)\(providerID)."))
        case .failed:
            events.append((notification.updatedAt, "Failed for good after \(tries)\(error)."))
        case .expired:
            events.append((notification.updatedAt, "Expired after \(tries)\(error)."))
        case .stored:
            events.append((notification.createdAt, "Kept in the inbox without a push (push: false)."))
        case .pending:
            if notification.attempts > 0 {
                events.append((notification.updatedAt, "Attempt \(notification.attempts) did not deliver it\(error)."))
            }
            if let lease {
                events.append(
                    (notification.updatedAt, "Being delivered by \(lease.owner) (claim held until \(time(lease.expiresAt)))."))
            } else {
                events.append((notification.nextAttemptAt, "Next attempt due."))
            }
            events.append((notification.expiresAt, "Expires unless delivered before."))
        }
        return events.sorted { $0.0 < $1.0 }.map { ["time": time($0.0), "event": $0.1] }
    }

    /// The payload as indented JSON (keys sorted), or as text when it is not JSON.
    static func prettyPayload(_ data: Data) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: data),
            let pretty = try? JSONSerialization.data(
                withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        else { return String(decoding: data, as: UTF8.self) }
        return String(decoding: pretty, as: UTF8.self)
    }
}
