import ArgumentParser

/// `herald-bench`: Herald end to end, every throughput figure beside a baseline measured in the same run with the same
/// load generator (wrk, which must be installed: `apt-get install wrk`).
///
/// ```sh
/// swift run -c release herald-bench            # the full set
/// swift run -c release herald-bench --quick    # the same scenarios, smaller, about a minute
/// swift run -c release herald-bench --json     # results as JSON on standard output
/// ```
///
/// What is measured and how is described in docs/performance.md.
@main
struct HeraldBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-bench",
        abstract: "Benchmark Herald end to end: throughput, latency, memory, store scale and crash recovery.",
        subcommands: [RunBenchmark.self, BareServer.self],
        defaultSubcommand: RunBenchmark.self)
}
