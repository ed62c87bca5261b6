import HTTPTypes
import HeraldCore
import Testing

@testable import HeraldServer

/// The rules that live in one place: the error codes, and the USER_ID and collapse-id validators.
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

    // MARK: USER_ID

    @Test(arguments: [
        String(repeating: "a", count: 64), String(repeating: "F", count: 64),
        "0123456789abcdefABCDEF" + String(repeating: "0", count: 42),
    ])
    func aUserIDIs64HexCharactersInEitherCase(userID: String) throws {
        #expect(UserIDRule.accepts(userID))
        #expect(try UserIDRule.validated(userID) == userID)
    }

    @Test(arguments: [
        "", "abc", String(repeating: "a", count: 63), String(repeating: "a", count: 65), String(repeating: "g", count: 64),
        String(repeating: "a", count: 62) + "é", " " + String(repeating: "a", count: 63),
    ])
    func anythingElseIsRefusedNamingUserID(userID: String) {
        #expect(!UserIDRule.accepts(userID))
        #expect(throws: APIError.invalidField("user_id", "user_id must be 64 hexadecimal characters.")) {
            try UserIDRule.validated(userID)
        }
    }

    // MARK: Collapse id

    @Test(arguments: ["", "door", String(repeating: "x", count: 64), String(repeating: "é", count: 32)])
    func aCollapseIDOfAtMost64BytesIsTaken(collapseID: String) throws {
        #expect(try CollapseIDRule.validated(collapseID, field: "notification_id") == collapseID)
    }

    @Test func aLongerCollapseIDIsRefusedNamingItsField() {
        #expect(
            throws: APIError.invalidField("data.tag", "data.tag must be at most 64 bytes (it is the APNs collapse id); got 65.")
        ) {
            try CollapseIDRule.validated(String(repeating: "x", count: 65), field: "data.tag")
        }
        // Bytes, not characters: 33 two-byte characters are 66 bytes.
        #expect(throws: APIError.self) {
            try CollapseIDRule.validated(String(repeating: "é", count: 33), field: "notification_id")
        }
    }
}
