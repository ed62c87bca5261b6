import Foundation

/// What a `pw1` envelope holds: `{"title", "subtitle"?, "body", "url"?}` (docs/e2e.md).
///
/// ``init(plaintext:)`` is the receiver's side: it refuses a plaintext that is not an object with non-empty string
/// `title` and `body`, ignores members it does not know, clamps `title` and `subtitle` to 256 and `body` to 4,096
/// code points, and drops a `url` with a `javascript:`, `data:`, `file:` or `vbscript:` scheme (or an http(s) url
/// without a host).
public struct E2EMessage: Sendable, Equatable {
    public static let maximumTitleScalars = 256
    public static let maximumBodyScalars = 4096
    static let refusedSchemes: Set<String> = ["javascript", "data", "file", "vbscript"]

    public var title: String
    public var subtitle: String?
    public var body: String
    public var url: String?

    public init(title: String, subtitle: String? = nil, body: String, url: String? = nil) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.url = url
    }

    /// The receiver's reading of an opened plaintext.
    public init(plaintext: Data) throws(E2EKey.OpenError) {
        let value: JSONValue
        do { value = try JSONValue.decode(plaintext) } catch { throw .notJSON }
        guard let object = value.objectValue else { throw .notObject }
        guard let title = object["title"]?.stringValue, let body = object["body"]?.stringValue else { throw .titleOrBodyNotString }
        guard !title.isEmpty, !body.isEmpty else { throw .titleOrBodyEmpty }
        self.title = Self.clamped(title, to: Self.maximumTitleScalars)
        self.subtitle = object["subtitle"]?.stringValue.map { Self.clamped($0, to: Self.maximumTitleScalars) }
        self.body = Self.clamped(body, to: Self.maximumBodyScalars)
        self.url = object["url"]?.stringValue.flatMap { Self.isSafeURL($0) ? $0 : nil }
    }

    /// The UTF-8 JSON the sender seals, members in the order `title`, `subtitle`, `body`, `url`, absent ones left out.
    public var plaintext: Data {
        var members: [(String, String)] = [("title", title)]
        if let subtitle { members.append(("subtitle", subtitle)) }
        members.append(("body", body))
        if let url { members.append(("url", url)) }
        var bytes = Data("{".utf8)
        for (index, (key, value)) in members.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            // Encoding a string cannot fail.
            bytes.append((try? JSONValue.string(key).encoded()) ?? Data())
            bytes.append(UInt8(ascii: ":"))
            bytes.append((try? JSONValue.string(value).encoded()) ?? Data())
        }
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    /// `text` cut to its first `limit` Unicode code points.
    static func clamped(_ text: String, to limit: Int) -> String {
        let scalars = text.unicodeScalars
        guard scalars.count > limit else { return text }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars.prefix(limit))
        return String(view)
    }

    /// Whether a receiver keeps `url`: not a `javascript:`, `data:`, `file:` or `vbscript:` url (read as a browser
    /// reads it: leading spaces and controls, tabs and newlines ignored, any case), and an http(s) url has a host.
    static func isSafeURL(_ url: String) -> Bool {
        let cleaned = String(
            String.UnicodeScalarView(
                url.unicodeScalars.drop { $0.value <= 0x20 }.filter { $0 != "\t" && $0 != "\n" && $0 != "\r" }))
        guard let colon = cleaned.firstIndex(of: ":") else { return true }
        let scheme = cleaned[..<colon].lowercased()
        guard scheme.first?.isLetter == true, scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }) else {
            return true
        }
        if refusedSchemes.contains(scheme) { return false }
        if scheme == "http" || scheme == "https" {
            guard let host = URL(string: cleaned)?.host, !host.isEmpty else { return false }
        }
        return true
    }
}
