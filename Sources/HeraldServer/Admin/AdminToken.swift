import HeraldCore

/// `HERALD_ADMIN_TOKEN`, as the dashboard's login checks it: only its SHA-256 is kept, and a guess is hashed and
/// compared with it in constant time (``Secrets/constantTimeEquals(_:_:)`` on two 64-character digests), so neither
/// the guess's length nor how much of it is right shows in the time the answer takes.
struct AdminToken: Sendable {
    /// The lowercase hex SHA-256 of the token.
    let hash: String

    init(_ token: String) {
        hash = Secrets.hash(token)
    }

    /// Whether `guess` is the token.
    func accepts(_ guess: String) -> Bool {
        Secrets.constantTimeEquals(Secrets.hash(guess), hash)
    }
}
