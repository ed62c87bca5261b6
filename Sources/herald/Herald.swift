import ArgumentParser

/// The `herald` command.
@main
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "A self-hosted push-notification gateway for APNs.",
        subcommands: [Serve.self, Register.self, Send.self, Listen.self, APNs.self, Limits.self, Token.self]
    )
}
