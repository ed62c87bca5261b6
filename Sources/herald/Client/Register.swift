import ArgumentParser
import HeraldCore

/// `herald register`: registers a device and prints its USER_ID and device secret.
struct Register: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Register a device with a Herald server (WebSocket-only without --token) and print its credentials.")

    @Option(help: "The Herald server, e.g. http://localhost:8080.") var server: String
    @Option(help: "An APNs device token (hex), or with --fcm an FCM registration token. Without it the device receives over the WebSocket channel only.")
    var token: String?
    @Flag(help: "The token is an FCM registration token (platform fcm).") var fcm = false
    @Option(help: "production or sandbox (for APNs tokens).") var environment: String = "production"
    @Option(help: "The server's registration token, where it requires one (HERALD_REGISTRATION_TOKEN).")
    var registrationToken: String?
    @Flag(help: "Print one JSON object.") var json = false

    func run() async throws {
        let body: JSONObject =
            switch (token, fcm) {
            case (let token?, true): ["platform": "fcm", "token": .string(token)]
            case (let token?, false): ["token": .string(token), "environment": .string(environment)]
            case (nil, true): throw ValidationError("--fcm needs --token, the FCM registration token")
            case (nil, false): ["platform": "websocket"]
            }
        let headers = registrationToken.map { [("X-Herald-Registration-Token", $0)] } ?? []
        let answer = try await ServerClient(server).post("api/push/register", body, headers: headers)
        if json {
            HeraldCLI.printJSON(answer)
        } else {
            print("user_id:       \(answer["user_id"]?.stringValue ?? "?")")
            print("device_secret: \(answer["device_secret"]?.stringValue ?? "?")")
        }
    }
}
