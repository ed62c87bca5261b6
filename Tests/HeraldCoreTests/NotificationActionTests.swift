import Foundation
import HeraldCore
import Testing

@Suite("Notification action")
struct NotificationActionTests {
    static let full = NotificationAction(
        id: "approve", title: "Approve", icon: "checkmark.circle", url: "https://ha.local/api/approve", method: .post,
        headers: ["Authorization": "Bearer t"], body: #"{"on":true}"#, foreground: false, destructive: true,
        authenticationRequired: true, textInput: .init(placeholder: "Why?", buttonTitle: "Send"))

    @Test func aBareActionIsItsIDAndTitleAlone() {
        #expect(NotificationAction(id: "ok", title: "OK").json == ["id": "ok", "title": "OK"])
    }

    @Test func everyMemberTheActionSaysIsInItsJSON() {
        #expect(
            Self.full.json == [
                "id": "approve", "title": "Approve", "icon": "checkmark.circle", "url": "https://ha.local/api/approve", "method": "POST",
                "headers": ["Authorization": "Bearer t"], "body": #"{"on":true}"#, "foreground": false, "destructive": true,
                "authentication_required": true, "text_input": true, "text_input_placeholder": "Why?", "text_input_button_title": "Send",
            ])
    }

    /// A flag the dialect set to `false` is said (PushWard's apps see every flag); one it left out is not.
    @Test func aFalseFlagIsSaidAndAnAbsentOneIsLeftOut() {
        let said = NotificationAction(id: "a", title: "A", foreground: false, destructive: false, authenticationRequired: false)
        #expect(said.json == ["id": "a", "title": "A", "foreground": false, "destructive": false, "authentication_required": false])
        #expect(NotificationAction(id: "a", title: "A", headers: [:]).json["headers"] == nil, "no headers: no member")
        let bareField = NotificationAction(id: "r", title: "Reply", textInput: .init())
        #expect(bareField.json == ["id": "r", "title": "Reply", "text_input": true])
    }

    @Test func everyMethodIsItsUppercaseName() {
        #expect(NotificationAction.Method.allCases.map(\.rawValue) == ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"])
        for method in NotificationAction.Method.allCases {
            #expect(NotificationAction(id: "m", title: "M", method: method).json["method"] == .string(method.rawValue))
        }
    }

    @Test func anAnswerHasNoURLAndStaysInTheBackground() {
        #expect(NotificationAction(id: "yes", title: "Yes").isAnswer)
        #expect(NotificationAction(id: "yes", title: "Yes", foreground: false).isAnswer)
        #expect(!NotificationAction(id: "open", title: "Open", foreground: true).isAnswer)
        #expect(!NotificationAction(id: "call", title: "Call", url: "https://ha.local/x", foreground: false).isAnswer)
    }

    @Test func theJSONReadsBackAsTheSameAction() {
        let actions = [
            Self.full, NotificationAction(id: "ok", title: "OK"),
            NotificationAction(id: "open", title: "Open", url: "https://example.com", foreground: true),
            NotificationAction(id: "r", title: "Reply", method: .get, textInput: .init(buttonTitle: "Send")),
        ]
        for action in actions { #expect(NotificationAction(json: action.json) == action) }
    }

    @Test func aStoredObjectNoHeraldWroteIsNoAction() {
        let refused: [JSONObject] = [
            ["title": "No id"], ["id": "no-title"], ["id": 1, "title": "T"], ["id": "a", "title": "T", "method": "BREW"],
            ["id": "a", "title": "T", "foreground": "yes"], ["id": "a", "title": "T", "url": 3],
            ["id": "a", "title": "T", "headers": ["X": 1]], ["id": "a", "title": "T", "headers": "X: 1"],
            ["id": "a", "title": "T", "text_input": 1],
        ]
        for object in refused { #expect(NotificationAction(json: object) == nil, "\(object)") }
    }

    @Test func unknownMembersAndNullsAreIgnored() {
        let read = NotificationAction(json: ["id": "a", "title": "T", "colour": "red", "url": .null, "text_input": false])
        #expect(read == NotificationAction(id: "a", title: "T"))
    }

    /// A row's content as the code before typed actions wrote it (`notification.content`, sorted keys): a
    /// `POST /notifications` button with every flag, headers, body and a text field, an ntfy `view` button, a Home
    /// Assistant button for a browser, and a bare one. It reads back typed and is written again byte for byte.
    @Test func aContentRowWrittenBeforeTheTypeReadsBackAndIsWrittenTheSame() throws {
        let text =
            #"{"actions":[{"authentication_required":true,"body":"{\"on\":true}","destructive":false,"foreground":false,"#
            + #""headers":{"Content-Type":"application/json"},"icon":"checkmark.circle","id":"approve","method":"POST","#
            + #""text_input":true,"text_input_placeholder":"Why?","title":"Approve","url":"https://ha.local/api/approve"},"#
            + #"{"authentication_required":false,"destructive":false,"foreground":true,"id":"view-1","method":"GET","#
            + #""title":"Open","url":"https://home.nest.com/"},{"id":"open","title":"Open","url":"https://ha.local/lovelace"},"#
            + #"{"id":"ok","title":"OK"}],"body":"Opened","has_media":true,"level":"time-sensitive","sound":"default","title":"Door"}"#
        let content = try #require(NotificationContent(stored: Data(text.utf8)))
        #expect(content.actions.map(\.id) == ["approve", "view-1", "open", "ok"])
        #expect(content.actions[0].method == .post && content.actions[0].textInput == .init(placeholder: "Why?"))
        #expect(content.actions[0].headers == ["Content-Type": "application/json"] && content.actions[0].authenticationRequired == true)
        #expect(content.actions[1].foreground == true && !content.actions[1].isAnswer)
        #expect(content.actions[2] == NotificationAction(id: "open", title: "Open", url: "https://ha.local/lovelace"))
        #expect(content.actions[3].isAnswer)
        #expect(String(decoding: try content.encoded(), as: UTF8.self) == text)
    }
}
