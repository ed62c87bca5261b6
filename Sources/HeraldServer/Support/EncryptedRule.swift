import HeraldCore

/// The one rule for a `pw1` end-to-end envelope a sender gives as `encrypted` (docs/e2e.md): its shape only
/// (``E2EEnvelope``); Herald holds no key and never opens it. `null` and `""` count as absent, as for every optional
/// member of both send dialects that take it; anything else that is not a `pw1` envelope is 400 `invalid_field`
/// naming the member, with the rule it breaks.
///
/// ```swift
/// encrypted = try EncryptedRule.envelope(fields)   // nil when absent, null or ""
/// ```
enum EncryptedRule {
    static func envelope(_ fields: FieldReader, field: String = "encrypted") throws -> E2EEnvelope? {
        let path = fields.path(of: field)
        guard let value = fields.value(field), value != .string("") else { return nil }
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
