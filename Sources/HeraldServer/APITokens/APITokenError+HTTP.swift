import HTTPTypes
import HeraldCore

extension APIError {
    /// The answer to a refused API token operation, in one place, for every route that manages or accepts tokens:
    /// 400 / 409 for a name, 404 for a token to revoke, 401 with `WWW-Authenticate: Bearer` for a token that does not
    /// authenticate, 503 for the store.
    init(apiToken error: APITokenError) {
        switch error {
        case .invalidName(let sentence): self = .invalidField("name", sentence)
        case .invalidGrant(let field, let sentence): self = .invalidField(field, sentence)
        case .nameTaken: self.init(.tokenNameTaken, message: error.description, field: "name")
        case .tooManyTokens: self.init(.tooManyTokens, message: error.description)
        case .notFound: self = .notFound(error.description)
        case .tokenRequired: self.init(.tokenRequired, headers: [.wwwAuthenticate: #"Bearer realm="herald""#])
        case .invalidToken, .revokedToken:
            self.init(
                .invalidToken, message: error.description,
                headers: [.wwwAuthenticate: #"Bearer realm="herald", error="invalid_token""#])
        case .storeUnavailable(let failure): self = .storeUnavailable(failure)
        }
    }
}
