import HeraldCore
import HeraldWebPush
import Logging

/// Where the server's VAPID key comes from: `HERALD_VAPID_PRIVATE_KEY` when given, otherwise the key generated on
/// first start and kept in the store (``ServerSettingStore``), so that subscriptions survive restarts and every
/// instance on one PostgreSQL database signs with the same key (the first to start stores it, the others read it).
enum VAPIDKeyStore {
    /// The setting the generated key is kept under (base64url of the raw P-256 scalar).
    static let settingName = "webpush.vapid_private_key"

    /// The key to use; `nil` when none is given and the store cannot keep one (then Web Push is not available).
    ///
    /// - Throws: ``ConfigurationError`` when Web Push is configured (`HERALD_VAPID_SUBJECT`) and no key can be had.
    static func key(configured: WebPushConfiguration, store: any HeraldStore, logger: Logger) async throws -> String? {
        if let given = configured.vapidPrivateKey { return given }
        let generated = VAPIDKey.generate()
        do {
            let kept = try await store.setting(named: settingName, insertingIfAbsent: generated)
            if kept == generated { logger.notice("Web Push: generated a VAPID key and kept it in the database") }
            return kept
        } catch {
            guard configured.subject == nil else {
                throw ConfigurationError(
                    "\(WebPushOption.privateKey.rawValue): not set, and the generated key cannot be kept in the database: \(error)")
            }
            logger.warning("Web Push: no VAPID key (the database cannot keep one)", metadata: ["error": "\(error)"])
            return nil
        }
    }
}
