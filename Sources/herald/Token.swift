import ArgumentParser
import Foundation
import HeraldCore
import HeraldServer
import HeraldStore

/// `herald token create|list|revoke`: an operator's view of a device's API tokens, straight in the local store.
struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token", abstract: "Create, list and revoke the API tokens of a device (in the local store).",
        subcommands: [Create.self, List.self, Revoke.self, Secret.self])

    /// The options every `herald token` subcommand takes.
    struct DeviceOptions: ParsableArguments {
        @Option(name: .long, help: "A YAML or JSON configuration file; environment variables override it.")
        var config: String?

        @Option(name: .customLong("user-id"), help: "The device's USER_ID (64 hexadecimal characters).")
        var userID: String
    }

    /// `herald token create --user-id … --name …`: prints the new token (on standard output, alone) once.
    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create an API token; it is printed once and not stored.")

        @OptionGroup var device: DeviceOptions

        @Option(name: .long, help: "A name for the token, unique among the device's active tokens (at most 64 characters).")
        var name: String

        @Option(
            name: .customLong("scope"),
            help: "A scope the token gets: activity:update, activity:manage or notifications (repeat it; all three without).")
        var scopes: [String] = []

        @Option(name: .customLong("slug"), help: "An activity slug, or a prefix ending in *, the token may touch (repeat it; all without).")
        var slugs: [String] = []

        func run() async throws {
            try await withTokens(device) { tokens, device in
                let grants = try APITokenGrants(scopes: scopes.isEmpty ? nil : scopes, slugs: slugs.isEmpty ? nil : slugs)
                let issued = try await tokens.create(name: name, grants: grants, for: device)
                printError("Created API token \"\(issued.token.name)\" (id \(issued.token.id.lowercasedText)); it is not shown again.")
                print(issued.secret)
            }
        }
    }

    /// `herald token list --user-id …`: id, name, creation and last use of each active token.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the device's active API tokens (never their text).")

        @OptionGroup var device: DeviceOptions

        func run() async throws {
            try await withTokens(device) { tokens, device in
                let active = try await tokens.activeTokens(of: device)
                guard !active.isEmpty else {
                    printError("This device has no active API tokens.")
                    return
                }
                print(["ID", "NAME", "CREATED", "LAST USED", "SCOPES", "SLUGS"].joined(separator: "\t"))
                for token in active {
                    print(
                        [
                            token.id.lowercasedText, token.name, token.createdAt.iso8601WithMilliseconds,
                            token.lastUsedAt?.iso8601WithMilliseconds ?? "never",
                            token.grants.scopes.sorted().map(\.rawValue).joined(separator: ","),
                            token.grants.slugPatterns.isEmpty ? "*" : token.grants.slugPatterns.joined(separator: ","),
                        ].joined(separator: "\t"))
                }
            }
        }
    }

    /// `herald token revoke --user-id … <id or name>`.
    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke one of the device's API tokens by id or name.")

        @OptionGroup var device: DeviceOptions

        @Argument(help: "The token's id or name.")
        var token: String

        func run() async throws {
            try await withTokens(device) { tokens, device in
                let revoked = try await tokens.revoke(token, of: device)
                print("Revoked API token \"\(revoked.name)\" (id \(revoked.id.lowercasedText)).")
            }
        }
    }
}

extension Token {
    /// `herald token secret --user-id … <name or id>`: the token's callback signing secret, `whsec_…` (docs/api.md,
    /// "Callbacks"), derived from what the store keeps of the token (the SHA-256 of its text): the token itself is not
    /// needed.
    struct Secret: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the secret that signs an active API token's callbacks (whsec_…, for a Standard Webhooks library).")

        @OptionGroup var device: DeviceOptions

        @Argument(help: "The token's name or id.")
        var token: String

        func run() async throws {
            try await withTokens(device) { tokens, device in
                let active = try await tokens.activeTokens(of: device)
                guard let found = active.first(where: { $0.id.lowercasedText == token.lowercased() }) ?? active.first(where: { $0.name == token }),
                    let secret = CallbackSigning.secret(tokenHash: found.tokenHash)
                else { throw TokenCommandFailure("herald: this device has no active API token \"\(token)\".") }
                print(CallbackSigning.displayed(secret))
            }
        }
    }
}

/// Opens the configured store, finds the device of `options.userID`, runs `body` and closes the store.
/// Refusals are printed as one line (exit status 1).
private func withTokens(
    _ options: Token.DeviceOptions, _ body: (APITokenManager, Device) async throws -> Void
) async throws {
    let configuration = try loadConfiguration(file: options.config)
    guard let userID = UserID(options.userID) else {
        throw TokenCommandFailure("herald: --user-id must be the device's USER_ID: 64 hexadecimal characters.")
    }
    let store: any HeraldStore
    do {
        store = try await StoreFactory.open(configuration.databaseURL)
    } catch {
        throw StartupFailure(error)
    }
    let outcome: Result<Void, any Error>
    do {
        guard let device = try await store.device(userID: userID) else {
            throw TokenCommandFailure("herald: no device is registered under this USER_ID in \(StoreFactory.displayed(configuration.databaseURL)).")
        }
        try await body(APITokenManager(store: store), device)
        outcome = .success(())
    } catch let error as APITokenError {
        outcome = .failure(TokenCommandFailure("herald: \(error)"))
    } catch {
        outcome = .failure(error)
    }
    try? await store.close()
    try outcome.get()
}

/// A refusal printed as one line, exit status 1.
private struct TokenCommandFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

private func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
