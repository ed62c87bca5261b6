import Foundation
import HTTPTypes
import HeraldAPNs
import HeraldCore
import HeraldFCM
import HeraldWebPush
import Testing

@testable import HeraldServer

/// Each dialect validates its buttons and its priority words into HeraldCore's typed ``NotificationAction`` and
/// ``NotificationPriority``; each provider renders its own field from them (issue 38, section 4).
@Suite("Typed actions and priority: dialects map, providers render")
struct TypedActionsAndPriorityTests {
    static let userID = String(repeating: "a", count: 64)

    private func refusal(_ body: () throws -> Void) -> APIError? {
        do {
            try body()
            return nil
        } catch {
            return error as? APIError
        }
    }

    // MARK: POST /notifications

    @Test func aPushWardButtonIsTypedWithEveryFlagAndTheMethod() throws {
        let request = try ActionNotificationRequest([
            "title": "Door", "body": "Open?",
            "actions": [
                ["id": "yes", "title": "Yes"],
                [
                    "id": "call", "title": "Call", "url": "https://ha.local/api/x", "method": "post", "body": "{}", "icon": "bolt",
                    "destructive": true, "authentication_required": true, "text_input": true, "text_input_placeholder": "Why?",
                ],
            ],
        ])
        let draft = request.draft
        #expect(draft.priority == .high)
        #expect(
            draft.content.actions == [
                NotificationAction(id: "yes", title: "Yes", method: .get, foreground: false, destructive: false, authenticationRequired: false),
                NotificationAction(
                    id: "call", title: "Call", icon: "bolt", url: "https://ha.local/api/x", method: .post,
                    headers: ["Content-Type": "application/json"], body: "{}", foreground: false, destructive: true,
                    authenticationRequired: true, textInput: .init(placeholder: "Why?")),
            ])
        #expect(draft.content.actions.map(\.isAnswer) == [true, false])
    }

    @Test func aPushWardButtonsRefusalsAreTheSame() {
        func field(_ action: JSONObject) -> (String?, String?) {
            let error = refusal { _ = try ActionNotificationRequest(["title": "T", "body": "B", "actions": [.object(action)]]) }
            return (error?.field, error?.message)
        }
        #expect(
            field(["id": "a", "title": "A", "method": "BREW"])
                == ("actions[0].method", #"actions[0].method must be one of GET, POST, PUT, PATCH, DELETE, HEAD; got "BREW"."#))
        #expect(field(["id": "a", "title": "A", "text_input_placeholder": "x"]).0 == "actions[0].text_input_placeholder")
        #expect(field(["id": "a", "title": "A", "text_input": true, "foreground": true]).0 == "actions[0].text_input")
        #expect(field(["id": "a", "title": "A", "url": "javascript:alert(1)"]).0 == "actions[0].url")
    }

    // MARK: ntfy

    @Test func ntfysButtonsAreTypedThroughHeraldsRules() throws {
        let actions = try NtfyAction.parse(header: "view, Open, https://home.nest.com/; http, Close, http://ha.lan/close")
        #expect(
            actions.map(\.herald.action) == [
                NotificationAction(
                    id: "view-1", title: "Open", url: "https://home.nest.com/", method: .get, foreground: true, destructive: false,
                    authenticationRequired: false),
                NotificationAction(
                    id: "http-2", title: "Close", url: "http://ha.lan/close", method: .post, foreground: false, destructive: false,
                    authenticationRequired: false),
            ])
    }

    @Test(arguments: [("1", NotificationPriority.normal), ("min", .normal), ("2", .normal), ("3", .high), ("4", .high), ("5", .high), ("urgent", .high)])
    func ntfysPriorityMapsToAPassiveOrAnImmediateAlert(word: String, priority: NotificationPriority) throws {
        let input = SenderRequest(body: Array("Hi".utf8), headers: HTTPFields(), query: ["priority": word])
        #expect(try NtfyMessage(topic: "door", request: input).draft.priority == priority)
    }

    // MARK: Gotify

    @Test func gotifysPriorityMapsToAPassiveOrAnImmediateAlert() throws {
        let priorities = try (0...10).map { try GotifyMessage(json: ["message": "Hi", "priority": .int($0)]).draft.priority }
        #expect(priorities == [.normal, .normal, .normal, .normal] + Array(repeating: .high, count: 7))
        #expect(try GotifyMessage(json: ["message": "Hi"]).draft.priority == .high, "Gotify's default 5 is active")
    }

    // MARK: Home Assistant

    @Test func homeAssistantsAPNsPriorityHeaderNamesOneOfTheThreeLevels() throws {
        let now = Date(timeIntervalSince1970: 1_763_769_600)
        for (text, priority) in [("1", NotificationPriority.low), ("5", .normal), ("10", .high)] {
            var draft = NotificationDraft(content: NotificationContent(body: "x"))
            try HomeAssistantAPNsHeaders.apply(["apns-priority": text], to: &draft, now: now)
            #expect(draft.priority == priority)
        }
        for text in ["0", "2", "7", "11", "ten", "-5", "99999999999999999999"] {
            var draft = NotificationDraft(content: NotificationContent(body: "x"))
            let error = refusal { try HomeAssistantAPNsHeaders.apply(["apns-priority": text], to: &draft, now: now) }
            #expect(error?.field == "data.apns_headers.apns-priority" && error?.message == "data.apns_headers.apns-priority must be 1, 5 or 10.")
        }
        var background = NotificationDraft(pushType: .background, priority: .normal, content: NotificationContent())
        let error = refusal { try HomeAssistantAPNsHeaders.apply(["apns-priority": "10"], to: &background, now: now) }
        #expect(error?.message == "A background push must have apns-priority 5 or 1.")
    }

    @Test func homeAssistantsButtonsForABrowserAreIDTitleAndAWebURL() throws {
        let request = try HomeAssistantRequest([
            "push_token": .string(Self.userID), "message": "Door",
            "data": [
                "actions": [
                    ["action": "OPEN", "title": "Open", "uri": "https://ha.local/lovelace"],
                    ["action": "NAV", "title": "Go", "uri": "homeassistant://navigate/door"], ["title": "No id"], "not an object",
                ]
            ],
        ])
        let draft = HomeAssistantWebPush.draft(for: request, base: NotificationDraft(content: NotificationContent(body: "Door")))
        #expect(
            draft.content.actions == [
                NotificationAction(id: "OPEN", title: "Open", url: "https://ha.local/lovelace"), NotificationAction(id: "NAV", title: "Go"),
            ])
        #expect(draft.content.actions.map(\.json) == [["id": "OPEN", "title": "Open", "url": "https://ha.local/lovelace"], ["id": "NAV", "title": "Go"]])
    }

    // MARK: Providers

    @Test func eachProviderNamesEachPriorityItsOwnWay() {
        #expect(NotificationPriority.allCases.map(APNsRenderer.priorityHeader) == ["1", "5", "10"])
        #expect(NotificationPriority.allCases.map(FCMRenderer.androidPriority) == ["NORMAL", "NORMAL", "HIGH"])
    }

    /// APNs and Web Push send the draft's priority; FCM lowers a passive notification to normal and otherwise sends
    /// `HIGH` (Android shows a notification at once only from a high-priority message).
    @Test(arguments: NotificationPriority.allCases)
    func eachRendererKeepsOrLowersThePriority(priority: NotificationPriority) throws {
        let active = NotificationContent(title: "T", body: "B", level: .active)
        let passive = NotificationContent(title: "T", body: "B", level: .passive)
        #expect(APNsRenderer().render(passive, priority: priority, collapseID: nil).priority == priority)
        #expect(WebPushRenderer().render(passive, priority: priority, collapseID: nil).priority == priority)
        let fcmActive = FCMRenderer().render(active, priority: priority, collapseID: nil)
        #expect(fcmActive.priority == priority && fcmActive.payload["android"]?.objectValue?["priority"] == "HIGH")
        let fcmPassive = FCMRenderer().render(passive, priority: priority, collapseID: nil)
        #expect(fcmPassive.priority == .normal && fcmPassive.payload["android"]?.objectValue?["priority"] == "NORMAL")
        let fitted = try APNsRenderer().fitted(active, priority: priority, collapseID: nil)
        #expect(fitted.priority == priority)
    }

    @Test func everyProviderSendsTheActionsAsTheAppReadsThem() throws {
        let actions = [
            NotificationAction(id: "yes", title: "Yes", method: .get, foreground: false, destructive: false, authenticationRequired: false),
            NotificationAction(id: "open", title: "Open", url: "https://ha.local/lovelace"),
        ]
        let wire = JSONValue.array(actions.map { .object($0.json) })
        let content = NotificationContent(title: "Door", body: "Open?", actions: actions)
        let apns = APNsRenderer().render(content, priority: .high, collapseID: nil).payload
        #expect(apns["actions"] == wire)
        #expect(apns["aps"]?.objectValue?["category"] == .string(APNsRenderer.actionsCategory))
        let fcm = FCMRenderer().render(content, priority: .high, collapseID: nil).payload
        #expect(fcm["data"]?.objectValue?["actions"] == .string(String(decoding: try wire.encoded(), as: UTF8.self)))
        #expect(WebPushRenderer().render(content, priority: .high, collapseID: nil).payload["actions"] == wire)
    }
}
