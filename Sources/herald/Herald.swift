import ArgumentParser
import HeraldCore
import HeraldProviderKit
import HeraldServer

/// The `herald` command.
@main
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "A self-hosted push-notification gateway for APNs and FCM.",
        version: HeraldVersion.current,
        // `herald apns …`, `herald fcm …`: one command per provider of the composition root's catalog.
        subcommands: [Serve.self, Register.self, Send.self, Listen.self, E2E.self] + providerCatalog.map { $0.module.command }
            + [Limits.self, Token.self]
    )
}
