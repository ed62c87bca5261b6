import HTTPTypes
import HeraldCore

extension ErrorShape {
    /// The error body Home Assistant's `mobile_app` reads: `{"message"}` or `{"errorMessage"}`, plus `errorType`,
    /// `target` and `rateLimits` where they apply (the refusal's `extra`), and `field` on a 400. Also the shape of a
    /// request under `/api/push/homeassistant` that no route took.
    static let homeAssistant = ErrorShape(name: "homeassistant", unroutedPathPrefix: "/api/push/homeassistant") { error in
        // Home Assistant logs `message` verbatim and appends `errorMessage` to "Internal server error, please try
        // again later:"; it crashes on an empty `message`, which APIError never has.
        var body = error.extra
        if error.status == .forbidden || error.status == .notFound && error.code == .unknownUser {
            body["errorMessage"] = .string(error.message)
        } else {
            body["message"] = .string(error.message)
        }
        // Home Assistant reads `message`; `field` names the offending member for anyone else reading the answer.
        if let field = error.field, error.status == .badRequest { body["field"] = .string(field) }
        return body
    }
}
