extension PostgresMigrations {
    /// Version 19: a device's address is its provider's, opaque to the store: `address_data` holds what the provider
    /// keeps beside the token. Web Push's keys, columns of their own since version 8, move into it in Web Push's form
    /// (`{"p256dh":"…","auth":"…"}`, base64url needing no escaping; `WebPushKeys.addressData`), and their columns go.
    /// (SQLite's v22 is the same.)
    static let deviceAddressData = Migration(
        version: 19, description: "a device's address data, opaque to the store (Web Push's keys move into it)",
        statements: [
            "ALTER TABLE device ADD COLUMN address_data text",
            """
            UPDATE device SET address_data = '{"p256dh":"' || webpush_p256dh || '","auth":"' || webpush_auth || '"}'
            WHERE webpush_p256dh IS NOT NULL AND webpush_auth IS NOT NULL
            """,
            "ALTER TABLE device DROP COLUMN webpush_p256dh",
            "ALTER TABLE device DROP COLUMN webpush_auth",
        ])
}
