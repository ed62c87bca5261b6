// Hand-written on purpose, around AsyncHTTPClient rather than instead of it: AsyncHTTPClient keeps one HTTP/2
// connection per host per client and queues requests when its streams are all in use rather than opening another
// (`HTTPConnectionPool+HTTP2StateMachine`; "FCM connections" in docs/performance-history.md, docs/performance.md before
// issue 28: at FCM's ~100 streams and a 50 ms round trip one connection carries about 2,000 sends/s). What would let
// Herald drop this pool: an AsyncHTTPClient setting for more than one HTTP/2 connection per host, opened when the
// streams of the first are in use; one `HTTPClient` would then do.

import AsyncHTTPClient
import Synchronization

/// The provider's HTTP clients: `connections` of them, used in turn. AsyncHTTPClient keeps one HTTP/2 connection per
/// host per client and, when that connection's streams are all in use (FCM allows about 100), queues requests rather
/// than opening another connection; several clients carry more sends at once.
///
/// A client whose connection is lost is replaced: AsyncHTTPClient may not notice at once that a peer closed a
/// connection without GOAWAY, and then queues the next requests for the dead connection until their deadline. The old
/// client is shut down (its only connection is gone, so nothing that could still succeed is failed).
final class FCMClientPool: Sendable {
    /// One use of a client.
    struct Lease: Sendable {
        let client: HTTPClient
        let slot: Int
        let generation: Int
    }

    private struct State {
        var clients: [HTTPClient?]
        var generations: [Int]
        var cursor = 0
        var isShutDown = false
    }

    private let makeClient: @Sendable () -> HTTPClient
    private let state: Mutex<State>

    init(connections: Int, makeClient: @escaping @Sendable () -> HTTPClient) {
        let count = max(1, connections)
        self.makeClient = makeClient
        self.state = Mutex(State(clients: Array(repeating: nil, count: count), generations: Array(repeating: 0, count: count)))
    }

    /// The next client, round robin, created on first use; `nil` once shut down.
    func lease() -> Lease? {
        state.withLock { state in
            guard !state.isShutDown else { return nil }
            let slot = state.cursor % state.clients.count
            state.cursor = slot + 1
            let client = state.clients[slot] ?? makeClient()
            state.clients[slot] = client
            return Lease(client: client, slot: slot, generation: state.generations[slot])
        }
    }

    /// Drops the lease's client (unless another request already did), so that its slot gets a new one.
    func replace(_ lease: Lease) async {
        let old: HTTPClient? = state.withLock { state in
            guard !state.isShutDown, state.generations[lease.slot] == lease.generation else { return nil }
            state.generations[lease.slot] += 1
            defer { state.clients[lease.slot] = nil }
            return state.clients[lease.slot]
        }
        try? await old?.shutdown()
    }

    /// Shuts every client down; later leases are `nil`.
    func shutdown() async throws {
        let clients: [HTTPClient] = state.withLock { state in
            state.isShutDown = true
            defer { state.clients = state.clients.map { _ in nil } }
            return state.clients.compactMap { $0 }
        }
        var firstError: (any Error)?
        for client in clients {
            do { try await client.shutdown() } catch { firstError = firstError ?? error }
        }
        if let firstError { throw firstError }
    }
}
