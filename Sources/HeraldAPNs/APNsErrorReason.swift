/// The `reason` of an APNs error response (and of a GOAWAY's debug data), as Apple spells it.
///
/// Unknown strings are kept verbatim in ``unknown(_:)``; Apple adds reasons from time to time.
public enum APNsErrorReason: Sendable, Hashable, CustomStringConvertible {
    // 400
    case badCollapseId
    case badDeviceToken
    case badExpirationDate
    case badMessageId
    case badPriority
    case badTopic
    case deviceTokenNotForTopic
    case duplicateHeaders
    case idleTimeout
    case invalidPushType
    case missingDeviceToken
    case missingTopic
    case payloadEmpty
    case topicDisallowed
    // 403
    case badCertificate
    case badCertificateEnvironment
    case expiredProviderToken
    case forbidden
    case invalidProviderToken
    case missingProviderToken
    case unrelatedKeyIdInToken
    case badEnvironmentKeyIdInToken
    // 404, 405
    case badPath
    case methodNotAllowed
    // 410
    case expiredToken
    case unregistered
    // 413
    case payloadTooLarge
    // 429
    case tooManyProviderTokenUpdates
    case tooManyRequests
    // 500, 503
    case internalServerError
    case serviceUnavailable
    case shutdown
    /// A reason this type does not know, verbatim.
    case unknown(String)

    private static let known: [APNsErrorReason] = [
        .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
        .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken, .missingTopic,
        .payloadEmpty, .topicDisallowed, .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden,
        .invalidProviderToken, .missingProviderToken, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken, .badPath,
        .methodNotAllowed, .expiredToken, .unregistered, .payloadTooLarge, .tooManyProviderTokenUpdates,
        .tooManyRequests, .internalServerError, .serviceUnavailable, .shutdown,
    ]
    private static let byString: [String: APNsErrorReason] = Dictionary(
        uniqueKeysWithValues: known.map { ($0.rawValue, $0) })

    /// Parses Apple's string; unknown strings become ``unknown(_:)``.
    public init(rawValue: String) {
        self = Self.byString[rawValue] ?? .unknown(rawValue)
    }

    /// Apple's string, e.g. `BadDeviceToken`.
    public var rawValue: String {
        switch self {
        case .badCollapseId: "BadCollapseId"
        case .badDeviceToken: "BadDeviceToken"
        case .badExpirationDate: "BadExpirationDate"
        case .badMessageId: "BadMessageId"
        case .badPriority: "BadPriority"
        case .badTopic: "BadTopic"
        case .deviceTokenNotForTopic: "DeviceTokenNotForTopic"
        case .duplicateHeaders: "DuplicateHeaders"
        case .idleTimeout: "IdleTimeout"
        case .invalidPushType: "InvalidPushType"
        case .missingDeviceToken: "MissingDeviceToken"
        case .missingTopic: "MissingTopic"
        case .payloadEmpty: "PayloadEmpty"
        case .topicDisallowed: "TopicDisallowed"
        case .badCertificate: "BadCertificate"
        case .badCertificateEnvironment: "BadCertificateEnvironment"
        case .expiredProviderToken: "ExpiredProviderToken"
        case .forbidden: "Forbidden"
        case .invalidProviderToken: "InvalidProviderToken"
        case .missingProviderToken: "MissingProviderToken"
        case .unrelatedKeyIdInToken: "UnrelatedKeyIdInToken"
        case .badEnvironmentKeyIdInToken: "BadEnvironmentKeyIdInToken"
        case .badPath: "BadPath"
        case .methodNotAllowed: "MethodNotAllowed"
        case .expiredToken: "ExpiredToken"
        case .unregistered: "Unregistered"
        case .payloadTooLarge: "PayloadTooLarge"
        case .tooManyProviderTokenUpdates: "TooManyProviderTokenUpdates"
        case .tooManyRequests: "TooManyRequests"
        case .internalServerError: "InternalServerError"
        case .serviceUnavailable: "ServiceUnavailable"
        case .shutdown: "Shutdown"
        case .unknown(let value): value
        }
    }

    /// Apple's string.
    public var description: String { rawValue }
}
