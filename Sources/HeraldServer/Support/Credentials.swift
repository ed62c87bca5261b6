import Foundation
import HTTPTypes
import HeraldCore
import Hummingbird

/// The credentials a request carries in its `Authorization` header.
enum Credentials {
    /// `Authorization: Basic base64(user_id:device_secret)`: the device owner.
    static func basic(_ request: Request) -> (userID: String, secret: String)? {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("basic "),
            let data = Data(base64Encoded: String(header.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
            let decoded = String(data: data, encoding: .utf8), let colon = decoded.firstIndex(of: ":")
        else { return nil }
        return (String(decoded[..<colon]), String(decoded[decoded.index(after: colon)...]))
    }

    /// `Authorization: Bearer <value>`.
    static func bearer(_ request: Request) -> String? {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") else { return nil }
        let value = header.dropFirst(7).trimmingCharacters(in: .whitespaces)
        return value.isEmpty ? nil : value
    }
}

/// Finds devices by their bearer secrets. Lookups go by ``UserID/lookupHash``; secrets are compared in constant time.
struct DeviceDirectory: Sendable {
    let store: any DeviceStore
    /// Told of every owner who authenticates (the idle-device rule: "heard from").
    var sightings: RetentionSweeper? = nil

    /// The device of a USER_ID a dialect parsed from its request; 404 when there is none.
    func device(userID: UserID) async throws -> Device {
        guard let device = try await storeCall({ try await store.device(userID: userID) }) else { throw APIError.unknownUser }
        return device
    }

    /// The device of a USER_ID given as text (a form field, Basic credentials): parsed here, once; 400 when it has
    /// not the form of one, 404 when there is no such device.
    func device(userID text: String) async throws -> Device {
        try await device(userID: try UserIDRule.userID(text))
    }

    /// The device of the owner whose `user_id`/`device_secret` were given; 404 unknown, 403 wrong secret.
    func owner(userID: String, secret: String) async throws -> Device {
        let device = try await self.device(userID: userID)
        guard Secrets.matches(secret, hash: device.secretHash) else { throw APIError.wrongDeviceSecret }
        sightings?.deviceSeen(device.id)
        return device
    }

    /// The owner from the request's Basic credentials; 401 when there are none.
    func owner(of request: Request) async throws -> Device {
        guard let credentials = Credentials.basic(request) else { throw APIError.ownerCredentialsRequired }
        return try await owner(userID: credentials.userID, secret: credentials.secret)
    }
}
