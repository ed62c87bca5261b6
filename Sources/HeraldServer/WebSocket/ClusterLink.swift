import Foundation
import HeraldCore
import HeraldDelivery
import Logging
import ServiceLifecycle
import Synchronization

/// The WebSocket channel across instances on one database (``Cluster``): this instance says which devices have a
/// client here, takes the notifications other instances hand it for them, and honours confirmations that reached
/// another instance. It also has the delivery engine read the outbox at once when another instance stopped and gave
/// its leases back.
///
/// A notification accepted by instance A for a device whose client is connected to instance B is handed to B (the
/// delivery engine does that); B delivers it on the socket and waits for the confirmation, and falls back to the
/// device's provider itself if none comes: B holds the notification's lease all along, so the fallback happens once.
final class ClusterLink: Service, Sendable {
    private let cluster: any Cluster
    private let hub: WebSocketHub
    private let engine: DeliveryEngine
    private let logger: Logger
    private let isLeaving = Atomic(false)

    init(cluster: any Cluster, hub: WebSocketHub, engine: DeliveryEngine, logger: Logger) {
        self.cluster = cluster
        self.hub = hub
        self.engine = engine
        self.logger = logger
    }

    /// A client of this device subscribed here: the other instances hand its notifications to this one from now on.
    func clientSubscribed(_ deviceID: Device.ID) async {
        do {
            try await cluster.connected(deviceID, on: engine.instanceID)
        } catch {
            logger.warning(
                "Telling the other instances about a WebSocket client failed; they send its notifications to the provider",
                metadata: ["device": "\(deviceID)", "error": "\(error)"])
        }
    }

    /// A client of this device went away; if it was the last one here, the other instances stop handing its
    /// notifications to this one.
    func clientLeft(_ deviceID: Device.ID) {
        guard !isLeaving.load(ordering: .relaxed) else { return }
        Task {
            guard !hub.isConnected(deviceID) else { return }
            try? await cluster.disconnected(deviceID, on: engine.instanceID)
        }
    }

    /// A client confirmed a notification that no delivery here waits for: the instance that sent it may be waiting.
    func forwardConfirmation(_ confirmID: String, deviceID: Device.ID) async -> Bool {
        do {
            try await cluster.send(.confirmed(confirmID: confirmID, deviceID: deviceID))
            return true
        } catch {
            logger.warning("Forwarding a WebSocket confirmation failed", metadata: ["error": "\(error)"])
            return false
        }
    }

    /// Takes the other instances' messages until graceful shutdown, then says this instance has no clients any more.
    func run() async throws {
        await cancelWhenGracefulShutdown {
            for await message in self.cluster.messages {
                await self.handle(message)
            }
        }
        isLeaving.store(true, ordering: .relaxed)
        do {
            try await cluster.leave(engine.instanceID)
        } catch {
            logger.warning("Telling the other instances this one stops failed", metadata: ["error": "\(error)"])
        }
    }

    private func handle(_ message: ClusterMessage) async {
        switch message {
        case .deliverPending(let deviceID, let instance):
            guard instance == engine.instanceID, hub.isConnected(deviceID) else { return }
            await engine.deliverPending(of: deviceID)
        case .confirmed(let confirmID, let deviceID):
            _ = hub.confirm(confirmID, deviceID: deviceID)
        case .leasesReleased(let instance):
            if instance != engine.instanceID { engine.refillSoon() }
        }
    }
}
