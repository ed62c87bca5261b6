import ArgumentParser
import HeraldCore

/// `herald send`: sends a notification through `POST /api/push/notify`; with an end-to-end key (`--e2e-key` or
/// `HERALD_E2E_KEY`) it seals the title and body into a `pw1` envelope and sends placeholder text in the clear.
struct Send: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Send a notification through a Herald server's /api/push/notify.")

    @Option(help: "The Herald server, e.g. http://localhost:8080.") var server: String
    @Option(name: .customLong("user-id"), help: "The device's USER_ID, or a topic id (tp_…) to send to every member of the topic.")
    var userID: String
    @Option(help: "The title.") var title: String
    @Option(help: "The body.") var body: String
    @Option(name: .customLong("notification-id"), help: "A collapse id: a later notification with the same id replaces this one.")
    var notificationID: String?
    @Option(name: .customLong("snapshot-type"), help: "live, frigate_event, frigate_review or url.") var snapshotType: String?
    @Option(name: .customLong("snapshot-id"), help: "The Frigate event or review id (snapshot).") var snapshotID: String?
    @Option(name: .customLong("snapshot-url"), help: "The image URL (snapshot type url).") var snapshotURL: String?
    @Option(name: .customLong("open-type"), help: "live, frigate_event or frigate_review.") var openType: String?
    @Option(name: .customLong("camera-name"), help: "The camera to open live.") var cameraName: String?
    @Option(name: .customLong("camera-id"), help: "The camera id to open live.") var cameraID: String?
    @Option(name: .customLong("open-id"), help: "The Frigate event or review id to open.") var openID: String?
    @Flag(help: "Print the server's JSON answer.") var json = false
    @OptionGroup var e2e: E2EKeyOption
    @Option(help: "With an end-to-end key: a subtitle, sealed with the title and body.") var subtitle: String?
    @Option(help: "With an end-to-end key: what a tap opens, sealed with the title and body.") var url: String?
    @Option(name: .customLong("placeholder-title"), help: "With an end-to-end key: the title a device without the key shows.")
    var placeholderTitle = "Encrypted notification"
    @Option(name: .customLong("placeholder-body"), help: "With an end-to-end key: the body a device without the key shows.")
    var placeholderBody = "Open it on a device that holds the key."

    func run() async throws {
        var request: JSONObject = ["user_id": .string(userID), "title": .string(title), "body": .string(body)]
        // End-to-end (docs/e2e.md): the real title and body travel sealed; the server sees the placeholder.
        if let key = try e2e.optional() {
            let envelope = try E2EKeyOption.seal(E2EMessage(title: title, subtitle: subtitle, body: body, url: url), with: key)
            request["encrypted"] = .string(envelope.text)
            request["title"] = .string(placeholderTitle)
            request["body"] = .string(placeholderBody)
        } else if subtitle != nil || url != nil {
            throw ClientFailure("--subtitle and --url travel sealed only: give --e2e-key (or HERALD_E2E_KEY)")
        }
        if let notificationID { request["notification_id"] = .string(notificationID) }
        if let snapshotType {
            var snapshot: JSONObject = ["type": .string(snapshotType)]
            if let snapshotID { snapshot["id"] = .string(snapshotID) }
            if let snapshotURL { snapshot["url"] = .string(snapshotURL) }
            request["snapshot"] = .object(snapshot)
        }
        if let openType {
            var open: JSONObject = ["type": .string(openType)]
            if let cameraName { open["camera_name"] = .string(cameraName) }
            if let cameraID { open["camera_id"] = .string(cameraID) }
            if let openID { open["id"] = .string(openID) }
            request["open"] = .object(open)
        }
        let answer = try await ServerClient(server).post("api/push/notify", request)
        if json {
            HeraldCLI.printJSON(answer)
            return
        }
        if let delivery = answer["delivery"]?.stringValue {  // a topic id: one line per member (docs/api.md, "Topics")
            print("delivery: \(delivery)")
            if case .array(let members)? = answer["members"] {
                for member in members.compactMap(\.objectValue) {
                    var line = "member \(member["member_id"]?.stringValue ?? "?"): \(member["delivery"]?.stringValue ?? "?")"
                    if let id = member["id"]?.stringValue { line += " \(id)" }
                    if let reason = member["reason"]?.stringValue { line += " (\(reason))" }
                    print(line)
                }
            }
            return
        }
        var line = "\(answer["status"]?.stringValue ?? "accepted") \(answer["id"]?.stringValue ?? "")"
        if answer["truncated"] == true { line += " (body shortened to fit APNs' 4 KB)" }
        print(line)
        if let warning = answer["warning"]?.stringValue { print("warning: \(warning)") }
    }
}
