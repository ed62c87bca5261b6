import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle

@testable import HummingbirdTesting

/// HummingbirdTesting's `.live` framework with a longer wait for each answer. Its own client gives up on a request after
/// a fixed 20 s (`TestClient.Error.readTimeout`), and a full run on two cores beside a release build once did that to five
/// tests whose servers were only slow: every test starts its own server, and Swift Testing runs them all at once. The
/// rest is Hummingbird's `LiveTestFramework.run`, unchanged: the application under `TestApplication` (which reports its
/// port), one keep-alive connection, a graceful shutdown after the test.
enum PatientLiveTest {
    static let answerWait: Duration = .seconds(180)

    static func run<App: ApplicationProtocol, Value>(
        _ app: App, _ test: @Sendable (any TestClientProtocol) async throws -> Value
    ) async throws -> Value {
        let application = TestApplication(base: app)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            let serviceGroup = ServiceGroup(
                configuration: .init(services: [application], logger: application.logger))
            group.addTask { try await serviceGroup.run() }
            let port = await application.portPromise.wait()
            let client = TestClient(host: "localhost", port: port, configuration: .init(timeout: answerWait))
            client.connect()
            do {
                let value = try await test(Client(client: client))
                try await client.shutdown()
                await serviceGroup.triggerGracefulShutdown()
                return value
            } catch {
                try await client.shutdown()
                await serviceGroup.triggerGracefulShutdown()
                throw error
            }
        }
    }

    struct Client: TestClientProtocol {
        let client: TestClient

        func executeRequest(uri: String, method: HTTPRequest.Method, headers: HTTPFields, body: ByteBuffer?) async throws -> TestResponse {
            var headers = headers
            headers[.connection] = "keep-alive"
            let response = try await client.execute(TestClient.Request(uri, method: method, authority: "localhost", headers: headers, body: body))
            return TestResponse(head: response.head, body: response.body ?? ByteBuffer(), trailerHeaders: response.trailerHeaders)
        }

        var port: Int? { client.port }
    }
}
