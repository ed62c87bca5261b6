import Foundation
import HeraldStore
import PostgresNIO

/// The PostgreSQL database the store tests use, named by `HERALD_TEST_POSTGRES_URL` (a `postgres://` URL). Each store
/// gets a schema of its own (`test_<uuid>`, the `search_path` of every connection of its pool), so that tests are
/// independent and run in parallel on one database. The schemas stay behind: the database is a throwaway one.
///
/// Without the variable the PostgreSQL store is not tested; `HERALD_REQUIRE_POSTGRES=1` (CI) turns that into a failure
/// (``PostgresStoreTests``).
enum PostgresTestDatabase {
    static let url: String? = ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static let isRequired = ProcessInfo.processInfo.environment["HERALD_REQUIRE_POSTGRES"] == "1"

    /// A store on a fresh, empty schema.
    static func makeStore() async throws -> PostgresStore {
        try await openStore(freshSchema())
    }

    /// A store on `configuration`'s schema. A first connection may wait while every test of the run starts at once on
    /// two cores, each migrating its own schema: a deadline that means "never
    /// connects", not "connects slowly" (a loaded run missed 30 s in eight tests).
    static func openStore(_ configuration: PostgresClient.Configuration) async throws -> PostgresStore {
        try await PostgresStore(configuration: configuration, startupTimeout: .seconds(180))
    }

    /// Creates an empty schema and returns a client configuration whose connections work in it.
    static func freshSchema() async throws -> PostgresClient.Configuration {
        guard let url else { throw PostgresTestDatabaseMissing() }
        var configuration = try PostgresURL(url).clientConfiguration
        let schema = "test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try await withClient(configuration) { client in _ = try await client.query("CREATE SCHEMA \(unescaped: schema)") }
        configuration.options.additionalStartupParameters = [("search_path", schema)]
        // Tests run in parallel, some with several stores: a few connections each stay within the server's limit.
        configuration.options.maximumConnections = 4
        return configuration
    }

    /// Runs `body` with a client of its own, running while `body` runs.
    static func withClient<Result: Sendable>(
        _ configuration: PostgresClient.Configuration, _ body: @Sendable (PostgresClient) async throws -> Result
    ) async throws -> Result {
        let client = PostgresClient(configuration: configuration)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }
}

struct PostgresTestDatabaseMissing: Error, CustomStringConvertible {
    var description: String { "HERALD_TEST_POSTGRES_URL is not set" }
}
