/// Herald's version, printed by `herald --version` and sent as the `Server` header's product version.
public enum HeraldVersion {
    /// Semantic versioning; raised with each release.
    public static let current = "0.5.0"
}
