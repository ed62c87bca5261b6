// HeraldServer's API names types of HeraldTransport (`ConnectionLimits` in the configuration, the log writer that
// `herald serve` bootstraps); a module that imports HeraldServer sees them, as `Hummingbird` re-exports
// `HummingbirdCore`.
@_exported import HeraldTransport
