import Foundation
import HeraldCore
import Synchronization

/// The operator's login sessions of the dashboard, in memory.
///
/// A session is a random 256-bit secret handed to the browser in the `herald_admin` cookie; only its SHA-256 is kept,
/// with the session's CSRF token (another random 256 bits, written into every form and checked on every POST) and its
/// expiry. Sessions end after ``lifetime`` or at logout; a restart ends them all, and each Herald process knows only
/// its own (several instances behind one address need sticky sessions, or the operator logs in again).
///
/// ```swift
/// let (secret, session) = sessions.open()
/// sessions.session(secret: cookieValue)?.csrfToken
/// ```
final class AdminSessions: Sendable {
    /// How long a session lasts from login.
    static let lifetime: TimeInterval = 8 * 3_600
    /// Sessions kept at most; opening one more ends the oldest.
    static let maximumSessions = 64

    struct Session: Sendable, Equatable {
        /// Written into every form as `csrf`; a POST without it is refused.
        var csrfToken: String
        var expiresAt: Date
    }

    private let clock: any WallClock
    /// By the SHA-256 of the session secret.
    private let sessions = Mutex([String: Session]())

    init(clock: any WallClock) {
        self.clock = clock
    }

    /// Opens a session: its secret (for the cookie; not kept) and the session.
    func open() -> (secret: String, session: Session) {
        let secret = Secrets.random256BitHex()
        let now = clock.now()
        let session = Session(csrfToken: Secrets.random256BitHex(), expiresAt: now.addingTimeInterval(Self.lifetime))
        sessions.withLock { sessions in
            sessions = sessions.filter { $0.value.expiresAt > now }
            while sessions.count >= Self.maximumSessions,
                let oldest = sessions.min(by: { $0.value.expiresAt < $1.value.expiresAt })?.key
            {
                sessions[oldest] = nil
            }
            sessions[Secrets.hash(secret)] = session
        }
        return (secret, session)
    }

    /// The live session of a cookie's secret; `nil` for an unknown, ended or expired one.
    func session(secret: String) -> Session? {
        guard Secrets.isHex256(secret) else { return nil }
        let key = Secrets.hash(secret)
        let now = clock.now()
        return sessions.withLock { sessions in
            guard let session = sessions[key] else { return nil }
            guard session.expiresAt > now else {
                sessions[key] = nil
                return nil
            }
            return session
        }
    }

    /// Ends the session of a cookie's secret (logout).
    func close(secret: String) {
        let key = Secrets.hash(secret)
        _ = sessions.withLock { $0.removeValue(forKey: key) }
    }
}
