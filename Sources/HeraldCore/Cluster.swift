import Foundation

/// The instances of Herald that share one database (PostgreSQL), and what they tell each other that the database's
/// tables alone do not: on which instance each device's WebSocket clients are connected, notifications to hand to
/// that instance, and confirmations that reach another instance than the one waiting for them.
///
/// The outbox itself needs none of this: leases in the store decide who delivers what. A single instance (SQLite,
/// in-memory) has no cluster (``HeraldStore/cluster`` is `nil`).
public protocol Cluster: Sendable {
    /// Another instance than `instance` that has a WebSocket client of this device connected and is alive, if any.
    /// Answered from memory (kept up to date by the other instances' messages), so it costs nothing per delivery.
    func instance(connectedTo deviceID: Device.ID, besides instance: String) -> String?
    /// A client of this device subscribed on `instance` (which then keeps the record alive while it runs).
    func connected(_ deviceID: Device.ID, on instance: String) async throws
    /// The last client of this device on `instance` went away.
    func disconnected(_ deviceID: Device.ID, on instance: String) async throws
    /// `instance` stops: it has no clients any more (graceful shutdown; a crashed instance's records expire).
    func leave(_ instance: String) async throws
    /// Sends a message to every instance, this one included.
    func send(_ message: ClusterMessage) async throws
    /// The messages of every instance, as they arrive; one consumer.
    var messages: AsyncStream<ClusterMessage> { get }
}

/// A message between instances.
public enum ClusterMessage: Sendable, Equatable, Codable {
    /// `instance` has a client of this device: it should claim the device's pending notifications and deliver them
    /// (another instance accepted one and handed it over).
    case deliverPending(deviceID: Device.ID, instance: String)
    /// A client confirmed a notification on an instance where no delivery waits for it: the instance that sent it
    /// honours it.
    case confirmed(confirmID: String, deviceID: Device.ID)
    /// `instance` stopped and gave its leases back: the others read the outbox now rather than at their next refill.
    case leasesReleased(instance: String)
}
