import Foundation
import HTTPTypes
import Testing

/// The seed's four curl examples, verbatim. Only the host and the token are replaced when they are run.
enum SeedCurlExamples {
    static let overseerr = #"""
        curl -X POST https://api.pushward.app/notifications \
          -H "Authorization: Bearer hlk_YOUR_TOKEN" \
          -H "Content-Type: application/json" \
          -d '{
            "title": "Overseerr",
            "body": "New request: Dune: Part Two (2024)",
            "source": "overseerr",
            "source_display_name": "Overseerr",
            "actions": [
              {
                "id": "approve",
                "title": "Approve",
                "icon": "checkmark.circle",
                "url": "https://overseerr.example.com/api/v1/request/123/approve"
              },
              {
                "id": "deny",
                "title": "Deny",
                "icon": "xmark.circle",
                "destructive": true,
                "url": "https://overseerr.example.com/api/v1/request/123/decline"
              },
              {
                "id": "view",
                "title": "View Details",
                "icon": "arrow.up.right.square",
                "foreground": true,
                "url": "https://overseerr.example.com/request/123"
              }
            ]
          }'
        """#

    static let doorbell = #"""
        curl -X POST https://api.pushward.app/notifications \
          -H "Authorization: Bearer hlk_YOUR_TOKEN" \
          -H "Content-Type: application/json" \
          -d '{
            "title": "Front Door",
            "body": "Someone is at the front door",
            "level": "time-sensitive",
            "actions": [
              {
                "id": "unlock",
                "title": "Unlock",
                "icon": "lock.open",
                "foreground": true,
                "authentication_required": true,
                "url": "https://homeassistant.local/unlock"
              },
              {
                "id": "view",
                "title": "View Camera",
                "icon": "video",
                "foreground": true,
                "url": "https://homeassistant.local/camera"
              },
              {
                "id": "ignore",
                "title": "Ignore",
                "icon": "xmark",
                "destructive": true
              }
            ]
          }'
        """#

    static let deepLink = #"""
        curl -X POST https://api.pushward.app/notifications \
          -H "Authorization: Bearer hlk_YOUR_TOKEN" \
          -H "Content-Type: application/json" \
          -d '{
            "title": "Living room",
            "body": "Motion detected",
            "actions": [
              {
                "id": "open-dashboard",
                "title": "Open dashboard",
                "icon": "house",
                "url": "homeassistant://navigate/lovelace/0"
              }
            ]
          }'
        """#

    static let restAPI = #"""
        curl -X POST https://api.pushward.app/notifications \
          -H "Authorization: Bearer hlk_YOUR_TOKEN" \
          -H "Content-Type: application/json" \
          -d '{
            "title": "Blinds",
            "body": "Open the living room blinds?",
            "actions": [
              {
                "id": "open-blinds",
                "title": "Open",
                "icon": "blinds.horizontal.open",
                "url": "https://homeassistant.local/api/services/cover/open_cover",
                "method": "POST",
                "headers": {
                  "Authorization": "Bearer HA_LONG_LIVED_TOKEN"
                },
                "body": "{\"entity_id\":\"cover.blinds_living_room_left\"}"
              }
            ]
          }'
        """#
}

extension SeedCurlExamples {
    /// Each example with the APNs payload it must produce, byte for byte.
    static let withPayloads: [(command: String, payload: String)] = [
        (
            SeedCurlExamples.overseerr,
            #"{"actions":[{"authentication_required":false,"destructive":false,"foreground":false,"icon":"checkmark.circle","id":"approve","method":"GET","title":"Approve","url":"https://overseerr.example.com/api/v1/request/123/approve"},{"authentication_required":false,"destructive":true,"foreground":false,"icon":"xmark.circle","id":"deny","method":"GET","title":"Deny","url":"https://overseerr.example.com/api/v1/request/123/decline"},{"authentication_required":false,"destructive":false,"foreground":true,"icon":"arrow.up.right.square","id":"view","method":"GET","title":"View Details","url":"https://overseerr.example.com/request/123"}],"aps":{"alert":{"body":"New request: Dune: Part Two (2024)","title":"Overseerr"},"category":"HERALD_ACTIONS","interruption-level":"active","mutable-content":1,"sound":"default","thread-id":"overseerr"},"source":"overseerr","source_display_name":"Overseerr"}"#
        ),
        (
            SeedCurlExamples.doorbell,
            #"{"actions":[{"authentication_required":true,"destructive":false,"foreground":true,"icon":"lock.open","id":"unlock","method":"GET","title":"Unlock","url":"https://homeassistant.local/unlock"},{"authentication_required":false,"destructive":false,"foreground":true,"icon":"video","id":"view","method":"GET","title":"View Camera","url":"https://homeassistant.local/camera"},{"authentication_required":false,"destructive":true,"foreground":false,"icon":"xmark","id":"ignore","method":"GET","title":"Ignore"}],"aps":{"alert":{"body":"Someone is at the front door","title":"Front Door"},"category":"HERALD_ACTIONS","interruption-level":"time-sensitive","mutable-content":1,"sound":"default"}}"#
        ),
        (
            SeedCurlExamples.deepLink,
            #"{"actions":[{"authentication_required":false,"destructive":false,"foreground":false,"icon":"house","id":"open-dashboard","method":"GET","title":"Open dashboard","url":"homeassistant://navigate/lovelace/0"}],"aps":{"alert":{"body":"Motion detected","title":"Living room"},"category":"HERALD_ACTIONS","interruption-level":"active","mutable-content":1,"sound":"default"}}"#
        ),
        (
            SeedCurlExamples.restAPI,
            #"{"actions":[{"authentication_required":false,"body":"{\"entity_id\":\"cover.blinds_living_room_left\"}","destructive":false,"foreground":false,"headers":{"Authorization":"Bearer HA_LONG_LIVED_TOKEN","Content-Type":"application/json"},"icon":"blinds.horizontal.open","id":"open-blinds","method":"POST","title":"Open","url":"https://homeassistant.local/api/services/cover/open_cover"}],"aps":{"alert":{"body":"Open the living room blinds?","title":"Blinds"},"category":"HERALD_ACTIONS","interruption-level":"active","mutable-content":1,"sound":"default"}}"#
        ),
    ]
}

/// The request a `curl -X … URL -H "…" -d '…'` command sends (the subset the seed uses).
struct CurlRequest {
    var method: HTTPRequest.Method
    var path: String
    var headers: HTTPFields
    var body: String

    init(_ command: String, token: String) throws {
        let command = command.replacingOccurrences(of: "hlk_YOUR_TOKEN", with: token)
        let words = command.split(whereSeparator: \.isWhitespace).map(String.init)
        guard words.count > 3, words[0] == "curl", words[1] == "-X", let method = HTTPRequest.Method(words[2]),
            let url = URL(string: words[3])
        else { throw TestFailure("not a curl -X command") }
        self.method = method
        path = url.path
        headers = [:]
        for line in command.split(separator: "\n") {
            let line = line.trimmingCharacters(in: .whitespaces)
            guard line.hasPrefix(#"-H ""#), let close = line.lastIndex(of: "\""), let colon = line.firstIndex(of: ":") else { continue }
            let name = try #require(HTTPField.Name(String(line[line.index(line.startIndex, offsetBy: 4)..<colon])))
            headers[name] = line[line.index(after: colon)..<close].trimmingCharacters(in: .whitespaces)
        }
        guard let open = command.range(of: "-d '"), let close = command.lastIndex(of: "'"), open.upperBound <= close else {
            throw TestFailure("no -d '…' body")
        }
        body = String(command[open.upperBound..<close])
    }
}
