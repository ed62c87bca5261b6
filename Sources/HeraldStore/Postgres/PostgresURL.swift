import Foundation
import NIOSSL
import PostgresNIO

/// A PostgreSQL database URL, as `HERALD_DATABASE_URL` gives it:
///
/// ```
/// postgres://herald:secret@db.example.com:5432/herald?sslmode=verify-full
/// ```
///
/// `postgresql://` is the same. User, password and database may be percent-encoded; the port defaults to 5432 and the
/// database to the user's name. `sslmode`: `disable` (no TLS), `require` (TLS, the server's certificate not
/// verified), `verify-ca` (the certificate chain verified, not the host name), `verify-full` (both verified). Without
/// `sslmode` (or with `prefer` or `allow`) the connection has no TLS: name `require` or `verify-full` to have it.
public struct PostgresURL: Sendable, Equatable {
    /// How the connection uses TLS.
    public enum SSLMode: String, Sendable, CaseIterable {
        case disable
        case allow
        case prefer
        case require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    /// `nil`: the server takes the user's name.
    public var database: String?
    public var sslMode: SSLMode

    /// Whether `url` names a PostgreSQL database (`postgres://` or `postgresql://`).
    public static func isPostgres(_ url: String) -> Bool {
        url.hasPrefix("postgres://") || url.hasPrefix("postgresql://")
    }

    /// Parses a `postgres://` URL; a ``StoreError/invalidURL(_:)`` that never repeats the password when it is not one.
    public init(_ url: String) throws {
        guard Self.isPostgres(url), let components = URLComponents(string: url) else {
            throw StoreError.invalidURL("not a PostgreSQL URL (\(Self.form))")
        }
        guard var host = components.host, !host.isEmpty else { throw StoreError.invalidURL("no host (\(Self.form))") }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }  // an IPv6 address
        guard let username = components.user, !username.isEmpty else {
            throw StoreError.invalidURL("no user (\(Self.form))")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        guard !database.contains("/") else { throw StoreError.invalidURL("the database name cannot contain '/'") }
        var sslMode = SSLMode.prefer
        for item in components.queryItems ?? [] {
            guard item.name == "sslmode" else {
                throw StoreError.invalidURL("unknown parameter '\(item.name)' (only sslmode is understood)")
            }
            guard let mode = item.value.flatMap(SSLMode.init(rawValue:)) else {
                let modes = SSLMode.allCases.map(\.rawValue).joined(separator: ", ")
                throw StoreError.invalidURL("sslmode must be one of \(modes)")
            }
            sslMode = mode
        }
        self.host = host
        self.port = components.port ?? 5432
        self.username = username
        self.password = components.password
        self.database = database.isEmpty ? nil : database
        self.sslMode = sslMode
    }

    private static let form = "postgres://user:password@host:port/database?sslmode=disable|require|verify-full"

    /// `url` with its password hidden, for messages and logs (any URL; only a password is hidden).
    public static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "***"
        return components.string ?? url
    }

    /// The client configuration: the address, the credentials and the TLS that `sslmode` asks for.
    public var clientConfiguration: PostgresClient.Configuration {
        PostgresClient.Configuration(host: host, port: port, username: username, password: password, database: database, tls: tls)
    }

    private var tls: PostgresClient.Configuration.TLS {
        var configuration = TLSConfiguration.makeClientConfiguration()
        switch sslMode {
        case .disable, .allow, .prefer:
            return .disable
        case .require:
            configuration.certificateVerification = .none
        case .verifyCA:
            configuration.certificateVerification = .noHostnameVerification
        case .verifyFull:
            configuration.certificateVerification = .fullVerification
        }
        return .require(configuration)
    }
}
