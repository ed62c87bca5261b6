extension SQLiteStore {
    /// Migration v22: a device's address is its provider's, opaque to the store: `address_data` holds what the provider
    /// keeps beside the token. Web Push's keys, columns of their own since v11, move into it in Web Push's form
    /// (`{"p256dh":"…","auth":"…"}`, base64url needing no escaping; `WebPushKeys.addressData`), and their columns go.
    static let addressDataMigration = """
        ALTER TABLE device ADD COLUMN address_data TEXT;
        UPDATE device SET address_data = '{"p256dh":"' || webpush_p256dh || '","auth":"' || webpush_auth || '"}'
            WHERE webpush_p256dh IS NOT NULL AND webpush_auth IS NOT NULL;
        ALTER TABLE device DROP COLUMN webpush_p256dh;
        ALTER TABLE device DROP COLUMN webpush_auth;
        """
}
