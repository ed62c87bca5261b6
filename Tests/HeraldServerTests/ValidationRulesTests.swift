import HTTPTypes
import HeraldCore
import Testing

@testable import HeraldServer

/// The rules that live in one place: the error codes.
@Suite("Validation rules")
struct ValidationRulesTests {
    // MARK: Error codes

    @Test func everyCodeHasItsStatusAndEveryDefaultMessageIsASentence() {
        let webSocketOnly: Set<ErrorCode> = [.invalidFormat, .notSubscribed, .unknownCommand]
        for code in ErrorCode.allCases {
            #expect((code.status == nil) == (webSocketOnly.contains(code) || code == .otherHTTPStatus), "\(code)")
            if let message = code.defaultMessage { #expect(!message.isEmpty, "\(code)") }
        }
        #expect(ErrorCode.unknownUser.status == .notFound)
        #expect(ErrorCode.homeAssistantInvalidToken.rawValue == "InvalidToken")
        #expect(APIError(.unknownUser).body == ["error": "No device is registered under this USER_ID.", "code": "unknown_user"])
    }

    @Test func hummingbirdsOwnErrorsKeepTheirCodes() {
        #expect(
            APIError(hummingbirdStatus: .notFound).body == ["error": "There is nothing at this address.", "code": "not_found"])
        #expect(APIError(hummingbirdStatus: .contentTooLarge).code == .bodyTooLarge)
        #expect(
            APIError(hummingbirdStatus: .methodNotAllowed, message: "No.").body == ["error": "No.", "code": "method_not_allowed"])
        let other = APIError(hummingbirdStatus: .unsupportedMediaType)
        #expect(other.code == .otherHTTPStatus)
        #expect(other.status == .unsupportedMediaType)
        #expect(other.body == ["error": "The request failed: Unsupported Media Type.", "code": "http_415"])
    }
}
