import Foundation

/// A provider endpoint option's value (`HERALD_APNS_PRODUCTION_URL`, `HERALD_FCM_BASE_URL`, …).
public enum HTTPSBaseURL {
    /// The URL without a trailing slash, or `nil` when it is not an https URL with a host and no path, query or
    /// fragment.
    public static func normalized(_ text: String) -> String? {
        guard let url = URL(string: text), url.scheme?.lowercased() == "https", let host = url.host, !host.isEmpty,
            url.path.isEmpty || url.path == "/", url.query == nil, url.fragment == nil
        else { return nil }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }
}
