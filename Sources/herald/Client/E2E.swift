import ArgumentParser
import Foundation
import HeraldCore

/// `herald e2e`: PushWard's `pw1` end-to-end keys and envelopes (docs/e2e.md).
struct E2E: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "e2e", abstract: "End-to-end encryption (pw1): make a key, seal or open an envelope.",
        subcommands: [Keygen.self, Seal.self, Open.self])

    /// `herald e2e keygen`: a fresh key and its id.
    struct Keygen: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a new end-to-end key (64 hex characters) and its key id. Copy the key to every device that should read.")
        @Flag(help: "Print {\"key\", \"key_id\"} as JSON.") var json = false

        func run() {
            let key = E2EKey.generate()
            if json {
                HeraldCLI.printJSON(["key": .string(key.hex), "key_id": .string(key.keyID)])
            } else {
                print("key:    \(key.hex)")
                print("key id: \(key.keyID)")
            }
        }
    }

    /// `herald e2e seal`: prints the envelope of a message, for a sender that posts it itself (docs/e2e.md).
    struct Seal: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Seal a message and print its pw1 envelope.")
        @OptionGroup var key: E2EKeyOption
        @Option(help: "The real title.") var title: String
        @Option(help: "The real body.") var body: String
        @Option(help: "A subtitle, sealed too.") var subtitle: String?
        @Option(help: "What a tap opens, sealed too.") var url: String?

        func run() throws {
            let key = try self.key.required()
            print(try E2EKeyOption.seal(E2EMessage(title: title, subtitle: subtitle, body: body, url: url), with: key).text)
        }
    }

    /// `herald e2e open`: opens an envelope (an argument, or one per line on standard input).
    struct Open: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Open pw1 envelopes and print what they hold as JSON.")
        @OptionGroup var key: E2EKeyOption
        @Argument(help: "The envelope; without it, one envelope per line on standard input.") var envelope: String?

        func run() throws {
            let key = try self.key.required()
            var texts: [String] = []
            if let envelope {
                texts = [envelope]
            } else {
                while let line = readLine() { texts.append(line) }
            }
            var failed = false
            for text in texts where !text.isEmpty {
                switch E2EKeyOption.open(text, with: key) {
                case .success(let message): HeraldCLI.printJSON(E2EKeyOption.json(message))
                case .failure(let reason):
                    FileHandle.standardError.write(Data("herald: \(reason)\n".utf8))
                    failed = true
                }
            }
            if failed { throw ExitCode.failure }
        }
    }
}

/// `--e2e-key KEY`, or `HERALD_E2E_KEY` in the environment (which keeps the key off the process list).
struct E2EKeyOption: ParsableArguments {
    static let environmentName = "HERALD_E2E_KEY"

    @Option(name: .customLong("e2e-key"), help: "The end-to-end key (64 hex characters); or set HERALD_E2E_KEY.")
    var e2eKey: String?

    /// The key given, if any.
    func optional() throws -> E2EKey? {
        guard let text = e2eKey ?? ProcessInfo.processInfo.environment[Self.environmentName], !text.isEmpty else { return nil }
        do { return try E2EKey(hex: text) } catch { throw ClientFailure("--e2e-key / \(Self.environmentName): \(error.reason)") }
    }

    func required() throws -> E2EKey {
        guard let key = try optional() else { throw ClientFailure("give the key with --e2e-key or \(Self.environmentName)") }
        return key
    }

    static func seal(_ message: E2EMessage, with key: E2EKey) throws -> E2EEnvelope {
        do { return try key.seal(message) } catch { throw ClientFailure(error.reason) }
    }

    /// The message, or the short reason it does not open.
    static func open(_ text: String, with key: E2EKey) -> Result<E2EMessage, Reason> {
        let envelope: E2EEnvelope
        do { envelope = try E2EEnvelope(text) } catch { return .failure(Reason("the envelope \(error.reason)")) }
        do { return .success(try key.open(envelope)) } catch { return .failure(Reason(error.reason)) }
    }

    struct Reason: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static func json(_ message: E2EMessage) -> JSONObject {
        var object: JSONObject = ["title": .string(message.title), "body": .string(message.body)]
        object["subtitle"] = message.subtitle.map(JSONValue.string)
        object["url"] = message.url.map(JSONValue.string)
        return object
    }
}
