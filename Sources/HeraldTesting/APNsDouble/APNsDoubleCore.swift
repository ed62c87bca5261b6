import Foundation
import HeraldCore
import NIOCore
import Synchronization

/// The double's state and decisions, shared by its connections and guarded by one lock.
///
/// The NIO handlers (``DoubleStreamHandler``) only collect a request, ask ``handle(_:)`` what to do and do it.
final class APNsDoubleCore: DoubleRequestHandling {
    static let devicePathPrefix = "/3/device/"

    struct ConnectionState {
        var channel: (any Channel)?
        var teamID: String?
        var firstKeyID: String?
        var currentToken: String?
        var currentTokenIssuedAt = 0
        var currentTokenFirstUsed = Date.distantPast
        var streamsRaised = false
        var openStreams = 0
        var highestAnsweredStreamID = 0
    }

    struct State {
        var keys: [String: APNsDouble.Key] = [:]
        /// Provider tokens already inspected against `keys`, emptied when a key is registered.
        var tokenInspections: [String: ProviderTokenVerifier.Inspection] = [:]
        var topics: Set<String> = []
        var marks: [String: APNsDouble.DeviceTokenMark] = [:]
        var faults = FaultQueue<APNsDouble.Fault>()
        var responseDelay: Duration?
        var requests: [APNsDouble.RecordedRequest] = []
        var events: [APNsDouble.ConnectionEvent] = []
        var connections: [Int: ConnectionState] = [:]
        var nextConnectionID = 1
        var recentRequestsByDeviceToken: [String: [Date]] = [:]
        var isShutDown = false
        var keepsLog = true

        /// Appends to the connection events unless only counters are kept.
        mutating func record(_ event: APNsDouble.ConnectionEvent) {
            if keepsLog { events.append(event) }
        }
    }

    let environment: PushEnvironment
    let options: APNsDouble.Options
    let clock: any WallClock
    let state: Mutex<State>
    private let counterState = Mutex(APNsDouble.Counters())

    init(
        environment: PushEnvironment, keys: [APNsDouble.Key], topics: Set<String>, options: APNsDouble.Options,
        clock: any WallClock
    ) {
        self.environment = environment
        self.options = options
        self.clock = clock
        var initial = State()
        for key in keys { initial.keys[key.keyID] = key }
        initial.topics = topics
        initial.keepsLog = options.activityLog == .full
        self.state = Mutex(initial)
    }

    // MARK: Control

    func register(_ key: APNsDouble.Key) {
        state.withLock { state in
            state.keys[key.keyID] = key
            state.tokenInspections.removeAll()
        }
    }
    func allow(topic: String) { state.withLock { _ = $0.topics.insert(topic) } }
    func inject(_ fault: APNsDouble.Fault, count: Int) { state.withLock { $0.faults.append(fault, count: count) } }
    func clearFaults() { state.withLock { $0.faults.removeAll() } }
    func setResponseDelay(_ delay: Duration?) { state.withLock { $0.responseDelay = delay } }
    func mark(_ deviceToken: String, as mark: APNsDouble.DeviceTokenMark?) {
        state.withLock { $0.marks[deviceToken.lowercased()] = mark }
    }
    func resetLog() {
        state.withLock { state in
            state.requests.removeAll()
            state.events.removeAll()
        }
    }
    var requests: [APNsDouble.RecordedRequest] { state.withLock { $0.requests } }
    var events: [APNsDouble.ConnectionEvent] { state.withLock { $0.events } }
    var counters: APNsDouble.Counters { counterState.withLock { $0 } }

    /// An answer was written: counts it and tells the observer.
    func answerWritten(_ response: DoubleResponse) {
        var status = 0
        var apnsID = ""
        for (name, value) in response.headers {
            if name == ":status" { status = Int(value) ?? 0 } else if name == "apns-id" { apnsID = value }
        }
        counterState.withLock { $0.answers[status, default: 0] += 1 }
        options.answerObserver?(status, apnsID)
    }

    // MARK: Connections

    /// A TCP connection was accepted; returns its id, or `nil` when the double is shutting down.
    func connectionOpened(_ channel: any Channel) -> Int? {
        let now = clock.now()
        return state.withLock { state in
            guard !state.isShutDown else { return nil }
            let id = state.nextConnectionID
            state.nextConnectionID += 1
            state.connections[id] = ConnectionState(channel: channel)
            state.record(.init(connectionID: id, kind: .opened, at: now))
            return id
        }
    }

    func connectionEvent(_ id: Int, _ kind: APNsDouble.ConnectionEvent.Kind) {
        let now = clock.now()
        state.withLock { state in
            state.record(.init(connectionID: id, kind: kind, at: now))
            if kind == .closed { state.connections[id] = nil }
        }
    }

    func streamOpened(on connectionID: Int) {
        state.withLock { $0.connections[connectionID]?.openStreams += 1 }
    }

    func streamClosed(on connectionID: Int) {
        state.withLock { $0.connections[connectionID]?.openStreams -= 1 }
    }

    /// Marks the double as shutting down and returns the open connections to close.
    func beginShutdown() -> [any Channel] {
        state.withLock { state in
            state.isShutDown = true
            return state.connections.values.compactMap(\.channel)
        }
    }

    // MARK: Requests

    /// Validates and records a request and decides the answer.
    func handle(_ request: DoubleRequest) -> DoubleAction {
        let now = clock.now()
        counterState.withLock { $0.requests += 1 }
        return state.withLock { state in
            let verdict = state.validate(request, now: now, environment: environment, options: options)
            var connection = state.connections[request.connectionID] ?? ConnectionState()
            var raiseStreamsTo: Int?
            if verdict.providerTokenIsValid, !connection.streamsRaised {
                connection.streamsRaised = true
                raiseStreamsTo = options.maxConcurrentStreams
                state.record(
                    .init(
                        connectionID: request.connectionID,
                        kind: .settingsSent(maxConcurrentStreams: options.maxConcurrentStreams), at: now))
            }
            let apnsID = verdict.requestAPNsID ?? UUID.random().lowercasedText

            let action: DoubleAction
            let outcome: APNsDouble.Outcome
            var responseAPNsID: String? = apnsID
            if let rejection = verdict.rejection {
                action = .respond(
                    Self.errorResponse(rejection, apnsID: apnsID), raiseStreamsTo: raiseStreamsTo,
                    delay: state.responseDelay)
                outcome = .answered(status: rejection.status, reason: rejection.reason)
            } else if let fault = state.faults.next() {
                switch fault {
                case .respond(let status, let reason):
                    let rejection = Rejection(status: status, reason: reason)
                    action = .respond(
                        Self.errorResponse(rejection, apnsID: apnsID), raiseStreamsTo: raiseStreamsTo,
                        delay: state.responseDelay)
                    outcome = .answered(status: status, reason: reason)
                case .stall:
                    action = .stall(raiseStreamsTo: raiseStreamsTo)
                    outcome = .stalled
                    responseAPNsID = nil
                case .dropConnection:
                    action = .dropConnection
                    outcome = .droppedConnection
                    responseAPNsID = nil
                    state.record(.init(connectionID: request.connectionID, kind: .dropped, at: now))
                case .goAway(let reason):
                    let lastStreamID =
                        connection.highestAnsweredStreamID < request.streamID ? connection.highestAnsweredStreamID : 0
                    let debugData = (try? JSONValue.object(["reason": .string(reason)]).encoded()) ?? Data()
                    action = .goAway(lastStreamID: lastStreamID, debugData: debugData)
                    outcome = .goAway(reason: reason)
                    responseAPNsID = nil
                    state.record(
                        .init(
                            connectionID: request.connectionID,
                            kind: .goAwaySent(lastStreamID: lastStreamID, reason: reason), at: now))
                }
            } else {
                var headers = [(":status", "200"), ("apns-id", apnsID)]
                if environment == .sandbox { headers.append(("apns-unique-id", UUID.random().lowercasedText)) }
                action = .respond(
                    DoubleResponse(headers: headers, body: nil), raiseStreamsTo: raiseStreamsTo, delay: state.responseDelay)
                outcome = .answered(status: 200, reason: nil)
            }
            if case .answered = outcome {
                connection.highestAnsweredStreamID = max(connection.highestAnsweredStreamID, request.streamID)
            }
            if state.connections[request.connectionID] != nil { state.connections[request.connectionID] = connection }

            guard state.keepsLog else { return action }
            state.requests.append(
                APNsDouble.RecordedRequest(
                    sequence: state.requests.count + 1, connectionID: request.connectionID, streamID: request.streamID,
                    receivedAt: now, headers: request.headers, body: request.body, providerToken: verdict.providerToken,
                    providerTokenIsValid: verdict.providerTokenIsValid, outcome: outcome,
                    responseAPNsID: responseAPNsID, warnings: verdict.warnings, openStreams: connection.openStreams))
            return action
        }
    }

    /// An error answer: status, `content-type: application/json`, `apns-id`, `{"reason":…}` (+ `timestamp` for 410).
    static func errorResponse(_ rejection: Rejection, apnsID: String) -> DoubleResponse {
        var body: JSONObject = ["reason": .string(rejection.reason)]
        if let timestamp = rejection.timestamp {
            body["timestamp"] = .int(Int((timestamp.timeIntervalSince1970 * 1_000).rounded(.down)))
        }
        return DoubleResponse(
            headers: [(":status", String(rejection.status)), ("content-type", "application/json"), ("apns-id", apnsID)],
            body: (try? JSONValue.object(body).encoded()) ?? Data())
    }
}

/// A refusal: status, Apple's reason string and, for 410, the time the token became invalid.
struct Rejection: Sendable, Equatable {
    var status: Int
    var reason: String
    var timestamp: Date? = nil
}
