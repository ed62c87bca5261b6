/// The point of no return of one store commit. A store passes its batch's gate as the last thing before the commit
/// is sent (inside the transaction, after every statement): if the writer gave up on the batch first (its deadline
/// passed), passing throws and the transaction is rolled back, so that nothing a caller was refused for is written
/// later. Once passed, the commit is on its way: the writer can no longer stop it.
///
/// ```swift
/// try await database.write { db in
///     try writeEverything(batch, db)
///     try batch.gate?.pass()  // throws ⇒ rolled back
/// }
/// ```
public final class CommitGate: Sendable, Equatable {
    private let check: @Sendable () throws -> Void
    /// When the writer gives up on the batch, if it knows: a store whose commit is a single statement, sent after the
    /// gate passed (PostgreSQL's `herald_commit_batch`), has the database refuse to write it past this instant, as a
    /// transaction that had not reached its gate by then would be rolled back.
    public let deadline: ContinuousClock.Instant?

    /// `check` throws when the commit must not happen; `deadline`: when the writer gives up on the batch.
    public init(deadline: ContinuousClock.Instant? = nil, _ check: @escaping @Sendable () throws -> Void) {
        self.deadline = deadline
        self.check = check
    }

    /// Throws when the writer gave up on the batch; otherwise the commit may be sent, and can no longer be stopped.
    public func pass() throws {
        try check()
    }

    public static func == (lhs: CommitGate, rhs: CommitGate) -> Bool { lhs === rhs }
}

/// Why a store refused to pass a ``CommitGate``: the batch was given up before its commit.
public struct CommitAbandoned: Error, Sendable, Equatable, CustomStringConvertible {
    public init() {}
    public var description: String { "the batch was given up before its commit (its deadline passed); nothing was written" }
}
