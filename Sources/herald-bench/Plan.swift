/// Sizes and durations of a run.
struct Plan: Sendable {
    /// The warm-up (a wrk run of its own) before each measured closed-loop run, and the measured run.
    var warmup: Duration
    var measure: Duration
    /// Connections of the closed-loop load (wrk `-c`) and of the Swift clients (registrations).
    var clients = 64
    /// wrk threads (`-t`).
    var wrkThreads = 2
    /// Devices registered over HTTP on the main instance (APNs), and FCM devices on scenario 1's FCM instance.
    var devices: Int
    /// Scenario 2's rate: the target is at 1,000 requests/s.
    var latencyRate = 1_000.0
    /// Whether `latencyRate` was given on the command line (then it is not lowered when scenario 1 accepted fewer).
    var latencyRateIsFixed = false
    var latencyDuration: Duration
    /// Scenario 2's wrk connections (one wrk thread each): at 1,000/s each sends every 64 ms, far above the 5 ms target,
    /// so the schedule slips only on an answer slower than that.
    var latencyConnections = 64
    /// Scenario 3's wrk connections. Each notify answer waits for its first attempt, so with the double's 50 ms every
    /// request takes at least 50 ms and `n` connections cannot carry more than `n` / 50 ms: 256 capped the load at
    /// 5,120/s, below what Herald accepts at zero delay.
    var multiplexClients = 1_024
    var multiplexDuration: Duration
    var subscribers: Int
    var scaleDevices: Int
    var scaleSmallDevices = 1_000
    var scaleMeasure: Duration
    var scaleRegistrations: Int
    /// Distinct request bodies wrk cycles through in scenario 5 (devices picked at random when the store has more).
    var scaleBodies = 65_536
    /// Notifications pending at the crash in scenario 6.
    var pending: Int
    /// How long scenario 6 waits for the backlog after the restart (the target is 30 s).
    var drainTimeout: Duration

    static let quick = Plan(
        warmup: .seconds(1), measure: .seconds(3), devices: 200, latencyDuration: .seconds(3),
        multiplexDuration: .seconds(3), subscribers: 1_000, scaleDevices: 20_000, scaleMeasure: .seconds(3),
        scaleRegistrations: 300, pending: 2_000, drainTimeout: .seconds(60))

    static let full = Plan(
        warmup: .seconds(3), measure: .seconds(15), devices: 1_000, latencyDuration: .seconds(20),
        multiplexDuration: .seconds(10), subscribers: 10_000, scaleDevices: 1_000_000, scaleMeasure: .seconds(10),
        scaleRegistrations: 2_000, pending: 100_000, drainTimeout: .seconds(120))
}

/// The baselines and earlier figures later scenarios compare with.
struct Baselines: Sendable {
    /// Requests per second of the bare Hummingbird route.
    var bareStack: Double
    /// Resident memory of the idle bare server, bytes.
    var bareIdleRSS: Int
    /// The bare server's user + system CPU per request, milliseconds.
    var bareCPUPerRequest: Double?
    /// Pushes per second the APNs double takes from a bare HTTP/2 client.
    var double: Double
}

struct ScenarioContext: Sendable {
    var baselines: Baselines
    /// Registrations per second on the main instance (empty store), for scenario 5.
    var registrationRate: Double?
    /// Accepted notifications per second in scenario 1, for scenario 2's rate.
    var acceptRate: Double?
    /// Scenario 1's figures (APNs devices, SQLite), for scenario 1's run for FCM devices and scenario 7 (PostgreSQL)
    /// to stand beside.
    var sqlite: AcceptAndDeliverFigures?
}

/// The headline figures of an accept-and-deliver run (scenario 1 on SQLite, scenario 7 on PostgreSQL).
struct AcceptAndDeliverFigures: Sendable {
    /// wrk's 2xx per second.
    var accepted: Double
    /// The double's 200s per second over the same window.
    var delivered: Double
    /// Herald's user + system CPU per delivered notification, milliseconds.
    var heraldCPUPerNotification: Double?
    /// Herald's highest resident memory during the run, bytes.
    var peakRSS: Int = 0
}
