import HeraldCore

/// The one rule for a `pw1` end-to-end envelope a sender gives as `encrypted` (docs/e2e.md): its shape only
/// (``E2EEnvelope``); Herald holds no key and never opens it. A refusal is 400 `invalid_field` naming the member.
///
/// ```swift
/// encrypted = try EncryptedRule.envelope(fields)   // nil when absent or null
/// ```
enum EncryptedRule {
    /// - Parameter emptyIsAbsent: `""` means absent (the camera app's API, where Home Assistant's `rest_command`
    ///   renders a missing value so); otherwise `""` is refused as every malformed envelope is.
    static func envelope(_ fields: FieldReader, field: String = "encrypted", emptyIsAbsent: Bool = false) throws -> E2EEnvelope? {
        let path = fields.path(of: field)
        guard let value = fields.value(field) else { return nil }
        if emptyIsAbsent, value == .string("") { return nil }
        guard case .string(let text) = value else {
            throw APIError.invalidField(path, "\(path) must be a pw1 envelope string (pw1.<key id>.<base64url>).")
        }
        do {
            return try E2EEnvelope(text)
        } catch {
            throw APIError.invalidField(path, "\(path) \(error.reason).")
        }
    }
}
