import AsyncHTTPClient
import HeraldCore
import NIOCore
import Synchronization

/// The HTTP/2 connections of the provider: `connectionsPerEnvironment` `HTTPClient`s per environment
/// (AsyncHTTPClient keeps one HTTP/2 connection per host per client), used in turn.
///
/// A client can be recycled (after `429 TooManyProviderTokenUpdates`): a fresh client takes its place at once and
/// the old one is shut down when its last in-flight request has finished. Clients are created on first use.
final class APNsClientPool: Sendable {
    /// One use of a client; hand it back with ``release(_:)``.
    struct Lease: Sendable {
        let environment: PushEnvironment
        let slot: Int
        let client: HTTPClient
    }

    private struct State {
        var clients: [PushEnvironment: [HTTPClient?]] = [:]
        var cursor: [PushEnvironment: Int] = [:]
        var inFlight: [ObjectIdentifier: Int] = [:]
        var retired: [ObjectIdentifier: HTTPClient] = [:]
        var isShutDown = false
    }

    private let connectionsPerEnvironment: Int
    private let makeClient: @Sendable () -> HTTPClient
    private let state = Mutex(State())

    init(connectionsPerEnvironment: Int, makeClient: @escaping @Sendable () -> HTTPClient) {
        self.connectionsPerEnvironment = max(1, connectionsPerEnvironment)
        self.makeClient = makeClient
    }

    /// The next client for an environment, round robin; `nil` once the pool is shut down.
    func lease(_ environment: PushEnvironment) -> Lease? {
        state.withLock { state in
            guard !state.isShutDown else { return nil }
            var slots = state.clients[environment] ?? Array(repeating: nil, count: connectionsPerEnvironment)
            let slot = (state.cursor[environment] ?? 0) % connectionsPerEnvironment
            state.cursor[environment] = slot + 1
            let client = slots[slot] ?? makeClient()
            slots[slot] = client
            state.clients[environment] = slots
            state.inFlight[ObjectIdentifier(client), default: 0] += 1
            return Lease(environment: environment, slot: slot, client: client)
        }
    }

    /// Ends a use of a client, shutting it down if it was recycled and this was its last request.
    func release(_ lease: Lease) async {
        let retiredClient: HTTPClient? = state.withLock { state in
            let id = ObjectIdentifier(lease.client)
            let remaining = (state.inFlight[id] ?? 1) - 1
            state.inFlight[id] = remaining > 0 ? remaining : nil
            guard remaining <= 0 else { return nil }
            return state.retired.removeValue(forKey: id)
        }
        try? await retiredClient?.shutdown()
    }

    /// Puts a fresh client in the lease's slot, unless that already happened; the old client is retired.
    ///
    /// - Returns: whether this call replaced the client.
    @discardableResult
    func recycle(_ lease: Lease) -> Bool {
        state.withLock { state in
            guard !state.isShutDown, var slots = state.clients[lease.environment],
                let current = slots[lease.slot], current === lease.client
            else { return false }
            slots[lease.slot] = nil
            state.clients[lease.environment] = slots
            state.retired[ObjectIdentifier(current)] = current
            return true
        }
    }

    /// Shuts every client down, failing their in-flight requests; later leases return `nil`.
    func shutdown() async throws {
        let clients: [HTTPClient] = state.withLock { state in
            guard !state.isShutDown else { return [] }
            state.isShutDown = true
            let all = state.clients.values.flatMap { $0.compactMap { $0 } } + Array(state.retired.values)
            state.clients = [:]
            state.retired = [:]
            return all
        }
        var firstError: (any Error)?
        for client in clients {
            do { try await client.shutdown() } catch { firstError = firstError ?? error }
        }
        if let firstError { throw firstError }
    }
}
