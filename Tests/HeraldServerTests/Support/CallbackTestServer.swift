import Foundation
import HTTPTypes
import HeraldCore
import HeraldServer
import HeraldStore
import HeraldTesting
import HummingbirdTesting
import Testing

/// A TestServer whose callbacks may reach a receiver double on 127.0.0.1 (`HERALD_CALLBACK_ALLOWED_NETWORKS` lists the
/// loopback network, `HERALD_CALLBACK_CA_PATH` the double's CA), with a short poll interval so that a callback due on
/// the test clock goes out at once.
struct CallbackTestServer {
    var server: TestServer
    let receiver: CallbackReceiverDouble

    static func start(
        allowedNetworks: [String] = ["127.0.0.0/8"], clock: TestClock = TestClock(Date()), maximumPerHost: Int = 4, base: TestServer? = nil
    ) async throws -> CallbackTestServer {
        let receiver = try await CallbackReceiverDouble.start()
        var server = try base ?? TestServer(clock: clock)
        server.configuration.callbacks = CallbackConfiguration(
            allowedNetworks: allowedNetworks, trustedCAPath: receiver.caPath, requestTimeout: .seconds(30), maximumPerHost: maximumPerHost,
            pollInterval: .milliseconds(20))
        return CallbackTestServer(server: server, receiver: receiver)
    }

    var clock: TestClock { server.clock }

    func shutdown() async throws { try await receiver.shutdown() }

    /// Enqueues a callback straight into the server's store (as a receipt's end would), signed with `token`'s secret.
    @discardableResult
    func enqueue(
        _ event: CallbackEvent = .acknowledged, to url: String, token: CreatedToken, owner: Registration, data: JSONObject = ["id": "r1"]
    ) async throws -> CallbackDelivery {
        let store = try server.openStore()
        let userID = try #require(UserID(owner.userID))
        let device = try #require(try await store.device(userID: userID))
        let callback = try CallbackDelivery.make(
            event: event, data: data, url: url, deviceID: device.id, tokenID: try #require(UUID(uuidString: token.id)), now: clock.now())
        try await store.enqueueCallback(callback)
        try await store.close()
        return callback
    }

    /// The callback as stored now.
    func stored(_ id: CallbackDelivery.ID) async throws -> CallbackDelivery? {
        let store = try server.openStore()
        defer { Task { try? await store.close() } }
        return try await store.callback(id: id)
    }

    /// Waits until the stored callback satisfies `condition`; returns whether it did.
    func eventuallyStored(_ id: CallbackDelivery.ID, _ condition: @escaping (CallbackDelivery) -> Bool) async throws -> Bool {
        let store = try server.openStore()
        let reached = try await eventually { try await store.callback(id: id).map(condition) ?? false }
        try await store.close()
        return reached
    }

    /// Waits until the receiver took `count` requests in all.
    func eventuallyReceived(_ count: Int) async -> Bool {
        await eventually { receiver.received.count >= count }
    }
}
