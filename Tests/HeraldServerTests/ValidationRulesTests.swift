import Foundation
import HTTPTypes
import HeraldCore
import HummingbirdWSClient
import NIOCore
import Testing

@testable import HeraldServer

/// The rules that live in one place: the error codes, the USER_ID and collapse-id validators, and the WebSocket
/// channel's message decoding.
@Suite("Validation rules")
struct ValidationRulesTests {
    // MARK: Answers written member by member

    @Test(arguments: [
        QuotaCounters(), QuotaCounters(attempts: 12, successful: 9, errors: 3, total: 12),
        QuotaCounters(attempts: 1_000_000, successful: 149, errors: 0, total: 150),
    ])
    func rateLimitsWrittenMemberByMemberAreTheDictionarysBytes(counters: QuotaCounters) throws {
        let quota = QuotaStatus(counters: counters, maximum: 150, resetsAt: Date(timeIntervalSince1970: 1_795_046_400))
        #expect(SendAnswers.rateLimitsObject(quota).finished() == Array(try SendAnswers.rateLimits(quota).encoded()))

        var body = JSONObjectWriter()
        body.add("id", .string("0195a8f2-1c3e-7000-8000-000000000001"))
        body.add("rateLimits", SendAnswers.rateLimitsObject(quota))
        body.add("status", .string("queued"))
        body.add("truncated", .bool(true))
        body.add("warning", .string("No \"provider\"\n\u{1}; é \\ /"))
        let dictionary: JSONValue = [
            "id": "0195a8f2-1c3e-7000-8000-000000000001", "rateLimits": SendAnswers.rateLimits(quota), "status": "queued",
            "truncated": true, "warning": .string("No \"provider\"\n\u{1}; é \\ /"),
        ]
        #expect(body.finished() == Array(try dictionary.encoded()))
    }

    // MARK: Error codes

    @Test func everyCodeHasItsStatusAndEveryDefaultMessageIsASentence() {
        let webSocketOnly: Set<ErrorCode> = [.invalidFormat, .notSubscribed, .unknownCommand, .tooManySubscribes]
        for code in ErrorCode.allCases {
            // Codes whose status the refusal carries: any other status, PushWard's problems.
            let statusGiven = code == .otherHTTPStatus || code == .pushWardProblem
            #expect((code.status == nil) == (webSocketOnly.contains(code) || statusGiven), "\(code)")
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

    // MARK: WebSocket messages

    private static let userID = String(repeating: "a", count: 64)

    @Test func subscriptionsDecodeUnderBothTypeNames() throws {
        for type in ["push_notification_channel", "mobile_app/push_notification_channel"] {
            let text =
                #"{"id": 3, "type": "\#(type)", "user_id": "\#(Self.userID)", "device_secret": "s", "support_confirm": true}"#
            #expect(
                try WebSocketClientMessage(.text(text), isSubscribed: false)
                    == .subscribe(id: 3, userID: Self.userID, secret: "s", supportsConfirm: true))
        }
        // support_confirm is false unless it is `true`; the USER_ID's form is checked with the credentials, not here.
        for confirm in ["", #", "support_confirm": false"#, #", "support_confirm": "yes""#] {
            let text = #"{"id": 4, "type": "push_notification_channel", "user_id": "abc", "device_secret": "s"\#(confirm)}"#
            #expect(
                try WebSocketClientMessage(.text(text), isSubscribed: true)
                    == .subscribe(id: 4, userID: "abc", secret: "s", supportsConfirm: false))
        }
    }

    @Test func confirmationsDecodeOnASubscribedSocket() throws {
        #expect(
            try WebSocketClientMessage(
                .text(#"{"id": 9, "type": "push_notification_confirm", "confirm_id": "c"}"#), isSubscribed: true)
                == .confirm(id: 9, confirmID: "c"))
        #expect(
            try WebSocketClientMessage(
                .text(#"{"type": "mobile_app/push_notification_confirm", "confirm_id": "c"}"#), isSubscribed: true)
                == .confirm(id: nil, confirmID: "c"))
    }

    /// Each bad message, whether the socket is subscribed, and the refusal.
    private static let badMessages: [(String, Bool, WebSocketErrorResult)] = {
        let credentialsRequired = "user_id and device_secret are required."
        let wholeNumber = "id must be a whole number."
        let channel = "push_notification_channel"
        let confirm = "push_notification_confirm"
        return [
            (#"{"id": 1, "type": "\#(channel)"}"#, false, WebSocketErrorResult(id: 1, .invalidFormat, credentialsRequired)),
            (
                #"{"id": 1, "type": "\#(channel)", "user_id": "a", "device_secret": ""}"#, false,
                WebSocketErrorResult(id: 1, .invalidFormat, credentialsRequired)
            ),
            (
                #"{"id": 1, "type": "\#(channel)", "user_id": 7, "device_secret": "b"}"#, false,
                WebSocketErrorResult(id: 1, .invalidFormat, credentialsRequired)
            ),
            (
                #"{"id": "x", "type": "\#(channel)", "user_id": "a", "device_secret": "b"}"#, false,
                WebSocketErrorResult(id: nil, .invalidFormat, wholeNumber)
            ),
            (
                #"{"id": 1.5, "type": "\#(channel)", "user_id": "a", "device_secret": "b"}"#, false,
                WebSocketErrorResult(id: nil, .invalidFormat, wholeNumber)
            ),
            (#"{"id": 4, "type": "launch_rockets"}"#, true, WebSocketErrorResult(id: 4, .unknownCommand)),
            (#"{"id": 4}"#, true, WebSocketErrorResult(id: 4, .unknownCommand)),
            // Not subscribed is said before a missing confirm_id.
            (#"{"id": 5, "type": "\#(confirm)", "confirm_id": "x"}"#, false, WebSocketErrorResult(id: 5, .notSubscribed)),
            (#"{"id": 5, "type": "\#(confirm)"}"#, false, WebSocketErrorResult(id: 5, .notSubscribed)),
            (#"{"id": 6, "type": "\#(confirm)"}"#, true, WebSocketErrorResult(id: 6, .invalidFormat, "confirm_id is required.")),
            ("not json", true, WebSocketErrorResult(id: nil, .invalidFormat, "Messages must be JSON objects.")),
            (#"[{"id": 1}]"#, true, WebSocketErrorResult(id: nil, .invalidFormat, "Messages must be JSON objects.")),
        ]
    }()

    @Test func badMessagesAreRefusedWithTheirIDAndCode() {
        for (text, isSubscribed, expected) in Self.badMessages {
            #expect(throws: expected, "\(text)") { try WebSocketClientMessage(.text(text), isSubscribed: isSubscribed) }
        }
    }

    @Test func aBinaryFrameIsRefusedAndRefusalsAreHomeAssistantResults() throws {
        let refusal = #expect(throws: WebSocketErrorResult.self) {
            try WebSocketClientMessage(.binary(ByteBuffer(string: "{}")), isSubscribed: false)
        }
        #expect(refusal?.code == .invalidFormat)
        #expect(
            refusal?.json
                == [
                    "id": .null, "type": "result", "success": false,
                    "error": ["code": "invalid_format", "message": "Messages must be JSON objects."],
                ])
        #expect(
            WebSocketErrorResult(id: 2, APIError.wrongDeviceSecret).json.objectValue?["error"]
                == ["code": "wrong_device_secret", "message": "The device secret does not match this USER_ID."])
    }
}
