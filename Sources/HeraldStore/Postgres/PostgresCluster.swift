import Foundation
import HeraldCore
import Logging
import PostgresNIO
import Synchronization

/// The instances on one PostgreSQL database, told about each other through `LISTEN`/`NOTIFY` on one channel per
/// schema (``PostgresStore/cluster``).
///
/// - **Where clients are.** An instance records each device with a WebSocket client in `websocket_presence` and says
///   so on the channel; every instance keeps the whole map in memory, so a delivery asks it for nothing. Each instance
///   says it is alive every ``heartbeat``; one not heard from for ``presenceTimeout`` (it crashed) counts as having
///   no clients. The table is read again whenever the listening connection (re)starts, messages missed meanwhile
///   included.
/// - **Messages** (``ClusterMessage``): notifications handed to the instance with the client, confirmations that
///   landed elsewhere.
/// - **Device caches.** Every write to a device is announced; each store on the database (a *member*: one per
///   process, heard from at start and every ``heartbeat``) drops the device from its cache (``DeviceCache``) and
///   acknowledges, and the write returns once every live member did. A member drops its whole cache when its listening
///   connection restarts.
///
/// A notification is delivered by PostgreSQL to every listening connection when the transaction that sent it
/// commits; a message is at most 8,000 bytes (these are about 150).
final class PostgresCluster: Cluster {
    /// How often an instance says it is alive.
    static let heartbeat: Duration = .seconds(5)
    /// An instance not heard from for this long has no clients as far as the others are concerned.
    static let presenceTimeout: Duration = .seconds(15)

    /// What goes over the channel.
    private enum Envelope: Codable {
        case message(ClusterMessage)
        case connected(deviceID: Device.ID, instance: String)
        case disconnected(deviceID: Device.ID, instance: String)
        case alive(instance: String)
        case left(instance: String)
        /// `echo`: the sender's id for it; every other member acknowledges it once its cache is emptied.
        case devicesChanged([Device.ID], echo: UUID, from: UUID)
        case acknowledged(echo: UUID, member: UUID)
        /// A store on the database (a process) is alive; sent at start, every ``heartbeat``, and in answer to a member
        /// not heard of before.
        case member(UUID)
        case memberLeft(UUID)
    }

    /// A device write waiting until every member has emptied its cache of the device.
    private struct Acknowledgement {
        var waiting: Set<UUID>
        var heardOwnEcho = false
        let continuation: CheckedContinuation<Void, Never>
        var isComplete: Bool { heardOwnEcho && waiting.isEmpty }
    }

    private struct State {
        /// Instances with a client of each device.
        var clients: [Device.ID: Set<String>] = [:]
        /// When each instance was last heard from.
        var heard: [String: ContinuousClock.Instant] = [:]
        /// The instances this process speaks for (those that recorded a client), kept alive by its heartbeat.
        var own: Set<String> = []
        /// The other stores on the database (processes), by when each was last heard from.
        var members: [UUID: ContinuousClock.Instant] = [:]
        /// Device writes of this store waiting for acknowledgements, by echo id.
        var acknowledgements: [UUID: Acknowledgement] = [:]
    }

    let messages: AsyncStream<ClusterMessage>
    private let inbox: AsyncStream<ClusterMessage>.Continuation
    private let client: PostgresClient
    private let devices: DeviceCache
    private let logger: Logger
    private let state = Mutex(State())
    private let channelName: Mutex<String>
    /// The `LISTEN`/`NOTIFY` channel (set by ``start(channel:)``).
    var channel: String { channelName.withLock { $0 } }
    private let tasks = Mutex<[Task<Void, Never>]>([])
    /// This store's id among the members.
    private let memberID = UUID()

    init(client: PostgresClient, devices: DeviceCache, logger: Logger) {
        self.client = client
        channelName = Mutex("herald")
        self.devices = devices
        self.logger = logger
        (messages, inbox) = AsyncStream.makeStream(of: ClusterMessage.self)
    }

    /// Starts listening on `channel` (and the heartbeat); returns once the channel is listened to and the map read, or
    /// throws what the first attempt failed with.
    func start(channel: String) async throws {
        channelName.withLock { $0 = channel }
        let (firstStart, started) = AsyncStream.makeStream(of: Result<Void, any Error>.self)
        let listener = Task { await self.listen(reportingFirstStart: started) }
        let heartbeat = Task { await self.beat() }
        tasks.withLock { $0 = [listener, heartbeat] }
        for await result in firstStart {
            try result.get()
            return
        }
    }

    /// Stops listening and beating.
    func stop() async {
        try? await announce(.memberLeft(memberID))
        let running = tasks.withLock { tasks in
            defer { tasks = [] }
            return tasks
        }
        for task in running { task.cancel() }
        for task in running { await task.value }
        inbox.finish()
    }

    // MARK: Cluster

    func instance(connectedTo deviceID: Device.ID, besides instance: String) -> String? {
        let now = ContinuousClock.now
        return state.withLock { state in
            state.clients[deviceID]?.first { other in
                other != instance && state.heard[other].map { now - $0 < Self.presenceTimeout } == true
            }
        }
    }

    func connected(_ deviceID: Device.ID, on instance: String) async throws {
        _ = state.withLock { $0.own.insert(instance) }
        try await client.query(
            """
            INSERT INTO websocket_presence (device_id, instance_id, heard_at)
            VALUES (\(deviceID), \(instance), extract(epoch FROM now()))
            ON CONFLICT (device_id, instance_id) DO UPDATE SET heard_at = excluded.heard_at
            """)
        try await announce(.connected(deviceID: deviceID, instance: instance))
    }

    func disconnected(_ deviceID: Device.ID, on instance: String) async throws {
        try await client.query("DELETE FROM websocket_presence WHERE device_id = \(deviceID) AND instance_id = \(instance)")
        try await announce(.disconnected(deviceID: deviceID, instance: instance))
    }

    func leave(_ instance: String) async throws {
        _ = state.withLock { $0.own.remove(instance) }
        try await client.query("DELETE FROM websocket_presence WHERE instance_id = \(instance)")
        try await announce(.left(instance: instance))
    }

    func send(_ message: ClusterMessage) async throws {
        try await announce(.message(message))
    }

    /// Tells every member (every store on the database, in every instance) that these devices were written, and
    /// returns once each live member acknowledged that it dropped them from its cache (or after ``acknowledgementWait``,
    /// for a member that died without saying so). A request that wrote a device is answered after that, so the next
    /// request, on whatever instance, reads the device as written.
    func devicesChanged(_ ids: [Device.ID]) async {
        guard !ids.isEmpty else { return }
        // A message is at most 8,000 bytes: 100 ids (37 bytes each in JSON) at a time.
        for start in stride(from: 0, to: ids.count, by: 100) {
            let echo = UUID()
            let now = ContinuousClock.now
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                state.withLock { state in
                    let live = state.members.filter { now - $0.value < Self.presenceTimeout }.keys
                    state.acknowledgements[echo] = Acknowledgement(waiting: Set(live), continuation: continuation)
                }
                Task {
                    do {
                        try await announce(.devicesChanged(Array(ids[start..<min(start + 100, ids.count)]), echo: echo, from: memberID))
                        try? await Task.sleep(for: Self.acknowledgementWait)
                    } catch {
                        // The cache entries of other instances expire on their own (DeviceCache's time to live).
                        logger.warning("Announcing device changes to other instances failed", metadata: ["error": "\(error)"])
                    }
                    state.withLock { $0.acknowledgements.removeValue(forKey: echo) }?.continuation.resume()
                }
            }
        }
    }

    /// The longest a device write waits for the other members' acknowledgements.
    static let acknowledgementWait: Duration = .seconds(2)

    /// Records what a member acknowledged (or that this store heard its own message), and resumes the write when
    /// nothing else is awaited.
    private func acknowledge(_ echo: UUID, member: UUID?) {
        let complete = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard var acknowledgement = state.acknowledgements[echo] else { return nil }
            if let member { acknowledgement.waiting.remove(member) } else { acknowledgement.heardOwnEcho = true }
            guard acknowledgement.isComplete else {
                state.acknowledgements[echo] = acknowledgement
                return nil
            }
            state.acknowledgements[echo] = nil
            return acknowledgement.continuation
        }
        complete?.resume()
    }

    private func announce(_ envelope: Envelope) async throws {
        let payload = String(decoding: try JSONEncoder().encode(envelope), as: UTF8.self)
        try await client.query("SELECT pg_notify(\(channel), \(payload))")
    }

    // MARK: Listening

    private func listen(reportingFirstStart started: AsyncStream<Result<Void, any Error>>.Continuation) async {
        var isFirst = true
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: self.channel) { notifications in
                        // Listening: whatever happens from now on arrives. What happened before is in the table.
                        try await self.resynchronize()
                        try await self.announce(.member(self.memberID))
                        if isFirst {
                            isFirst = false
                            started.yield(.success(()))
                        }
                        for try await notification in notifications { self.receive(notification.payload) }
                    }
                }
            } catch {
                if Task.isCancelled { break }
                if isFirst {
                    isFirst = false
                    started.yield(.failure(error))
                }
                logger.error(
                    "Listening to the other instances failed; trying again in a second",
                    metadata: ["error": "\(PostgresStore.describe(error))"])
            }
            devices.forgetAll()
            try? await Task.sleep(for: .seconds(1))
        }
        started.finish()
    }

    /// Reads who has which clients from the table, and drops every cached device (changes may have been missed).
    private func resynchronize() async throws {
        let timeout = Double(Self.presenceTimeout.components.seconds)
        let rows = try await client.query(
            """
            SELECT device_id, instance_id FROM websocket_presence
            WHERE heard_at > extract(epoch FROM now()) - \(timeout)
            """
        ).collect()
        var clients: [Device.ID: Set<String>] = [:]
        for row in rows {
            let (deviceID, instance) = try row.decode((UUID, String).self)
            clients[deviceID, default: []].insert(instance)
        }
        let now = ContinuousClock.now
        state.withLock { state in
            state.clients = clients
            state.heard = Dictionary(clients.values.flatMap { $0 }.map { ($0, now) }, uniquingKeysWith: { first, _ in first })
        }
        devices.forgetAll()
    }

    private func receive(_ payload: String) {
        guard let envelope = try? JSONDecoder().decode(Envelope.self, from: Data(payload.utf8)) else {
            logger.warning("Ignored a message on the instances' channel that is not Herald's", metadata: ["channel": "\(channel)"])
            return
        }
        let now = ContinuousClock.now
        switch envelope {
        case .message(let message):
            inbox.yield(message)
        case .connected(let deviceID, let instance):
            state.withLock { state in
                state.clients[deviceID, default: []].insert(instance)
                state.heard[instance] = now
            }
        case .disconnected(let deviceID, let instance):
            state.withLock { state in
                state.clients[deviceID]?.remove(instance)
                if state.clients[deviceID]?.isEmpty == true { state.clients[deviceID] = nil }
            }
        case .alive(let instance):
            state.withLock { $0.heard[instance] = now }
        case .left(let instance):
            state.withLock { state in
                state.heard[instance] = nil
                for (deviceID, instances) in state.clients where instances.contains(instance) {
                    state.clients[deviceID]?.remove(instance)
                    if state.clients[deviceID]?.isEmpty == true { state.clients[deviceID] = nil }
                }
            }
        case .devicesChanged(let ids, let echo, let sender):
            for id in ids { devices.invalidate(id: id) }
            if sender == memberID {
                acknowledge(echo, member: nil)
            } else {
                Task { try? await announce(.acknowledged(echo: echo, member: memberID)) }
            }
        case .acknowledged(let echo, let member):
            acknowledge(echo, member: member)
        case .member(let member):
            guard member != memberID else { return }
            let isNew = state.withLock { $0.members.updateValue(now, forKey: member) == nil }
            // A member that just started does not know this one yet.
            if isNew { Task { try? await announce(.member(memberID)) } }
        case .memberLeft(let member):
            let waits = state.withLock { state -> [UUID] in
                state.members[member] = nil
                return state.acknowledgements.filter { $0.value.waiting.contains(member) }.map(\.key)
            }
            for echo in waits { acknowledge(echo, member: member) }
        }
    }

    // MARK: Heartbeat

    /// Every ``heartbeat``: this store says it is alive, and the instances of this process renew their records.
    private func beat() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: Self.heartbeat)
            guard !Task.isCancelled else { return }
            try? await announce(.member(memberID))
            for instance in state.withLock({ $0.own }) {
                do {
                    try await client.query(
                        "UPDATE websocket_presence SET heard_at = extract(epoch FROM now()) WHERE instance_id = \(instance)")
                    try await announce(.alive(instance: instance))
                } catch {
                    logger.warning("Telling the other instances this one is alive failed", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}
