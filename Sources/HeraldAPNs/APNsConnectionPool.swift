// Hand-written on purpose, with APNsConnection.swift: see the header there for the measured reason (scenario b2) and the
// AsyncHTTPClient change that would let Herald go back to the library.

import HeraldCore
import NIOCore
import Synchronization

/// The provider's HTTP/2 connections: `connectionsPerEnvironment` slots per environment, used in turn.
///
/// A slot is connected on first use; concurrent requests for a slot that is connecting wait for the same connection.
/// A slot whose connection is no longer usable (GOAWAY, closed, retired after `429 TooManyProviderTokenUpdates` or a
/// lost connection) is connected afresh by the next request for it; a failed connect leaves the slot empty, so the
/// next request tries again.
final class APNsConnectionPool: Sendable {
    private enum Slot {
        case empty
        case connecting(EventLoopFuture<APNsConnection>)
        case open(APNsConnection)
    }

    private struct State {
        var slots: [PushEnvironment: [Slot]] = [:]
        var cursor: [PushEnvironment: Int] = [:]
        /// Every connection not yet closed, including retired ones still finishing requests.
        var live: [ObjectIdentifier: APNsConnection] = [:]
        var isShutDown = false
    }

    private enum Pick {
        case shutDown
        case open(APNsConnection)
        case wait(EventLoopFuture<APNsConnection>, slot: Int, isNew: Bool)
    }

    private let connectionsPerEnvironment: Int
    private let connect: @Sendable (PushEnvironment) -> EventLoopFuture<APNsConnection>
    private let state = Mutex(State())

    init(connectionsPerEnvironment: Int, connect: @escaping @Sendable (PushEnvironment) -> EventLoopFuture<APNsConnection>) {
        self.connectionsPerEnvironment = max(1, connectionsPerEnvironment)
        self.connect = connect
    }

    /// The next connection for an environment, round robin, connecting it if needed; `nil` once the pool is shut down.
    ///
    /// - Throws: the connect, TLS or ``APNsConnection/Failure`` error when the slot could not be connected.
    func connection(for environment: PushEnvironment) async throws -> APNsConnection? {
        let pick = state.withLock { state -> Pick in
            guard !state.isShutDown else { return .shutDown }
            var slots = state.slots[environment] ?? Array(repeating: .empty, count: connectionsPerEnvironment)
            let slot = (state.cursor[environment] ?? 0) % connectionsPerEnvironment
            state.cursor[environment] = slot + 1
            switch slots[slot] {
            case .open(let connection) where connection.isUsable:
                return .open(connection)
            case .connecting(let future):
                return .wait(future, slot: slot, isNew: false)
            case .open, .empty:
                let future = connect(environment)
                slots[slot] = .connecting(future)
                state.slots[environment] = slots
                return .wait(future, slot: slot, isNew: true)
            }
        }
        switch pick {
        case .shutDown:
            return nil
        case .open(let connection):
            return connection
        case .wait(let future, let slot, let isNew):
            if isNew {
                future.whenComplete { self.connected($0, future: future, environment: environment, slot: slot) }
            }
            return try await future.get()
        }
    }

    /// Shuts every connection down, failing their requests in flight; later calls return `nil`.
    func shutdown() async {
        let connections = state.withLock { state in
            state.isShutDown = true
            state.slots = [:]
            return Array(state.live.values)
        }
        for connection in connections { await connection.close() }
    }

    /// Puts a finished connect in its slot (if the slot still waits for it) and keeps track of the connection.
    private func connected(
        _ result: Result<APNsConnection, any Error>, future: EventLoopFuture<APNsConnection>,
        environment: PushEnvironment, slot: Int
    ) {
        let closeAtOnce = state.withLock { state -> APNsConnection? in
            if case .connecting(let waiting) = state.slots[environment]?[slot], waiting === future {
                switch result {
                case .success(let connection): state.slots[environment]?[slot] = .open(connection)
                case .failure: state.slots[environment]?[slot] = .empty
                }
            }
            guard case .success(let connection) = result else { return nil }
            guard !state.isShutDown else { return connection }
            state.live[ObjectIdentifier(connection)] = connection
            return nil
        }
        if let closeAtOnce {
            closeAtOnce.channel.close(promise: nil)
        } else if case .success(let connection) = result {
            connection.channel.closeFuture.whenComplete { _ in
                _ = self.state.withLock { $0.live.removeValue(forKey: ObjectIdentifier(connection)) }
            }
        }
    }
}
