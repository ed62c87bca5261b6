import ArgumentParser

/// `herald-bench`: Herald end to end, every throughput figure beside a baseline measured in the same run.
///
/// ```sh
/// swift run -c release herald-bench            # the full set, under 10 minutes on 2 cores
/// swift run -c release herald-bench --quick    # the same scenarios, smaller, under a minute
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
