import CoreMetrics
import HeraldAPNs
import HeraldFCM
import HeraldCore
import HeraldStore
import Logging

/// Turning the APNs configuration into a provider, and checking it offline (`herald apns check`).
public enum APNsSetup {
    /// The provider for a configuration; fails with one line naming the option at fault.
    static func makeProvider(
        _ configuration: APNsConfiguration, clock: any WallClock, metrics: any MetricsFactory, logger: Logger
    ) throws -> APNsProvider {
        do {
            return try APNsProvider(configuration: configuration, clock: clock, logger: logger, metrics: metrics)
        } catch {
            throw ConfigurationError(error.description)
        }
    }

    /// Validates the key and settings offline and describes what would be used.
    public static func check(_ configuration: APNsConfiguration) throws -> [String] {
        do {
            return try configuration.check()
        } catch {
            throw ConfigurationError(error.description)
        }
    }
}

/// Turning the FCM configuration into a provider, and checking it offline (`herald fcm check`).
public enum FCMSetup {
    /// The provider for a configuration; fails with one line naming the option at fault.
    static func makeProvider(
        _ configuration: FCMConfiguration, clock: any WallClock, metrics: any MetricsFactory, logger: Logger
    ) throws -> FCMProvider {
        do {
            return try FCMProvider(configuration: configuration, clock: clock, logger: logger, metrics: metrics)
        } catch {
            throw ConfigurationError(error.description)
        }
    }

    /// Validates the service account and settings offline and describes what would be used.
    public static func check(_ configuration: FCMConfiguration) throws -> [String] {
        do {
            return try configuration.check()
        } catch {
            throw ConfigurationError(error.description)
        }
    }
}

/// One line for a startup failure, naming the option at fault where there is one.
public func startupMessage(_ error: any Error) -> String {
    switch error {
    case let error as ConfigurationError: error.description
    case let error as APNsConfigurationError: error.description
    case let error as FCMConfigurationError: error.description
    case let error as StoreError: "HERALD_DATABASE_URL: \(error.description)"
    default: "\(error)"
    }
}
