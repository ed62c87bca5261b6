import ArgumentParser
import HeraldCore

/// The `herald` command.
@main
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "A self-hosted push-notification gateway for APNs and FCM.",
        version: HeraldVersion.current,
        subcommands: [Serve.self, Register.self, Send.self, Listen.self, APNs.self, FCM.self, Limits.self, Token.self]
    )
}
