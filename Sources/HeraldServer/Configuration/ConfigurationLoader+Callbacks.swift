import Foundation
import HeraldProviderKit

extension ConfigurationLoader {
    /// `HERALD_CALLBACK_*`, checked here so that `herald serve` stops with one line naming the option at fault.
    static func callbackSettings(_ reader: inout Reader) throws -> CallbackConfiguration {
        var configuration = CallbackConfiguration()
        configuration.allowedNetworks = (reader.string(CallbackOption.allowedNetworks.rawValue) ?? "")
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        configuration.trustedCAPath = reader.string(CallbackOption.trustedCAPath.rawValue)
        if let seconds = try reader.integer(CallbackOption.requestTimeout.rawValue, in: 1...60) {
            configuration.requestTimeout = .seconds(seconds)
        }
        configuration.maximumPerHost = try reader.integer(CallbackOption.maximumPerHost.rawValue, in: 1...64) ?? configuration.maximumPerHost
        if let problem = configuration.settingProblems().first { throw ConfigurationError(problem.description) }
        do {
            _ = try configuration.loadTrustedCertificates()
        } catch {
            throw ConfigurationError(error.description)
        }
        return configuration
    }
}
