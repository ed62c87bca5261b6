import Foundation
import HeraldAPNs
import HeraldFCM
import HeraldProviderKit
import HeraldTransport
import HeraldWebPush
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
        configuration.databaseMaximumBytes = try reader.integer("HERALD_DATABASE_MAX_BYTES", in: 65_536...Int.max)
        if let milliseconds = try reader.integer("HERALD_STORE_TIMEOUT_MS", in: 100...120_000) {
            configuration.storeTimeout = .milliseconds(milliseconds)
        }
        configuration.dailyLimit = try reader.integer("HERALD_RATE_LIMIT_DAILY", in: 1...10_000_000) ?? configuration.dailyLimit
        configuration.exemptDailyLimit =
            try reader.integer("HERALD_EXEMPT_DAILY", in: 0...10_000_000) ?? configuration.exemptDailyLimit
        configuration.maximumPendingPerDevice =
            try reader.integer("HERALD_MAX_PENDING_PER_DEVICE", in: 1...10_000_000) ?? configuration.maximumPendingPerDevice
        if let retention = try reader.integer("HERALD_RETENTION", in: 60...3_153_600_000) {
            configuration.retention = TimeInterval(retention)
        }
        configuration.deviceIdleDays = try reader.integer("HERALD_DEVICE_IDLE_DAYS", in: 1...36_500)
        if let level = reader.string("HERALD_LOG_LEVEL") {
            guard let parsed = Logger.Level(rawValue: level.lowercased()) else {
                throw ConfigurationError(
                    "HERALD_LOG_LEVEL: \"\(level)\" is not one of trace, debug, info, notice, warning, error, critical")
            }
            configuration.logLevel = parsed
        }
        if let format = reader.string("HERALD_LOG_FORMAT") {
            guard let parsed = LogFormat(rawValue: format.lowercased()) else {
                throw ConfigurationError("HERALD_LOG_FORMAT: \"\(format)\" is not one of text, json")
            }
            configuration.logFormat = parsed
        }
        configuration.accessLog = try reader.boolean("HERALD_ACCESS_LOG") ?? configuration.accessLog
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
        if let lease = try reader.integer("HERALD_LEASE_SECONDS", in: 2...3_600) {
            configuration.leaseDuration = TimeInterval(lease)
        }
        if let instance = reader.string("HERALD_INSTANCE_ID") {
            guard !instance.isEmpty, instance.count <= 64, instance.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
                throw ConfigurationError("HERALD_INSTANCE_ID: must be 1 to 64 printable ASCII characters without spaces")
            }
            configuration.instanceID = instance
        }
        if let timeout = try reader.integer("HERALD_WEBSOCKET_CONFIRM_TIMEOUT", in: 1...300) {
            configuration.webSocketConfirmTimeout = .seconds(timeout)
        }
        if let interval = try reader.integer("HERALD_WEBSOCKET_PING_INTERVAL", in: 1...3_600) {
            configuration.webSocketPingInterval = .seconds(interval)
        }
        if let timeout = try reader.integer("HERALD_WEBSOCKET_SUBSCRIBE_TIMEOUT", in: 1...300) {
            configuration.webSocketSubscribeTimeout = .seconds(timeout)
        }
        configuration.webSocketSubscribesPerMinute =
            try reader.integer("HERALD_WEBSOCKET_SUBSCRIBES_PER_MINUTE", in: 0...6_000) ?? configuration.webSocketSubscribesPerMinute
        try connectionSettings(&reader, into: &configuration.connectionLimits)
        try registrationSettings(&reader, into: &configuration)
        try metricsSettings(&reader, into: &configuration)
        if let token = reader.string("HERALD_ADMIN_TOKEN") {
            guard (16...512).contains(token.count), token.utf8.allSatisfy({ (0x21...0x7e).contains($0) }) else {
                throw ConfigurationError(
                    "HERALD_ADMIN_TOKEN: must be 16 to 512 printable ASCII characters without spaces (e.g. from `openssl rand -hex 32`)")
            }
            configuration.adminToken = token
        }
        if let type = reader.string("HERALD_LIVE_ACTIVITY_ATTRIBUTES_TYPE") {
            guard (1...128).contains(type.utf8.count), type.utf8.first.map({ !(0x30...0x39).contains($0) }) == true,
                type.utf8.allSatisfy({ $0 == 0x5f || (0x30...0x39).contains($0) || (0x41...0x5a).contains($0) || (0x61...0x7a).contains($0) })
            else {
                throw ConfigurationError("HERALD_LIVE_ACTIVITY_ATTRIBUTES_TYPE: must be a Swift type name (letters, digits and _, not starting with a digit)")
            }
            configuration.liveActivityAttributesType = type
        }
        configuration.activityWriteBurst =
            try reader.integer("HERALD_ACTIVITY_WRITE_BURST", in: 1...10_000_000) ?? configuration.activityWriteBurst
        configuration.activityWritesPerSecond =
            try reader.integer("HERALD_ACTIVITY_WRITES_PER_SECOND", in: 1...10_000_000) ?? configuration.activityWritesPerSecond
        configuration.apns = try apnsSettings(&reader)
        configuration.fcm = try fcmSettings(&reader)
        configuration.webPush = try webPushSettings(&reader)
        configuration.callbacks = try callbackSettings(&reader)
        if let unknown = reader.unread.sorted().first {
            throw ConfigurationError("\(unknown): unknown option (see the configuration table in README.md)")
        }
        return configuration
    }

    private static func connectionSettings(_ reader: inout Reader, into limits: inout ConnectionLimits) throws {
        if let seconds = try reader.integer("HERALD_HEADER_TIMEOUT", in: 1...600) { limits.headerTimeout = .seconds(seconds) }
        if let seconds = try reader.integer("HERALD_BODY_TIMEOUT", in: 1...3_600) { limits.bodyTimeout = .seconds(seconds) }
        if let seconds = try reader.integer("HERALD_IDLE_TIMEOUT", in: 1...3_600) { limits.idleTimeout = .seconds(seconds) }
        limits.maximumConnections =
            try reader.integer("HERALD_MAX_CONNECTIONS", in: 1...1_000_000) ?? limits.maximumConnections
        limits.maximumConnectionsPerAddress =
            try reader.integer("HERALD_MAX_CONNECTIONS_PER_ADDRESS", in: 0...1_000_000) ?? limits.maximumConnectionsPerAddress
        if let reserved = try reader.integer("HERALD_HTTP_RESERVED_CONNECTIONS", in: 0...1_000_000) {
            guard reserved < limits.maximumConnections else {
                throw ConfigurationError(
                    "HERALD_HTTP_RESERVED_CONNECTIONS: \(reserved) leaves no connection for WebSockets; it must be less than HERALD_MAX_CONNECTIONS (\(limits.maximumConnections))")
            }
            limits.connectionsReservedForHTTP = reserved
        }
        if let seconds = try reader.integer("HERALD_SHUTDOWN_TIMEOUT", in: 1...3_600) { limits.shutdownTimeout = .seconds(seconds) }
    }

    private static func registrationSettings(_ reader: inout Reader, into configuration: inout HeraldConfiguration) throws {
        if let proxies = reader.string("HERALD_TRUSTED_PROXIES") {
            configuration.trustedProxies = proxies.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty }
        }
        configuration.clientAddressHeader = reader.string("HERALD_CLIENT_ADDRESS_HEADER") ?? configuration.clientAddressHeader
        _ = try ClientAddressResolver(configuration)  // checks both
        configuration.registrationsPerMinute =
            try reader.integer("HERALD_REGISTRATIONS_PER_MINUTE", in: 0...1_000_000) ?? configuration.registrationsPerMinute
        configuration.maximumDevices = try reader.integer("HERALD_MAX_DEVICES", in: 1...1_000_000_000)
        if let token = reader.string("HERALD_REGISTRATION_TOKEN") {
            guard (16...512).contains(token.count), token.utf8.allSatisfy({ (0x21...0x7e).contains($0) }) else {
                throw ConfigurationError(
                    "HERALD_REGISTRATION_TOKEN: must be 16 to 512 printable ASCII characters without spaces (e.g. from `openssl rand -hex 32`)")
            }
            configuration.registrationToken = token
        }
    }

    private static func metricsSettings(_ reader: inout Reader, into configuration: inout HeraldConfiguration) throws {
        configuration.metrics = try reader.boolean("HERALD_METRICS") ?? configuration.metrics
        configuration.metricsPort = try reader.integer("HERALD_METRICS_PORT", in: 0...65_535)
        if let host = reader.string("HERALD_METRICS_HOST") {
            guard configuration.metricsPort != nil else {
                throw ConfigurationError("HERALD_METRICS_HOST: set HERALD_METRICS_PORT too (the metrics listener's port)")
            }
            configuration.metricsHost = host
        }
        if let port = configuration.metricsPort {
            guard configuration.metrics else {
                throw ConfigurationError("HERALD_METRICS_PORT: metrics are off (HERALD_METRICS=off); set one or the other")
            }
            guard port == 0 || port != configuration.port else {
                throw ConfigurationError("HERALD_METRICS_PORT: must differ from HERALD_PORT (\(port))")
            }
        }
    }

    private static func fcmSettings(_ reader: inout Reader) throws -> FCMConfiguration? {
        let path = reader.string(FCMOption.serviceAccountPath.rawValue)
        let json = reader.string(FCMOption.serviceAccountJSON.rawValue)
        let optional: [FCMOption] = [.baseURL, .trustedCAPath, .requestTimeout, .connections]
        var optionalValues: [FCMOption: String] = [:]
        for option in optional { optionalValues[option] = reader.string(option.rawValue) }
        let source: FCMServiceAccountSource
        switch (path, json) {
        case (let path?, nil): source = .file(path: path)
        case (nil, let json?): source = .json(json)
        case (_?, _?):
            throw ConfigurationError("HERALD_FCM_SERVICE_ACCOUNT_JSON: set either HERALD_FCM_SERVICE_ACCOUNT or HERALD_FCM_SERVICE_ACCOUNT_JSON, not both")
        case (nil, nil):
            if let stray = optional.first(where: { optionalValues[$0] != nil }) {
                throw ConfigurationError("\(stray.rawValue): set HERALD_FCM_SERVICE_ACCOUNT (or HERALD_FCM_SERVICE_ACCOUNT_JSON) too, or nothing for FCM")
            }
            return nil
        }
        var configuration = FCMConfiguration(serviceAccount: source)
        configuration.baseURL = optionalValues[.baseURL] ?? configuration.baseURL
        configuration.trustedCAPath = optionalValues[.trustedCAPath]
        if let text = optionalValues[.requestTimeout] {
            configuration.requestTimeout = .seconds(try Reader.integer(text, named: FCMOption.requestTimeout.rawValue, in: 1...120))
        }
        if let text = optionalValues[.connections] {
            configuration.connections = try Reader.integer(text, named: FCMOption.connections.rawValue, in: 1...64)
        }
        if let problem = configuration.settingProblems().first { throw ConfigurationError(problem.description) }
        return configuration
    }

    /// `HERALD_VAPID_*` and `HERALD_WEBPUSH_*`; the subject, when given, is checked here, so that `herald serve` stops
    /// with one line naming it.
    private static func webPushSettings(_ reader: inout Reader) throws -> WebPushConfiguration {
        var configuration = WebPushConfiguration()
        configuration.subject = reader.string(WebPushOption.subject.rawValue)
        configuration.vapidPrivateKey = reader.string(WebPushOption.privateKey.rawValue)
        configuration.allowedHosts = (reader.string(WebPushOption.allowedHosts.rawValue) ?? "")
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        configuration.trustedCAPath = reader.string(WebPushOption.trustedCAPath.rawValue)
        if let seconds = try reader.integer(WebPushOption.requestTimeout.rawValue, in: 1...120) {
            configuration.requestTimeout = .seconds(seconds)
        }
        configuration.maximumPerHost = try reader.integer(WebPushOption.maximumPerHost.rawValue, in: 1...1_000) ?? configuration.maximumPerHost
        if let problem = configuration.settingProblems().first { throw ConfigurationError(problem.description) }
        return configuration
    }

    private static func apnsSettings(_ reader: inout Reader) throws -> APNsConfiguration? {
        let keyPath = reader.string(APNsOption.keyPath.rawValue)
        let keyPEM = reader.string(APNsOption.key.rawValue)
        let required: [APNsOption] = [.keyID, .teamID, .topic]
        let given = required.map { reader.string($0.rawValue) }
        let optional: [APNsOption] = [.productionURL, .sandboxURL, .trustedCAPath, .connectionsPerEnvironment, .requestTimeout, .tokenRefreshInterval]
        var optionalValues: [APNsOption: String] = [:]
        for option in optional { optionalValues[option] = reader.string(option.rawValue) }
        if keyPath == nil, keyPEM == nil, given.allSatisfy({ $0 == nil }) {
            if let stray = optional.first(where: { optionalValues[$0] != nil }) {
                throw ConfigurationError("\(stray.rawValue): set HERALD_APNS_KEY_PATH, HERALD_APNS_KEY_ID, HERALD_APNS_TEAM_ID and HERALD_APNS_TOPIC too, or nothing for APNs")
            }
            return nil
        }
        let key: APNsKeySource
        switch (keyPath, keyPEM) {
        case (let path?, nil): key = .file(path: path)
        case (nil, let pem?): key = .pem(pem.replacingOccurrences(of: "\\n", with: "\n"))
        case (_?, _?): throw ConfigurationError("HERALD_APNS_KEY: set either HERALD_APNS_KEY_PATH or HERALD_APNS_KEY, not both")
        case (nil, nil): throw ConfigurationError("HERALD_APNS_KEY_PATH: required when any HERALD_APNS_ option is set")
        }
        for (option, value) in zip(required, given) where value == nil {
            throw ConfigurationError("\(option.rawValue): required when any HERALD_APNS_ option is set")
        }
        var configuration = APNsConfiguration(key: key, keyID: given[0]!, teamID: given[1]!, topic: given[2]!)
        configuration.productionURL = optionalValues[.productionURL] ?? configuration.productionURL
        configuration.sandboxURL = optionalValues[.sandboxURL] ?? configuration.sandboxURL
        configuration.trustedCAPath = optionalValues[.trustedCAPath]
        if let text = optionalValues[.connectionsPerEnvironment] {
            configuration.connectionsPerEnvironment = try Reader.integer(text, named: APNsOption.connectionsPerEnvironment.rawValue, in: 1...64)
        }
        if let text = optionalValues[.requestTimeout] {
            configuration.requestTimeout = .seconds(try Reader.integer(text, named: APNsOption.requestTimeout.rawValue, in: 1...120))
        }
        if let text = optionalValues[.tokenRefreshInterval] {
            configuration.tokenRefreshInterval = .seconds(try Reader.integer(text, named: APNsOption.tokenRefreshInterval.rawValue, in: 1_200...3_300))
        }
        if let problem = configuration.settingProblems().first { throw ConfigurationError(problem.description) }
        return configuration
    }

    /// Reads options and remembers which were never read, so that a misspelt option is reported.
    struct Reader {
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

        mutating func boolean(_ name: String) throws -> Bool? {
            guard let text = string(name) else { return nil }
            switch text.lowercased() {
            case "true", "on", "yes", "1": return true
            case "false", "off", "no", "0": return false
            default: throw ConfigurationError("\(name): \"\(text)\" is not one of on, off (or true, false)")
            }
        }

        mutating func integer(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
            guard let text = string(name) else { return nil }
            return try Self.integer(text, named: name, in: range)
        }

        static func integer(_ text: String, named name: String, in range: ClosedRange<Int>) throws -> Int {
            guard let value = Int(text), range.contains(value) else {
                throw ConfigurationError("\(name): \"\(text)\" is not a whole number from \(range.lowerBound) to \(range.upperBound)")
            }
            return value
        }
    }
}
