import AsyncHTTPClient
import Synchronization

/// The provider's HTTP client (one HTTP/2 connection per host), replaced when its connection is lost.
///
/// AsyncHTTPClient may not notice at once that a peer closed a connection without GOAWAY, and then queues the next
/// requests for the dead connection until their deadline. After a lost connection the provider therefore takes a fresh
/// client; the old one is shut down (its only connection is gone, so nothing that could still succeed is failed).
final class FCMClientHolder: Sendable {
    private struct State {
        var client: HTTPClient?
        var generation = 0
        var isShutDown = false
    }

    private let makeClient: @Sendable () -> HTTPClient
    private let state = Mutex(State())

    init(makeClient: @escaping @Sendable () -> HTTPClient) {
        self.makeClient = makeClient
    }

    /// The current client and its generation; `nil` once shut down.
    func current() -> (client: HTTPClient, generation: Int)? {
        state.withLock { state in
            guard !state.isShutDown else { return nil }
            if state.client == nil { state.client = makeClient() }
            return state.client.map { ($0, state.generation) }
        }
    }

    /// Drops the client of `generation` (unless another request already did), so the next request gets a new one.
    func replace(generation: Int) async {
        let old: HTTPClient? = state.withLock { state in
            guard state.generation == generation, !state.isShutDown else { return nil }
            state.generation += 1
            defer { state.client = nil }
            return state.client
        }
        try? await old?.shutdown()
    }

    /// Shuts the client down; later calls to ``current()`` return `nil`.
    func shutdown() async throws {
        let client: HTTPClient? = state.withLock { state in
            state.isShutDown = true
            defer { state.client = nil }
            return state.client
        }
        try await client?.shutdown()
    }
}
