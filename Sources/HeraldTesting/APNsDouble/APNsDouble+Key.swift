import Crypto
import HeraldCore

extension APNsDouble {
    /// A signing key the double knows: its public half, Key ID, team and environments.
    public struct Key: Sendable {
        /// The `kid`.
        public var keyID: String
        /// The team whose tokens this key signs (the `iss` it must carry).
        public var teamID: String
        /// Verifies the token signatures.
        public var publicKey: P256.Signing.PublicKey
        /// The environments the key is valid for; a token for another one is `BadEnvironmentKeyIdInToken`.
        public var environments: Set<PushEnvironment>

        /// Registers a key by its parts.
        public init(
            keyID: String, teamID: String, publicKey: P256.Signing.PublicKey,
            environments: Set<PushEnvironment> = Set(PushEnvironment.allCases)
        ) {
            self.keyID = keyID
            self.teamID = teamID
            self.publicKey = publicKey
            self.environments = environments
        }

        /// Registers a ``TestKey``.
        public init(_ key: TestKey, environments: Set<PushEnvironment> = Set(PushEnvironment.allCases)) {
            self.init(keyID: key.keyID, teamID: key.teamID, publicKey: key.publicKey, environments: environments)
        }
    }
}
