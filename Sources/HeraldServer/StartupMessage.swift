import HeraldProviderKit
import HeraldStore

/// One line for a startup failure, naming the option at fault where there is one.
public func startupMessage(_ error: any Error) -> String {
    switch error {
    case let error as ConfigurationError: error.description
    case let error as any ProviderConfigurationFailure: error.description
    case let error as StoreError: "HERALD_DATABASE_URL: \(error.description)"
    default: "\(error)"
    }
}
