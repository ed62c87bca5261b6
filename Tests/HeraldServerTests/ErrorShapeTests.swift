import HeraldCore
import Testing

@testable import HeraldServer

/// The error bodies of the two shapes, from one refusal, and which shape a request no route took is answered in.
@Suite("Error shapes")
struct ErrorShapeTests {
    @Test func aRequestNoRouteTookIsAnsweredInTheShapeOfTheDialectThatClaimsItsPath() {
        #expect(ErrorShape(unroutedPath: "/api/push/homeassistant") == .homeAssistant)
        #expect(ErrorShape(unroutedPath: "/api/push/homeassistant/nowhere") == .homeAssistant)
        #expect(ErrorShape(unroutedPath: "/api/push/notify") == .standard)
        #expect(ErrorShape(unroutedPath: "/") == .standard)
        #expect(ErrorShape.homeAssistant != .standard)
    }

    @Test func homeAssistantReadsMessageOrErrorMessageAndTheFieldOnlyOnA400() throws {
        let invalid = APIError.invalidField("data.tag", "data.tag is too long.")
        #expect(try body(of: invalid, in: .standard) == #"{"code":"invalid_field","error":"data.tag is too long.","field":"data.tag"}"#)
        #expect(try body(of: invalid, in: .homeAssistant) == #"{"field":"data.tag","message":"data.tag is too long."}"#)

        let unknown = APIError(.unknownPushToken, field: "push_token")
        #expect(try body(of: unknown, in: .homeAssistant).hasPrefix(#"{"errorMessage":"No device is registered"#))
        let limited = APIError(.rateLimited, message: "Too many.", extra: ["errorType": "RateLimited"])
        #expect(try body(of: limited, in: .homeAssistant) == #"{"errorType":"RateLimited","message":"Too many."}"#)
    }

    /// The body's JSON text, as the answer carries it.
    private func body(of error: APIError, in shape: ErrorShape) throws -> String {
        String(decoding: try JSONValue.object(shape.body(error)).encoded(), as: UTF8.self)
    }
}
