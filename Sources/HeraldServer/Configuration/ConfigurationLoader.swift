import Foundation
import Logging
import Yams

/// A configuration problem, said in one line that names the option.
public struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Builds a `HeraldConfiguration` from an optional YAML or JSON file and the environment; the environment wins.
///
/// File keys are the option names (`HERALD_PORT: 9000`) or their short form (`port: 9000`).
public enum ConfigurationLoader {
    public static func load(file: String?, environment: [String: String]) throws -> HeraldConfiguration {
        var values = try file.map(readFile) ?? [:]
        for (key, value) in environment where key.hasPrefix("HERALD_") { values[key] = value }
        return try configuration(from: values)
    }

    static func readFile(_ path: String) throws -> [String: String] {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigurationError("--config: cannot read \(path)")
        }
        let parsed: Any?
        do {
            parsed = try Yams.load(yaml: text)  // YAML 1.2 is a superset of JSON
        } catch {
            throw ConfigurationError("--config: \(path) is not valid YAML or JSON")
        }
        guard let mapping = parsed as? [String: Any] else {
            throw ConfigurationError("--config: \(path) must hold a mapping of option names to values")
        }
        var values: [String: String] = [:]
        for (key, value) in mapping {
            let name = key.uppercased().hasPrefix("HERALD_") ? key.uppercased() : "HERALD_" + key.uppercased()
            guard !(value is [Any]), !(value is [String: Any]) else {
                throw ConfigurationError("\(name): must be a single value in \(path)")
            }
            values[name] = "\(value)"
        }
        return values
    }

    static func configuration(from values: [String: String]) throws -> HeraldConfiguration {
        var reader = Reader(values: values)
        var configuration = HeraldConfiguration()
        configuration.host = reader.string("HERALD_HOST") ?? configuration.host
        configuration.port = try reader.integer("HERALD_PORT", in: 0...65_535) ?? configuration.port
        configuration.databaseURL = reader.string("HERALD_DATABASE_URL") ?? configuration.databaseURL
        configuration.dailyLimit = try reader.integer("HERALD_RATE_LIMIT_DAILY", in: 1...10_000_000) ?? configuration.dailyLimit
        if let level = reader.string("HERALD_LOG_LEVEL") {
            guard let parsed = Logger.Level(rawValue: level.lowercased()) else {
                throw ConfigurationError(
                    "HERALD_LOG_LEVEL: \"\(level)\" is not one of trace, debug, info, notice, warning, error, critical")
            }
            configuration.logLevel = parsed
        }
        configuration.maximumBodyBytes =
            try reader.integer("HERALD_MAX_BODY_BYTES", in: 4_096...16_777_216) ?? configuration.maximumBodyBytes
        if let ttl = try reader.integer("HERALD_NOTIFICATION_TTL", in: 1...2_592_000) {
            configuration.notificationTTL = TimeInterval(ttl)
        }
        if let wait = try reader.integer("HERALD_DELIVERY_WAIT_MS", in: 0...9_000) {
            configuration.deliveryWait = .milliseconds(wait)
        }
        configuration.deliveryConcurrency =
            try reader.integer("HERALD_DELIVERY_CONCURRENCY", in: 1...100_000) ?? configuration.deliveryConcurrency
        configuration.apns = try apnsSettings(&reader)
        if let unknown = reader.unread.sorted().first {
            throw ConfigurationError("\(unknown): unknown option (see the configuration table in README.md)")
        }
        return configuration
    }

    private static func apnsSettings(_ reader: inout Reader) throws -> APNsSettings? {
        let required = ["HERALD_APNS_KEY_PATH", "HERALD_APNS_KEY_ID", "HERALD_APNS_TEAM_ID", "HERALD_APNS_TOPIC"]
        let given = required.map { reader.string($0) }
        let optional = ["HERALD_APNS_PRODUCTION_URL", "HERALD_APNS_SANDBOX_URL", "HERALD_APNS_CA_PATH", "HERALD_APNS_CONNECTIONS", "HERALD_APNS_TIMEOUT"]
        if given.allSatisfy({ $0 == nil }) {
            if let stray = optional.first(where: { reader.string($0) != nil }) {
                throw ConfigurationError("\(stray): set HERALD_APNS_KEY_PATH, HERALD_APNS_KEY_ID, HERALD_APNS_TEAM_ID and HERALD_APNS_TOPIC too, or nothing for APNs")
            }
            return nil
        }
        for (name, value) in zip(required, given) where value == nil {
            throw ConfigurationError("\(name): required when any HERALD_APNS_ option is set")
        }
        var settings = APNsSettings(keyPath: given[0]!, keyID: given[1]!, teamID: given[2]!, topic: given[3]!)
        settings.productionURL = try reader.url("HERALD_APNS_PRODUCTION_URL") ?? settings.productionURL
        settings.sandboxURL = try reader.url("HERALD_APNS_SANDBOX_URL") ?? settings.sandboxURL
        settings.caPath = reader.string("HERALD_APNS_CA_PATH")
        settings.connections = try reader.integer("HERALD_APNS_CONNECTIONS", in: 1...64) ?? settings.connections
        if let timeout = try reader.integer("HERALD_APNS_TIMEOUT", in: 1...120) {
            settings.requestTimeout = TimeInterval(timeout)
        }
        return settings
    }

    /// Reads options and remembers which were never read, so that a misspelt option is reported.
    private struct Reader {
        var values: [String: String]
        var unread: Set<String>

        init(values: [String: String]) {
            self.values = values
            unread = Set(values.keys)
        }

        mutating func string(_ name: String) -> String? {
            unread.remove(name)
            guard let value = values[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
            return value
        }

        mutating func integer(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
            guard let text = string(name) else { return nil }
            guard let value = Int(text), range.contains(value) else {
                throw ConfigurationError("\(name): \"\(text)\" is not a whole number from \(range.lowerBound) to \(range.upperBound)")
            }
            return value
        }

        mutating func url(_ name: String) throws -> String? {
            guard let text = string(name) else { return nil }
            guard let url = URL(string: text), url.scheme == "https", url.host != nil else {
                throw ConfigurationError("\(name): \"\(text)\" is not an https:// URL")
            }
            return text
        }
    }
}
