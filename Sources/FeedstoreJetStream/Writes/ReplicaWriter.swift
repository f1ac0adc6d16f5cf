@_spi(Replication) import Feedstore
import Foundation
import Logging

/// Writes from a replica's machine: sends a transaction's writes to the stream's primary (a
/// ``JournalShipper`` with `acceptWrites`), and returns once the local replica has applied the
/// commit that holds them, so the caller reads its own write at once.
///
/// - Each call is one request with an id (a new UUID unless given), applied by the primary in
///   one transaction, at most once: a request sent again with the same id gets its first answer.
/// - A request that gets no answer within ``attemptTimeout`` is sent again with the same id,
///   until the call's timeout; then ``JetStreamError/writeOutcomeUnknown(stream:request:reason:)``
///   says it may have been applied, and a retry with the same id is safe.
/// - Refusals are the ``FeedstoreError``s of a local write by name (a unique violation, a
///   failed precondition, a value of the wrong kind, an unknown entity), and nothing is written.
/// - Read-your-writes needs the replica's follower to run. In this process (the same `Store`
///   path), the follower's commit wakes the call at once; a follower in another process is
///   looked for every 5 ms.
public final class ReplicaWriter: @unchecked Sendable {
    /// The stream whose primary applies the writes.
    public let stream: String
    /// The replica that must have applied a write before a call returns.
    public let replica: Store
    /// How long one attempt waits for the primary's answer before the request is sent again.
    public let attemptTimeout: Duration

    private let connection: NATSConnection
    private let subject: String
    private let inbox: String
    private var subscription: NATSCallbackSubscription?
    private let answers = PendingAnswers()
    private let progress: ReplicaProgress
    private let metrics: ReplicationMetrics
    private let logger: Logger

    /// Connects to the NATS server that carries `stream`.
    /// - Parameters:
    ///   - replica: the local replica (open for reading is enough), followed by a
    ///     ``ReplicaFollower`` in this process or another.
    ///   - connection: the NATS server and its credentials (the replica's user needs to publish
    ///     on `feedstore-writes.<stream>` and to receive on `_INBOX.>`).
    ///   - stream: the stream the replica follows.
    ///   - attemptTimeout: how long one attempt waits for the primary's answer.
    ///   - logger: where the writer logs.
    public init(replica: Store, connection: JetStreamConnection, stream: String, attemptTimeout: Duration = .seconds(1),
                logger: Logger = Logger(label: "feedstore.jetstream")) throws
    {
        self.replica = replica
        self.stream = stream
        self.attemptTimeout = attemptTimeout
        self.logger = logger
        metrics = ReplicationMetrics(stream: stream)
        subject = WriteMessages.subject(stream: stream)
        self.connection = try NATSConnection(connection)
        inbox = NATSConnection.newInbox()
        progress = ReplicaProgress(replica: replica)
        let answers = answers
        subscription = try self.connection.subscribe(subject: inbox + ".*") { message, noResponders in
            answers.answer(message, noResponders: noResponders)
        }
    }

    deinit {
        subscription?.cancel()
        progress.stop()
    }

    /// A new request id: a version 7 UUID (RFC 9562), its leading 48 bits the time in
    /// milliseconds and the rest random. The primary files the ids it remembers in order, so
    /// ids that grow with time land together at the end of that list instead of on a page of
    /// their own each: a forwarded write dirties fewer pages on the primary and on every replica.
    public static func newRequestID() -> String {
        var bytes = withUnsafeBytes(of: UUID().uuid) { Array($0) }
        let milliseconds = UInt64(max(0, Date().timeIntervalSince1970 * 1_000))
        for i in 0..<6 { bytes[i] = UInt8(truncatingIfNeeded: milliseconds >> (8 * (5 - i))) }
        bytes[6] = 0x70 | (bytes[6] & 0x0F)  // version 7
        bytes[8] = 0x80 | (bytes[8] & 0x3F)  // the RFC's variant
        let uuid = bytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }
        return UUID(uuid: uuid).uuidString
    }

    /// Sends `writes` to the primary as one transaction, and waits until the replica has
    /// applied the commit that holds them. Runs on a thread of its own, so that its waits hold
    /// none of the threads Swift concurrency shares.
    ///
    /// Cancelling the task ends the call at its next step (an attempt waits at most
    /// ``attemptTimeout``) with `CancellationError`, before or after the primary applied the
    /// writes: calling again with the same `requestID` applies them at most once.
    /// - Parameters:
    ///   - writes: the transaction's writes, applied in order.
    ///   - requestID: the request's id; give the one of an earlier call to retry it safely. By
    ///     default a new ``newRequestID()``.
    ///   - timeout: how long the call may take in all.
    /// - Returns: the commit's sequence (the newest commit, when the writes changed nothing).
    /// - Throws: the ``FeedstoreError`` a local write would throw (nothing was written);
    ///   ``JetStreamError/primaryUnreachable(stream:reason:)``,
    ///   ``JetStreamError/writeOutcomeUnknown(stream:request:reason:)``,
    ///   ``JetStreamError/writeNotApplied(stream:request:reason:)``,
    ///   ``JetStreamError/replicaBehind(replica:sequence:applied:)``; `CancellationError`.
    @discardableResult
    public func write(_ writes: [RecordWrite], requestID: String = ReplicaWriter.newRequestID(), timeout: Duration = .seconds(10)) async throws -> UInt64 {
        final class Box: @unchecked Sendable { var sequence: UInt64 = 0 }
        let (writer, box) = (self, Box())
        try await OwnThread.run(name: "feedstore replica writer") { keepGoing in
            box.sequence = try writer.write(writes, requestID: requestID, timeout: timeout, while: keepGoing)
        }
        return box.sequence
    }

    /// ``write(_:requestID:timeout:)`` for callers outside Swift concurrency (tools, threads of
    /// their own): blocks the calling thread.
    @discardableResult
    public func writeBlocking(_ writes: [RecordWrite], requestID: String = ReplicaWriter.newRequestID(), timeout: Duration = .seconds(10)) throws -> UInt64 {
        try write(writes, requestID: requestID, timeout: timeout, while: { true })
    }

    private func write(_ writes: [RecordWrite], requestID: String, timeout: Duration, while keepGoing: () -> Bool) throws -> UInt64 {
        let deadline = ContinuousClock.now + timeout
        let sequence = try forward(writes, requestID: requestID, deadline: deadline, while: keepGoing)
        try progress.waitUntilApplied(sequence, deadline: deadline, while: keepGoing)
        return sequence
    }

    /// Sends the request until an answer says what became of it, or the deadline passes.
    private func forward(_ writes: [RecordWrite], requestID: String, deadline: ContinuousClock.Instant, while keepGoing: () -> Bool) throws -> UInt64 {
        let payload = WriteMessages.encode(WriteMessages.Request(id: requestID, writes: writes))
        // Whether an attempt may have reached the primary: then the outcome is unknown.
        var mayHaveApplied = false
        var lastProblem = "no attempt was made"
        var attempts = 0
        while true {
            guard keepGoing() else { throw CancellationError() }
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else {
                if mayHaveApplied { throw JetStreamError.writeOutcomeUnknown(stream: stream, request: requestID, reason: lastProblem) }
                throw JetStreamError.primaryUnreachable(stream: stream, reason: lastProblem)
            }
            if attempts > 0 { metrics.forwardedRetries.increment() }
            attempts += 1
            switch attempt(payload, timeout: min(attemptTimeout, remaining)) {
            case let .answered(bytes):
                switch try WriteMessages.decodeReply(bytes) {
                case let .applied(sequence, _): return sequence
                case let .refused(refusal): throw refusal.error
                case let .notApplied(reason, retry):
                    guard retry else { throw JetStreamError.writeNotApplied(stream: stream, request: requestID, reason: reason) }
                    lastProblem = reason
                    pause(until: deadline)
                }
            case .noResponders:
                lastProblem = "no primary accepts writes on \(subject)"
                pause(until: deadline)
            case let .notSent(error):
                guard error.isTransient else { throw JetStreamError.writeNotApplied(stream: stream, request: requestID, reason: "\(error)") }
                lastProblem = "\(error)"
                pause(until: deadline)
            case .timedOut:
                mayHaveApplied = true
                lastProblem = "no answer within \(attemptTimeout) after \(attempts) attempts"
                logger.debug("a write request got no answer; sending it again", metadata: ["request": "\(requestID)"])
            }
        }
    }

    /// A short wait before trying again when no primary answers.
    private func pause(until deadline: ContinuousClock.Instant) {
        let remaining = deadline - ContinuousClock.now
        Thread.sleep(forTimeInterval: min(0.05, max(remaining.seconds, 0)))
    }

    private enum Attempt: Sendable {
        case answered([UInt8])
        case noResponders
        case notSent(JetStreamError)
        case timedOut
    }

    /// Sends the request once and waits for its answer, at most `timeout`.
    private func attempt(_ payload: [UInt8], timeout: Duration) -> Attempt {
        let answer = BlockingResult<Attempt>()
        let token = answers.register { answer.set($0) }
        do {
            try connection.publishRequest(subject: subject, reply: "\(inbox).\(token)", data: payload)
        } catch {
            answers.finish(token, with: .notSent(error as? JetStreamError ?? .serverRefused("sending a write request", reason: "\(error)")))
            return answer.wait()
        }
        return answer.wait(timeout: timeout) ?? {
            answers.finish(token, with: .timedOut)
            return answer.wait()
        }()
    }

    /// The requests that wait for an answer, by the token that ends their inbox.
    private final class PendingAnswers: @unchecked Sendable {
        private let lock = NSLock()
        private var next = 0
        private var waiting: [Int: (Attempt) -> Void] = [:]

        func register(_ resume: @escaping (Attempt) -> Void) -> Int {
            lock.withLock {
                next += 1
                waiting[next] = resume
                return next
            }
        }

        func finish(_ token: Int, with attempt: Attempt) {
            lock.withLock { waiting.removeValue(forKey: token) }?(attempt)
        }

        /// An answer on the inbox: the token is the subject's last token.
        func answer(_ message: NATSRequest, noResponders: Bool) {
            guard let token = message.subject.split(separator: ".").last.flatMap({ Int($0) }) else { return }
            finish(token, with: noResponders ? .noResponders : .answered(message.data))
        }
    }
}

/// Waits, for any number of callers, until the replica has applied a commit: one thread reads
/// the replica's state after each of its commits (or every 5 ms, for a follower in another
/// process) and wakes the callers whose commit it holds.
private final class ReplicaProgress: @unchecked Sendable {
    private let replica: Store
    private let condition = NSCondition()
    private var waiters: [(sequence: UInt64, deadline: ContinuousClock.Instant, resume: (UInt64?) -> Void)] = []
    private var stopped = false
    private var thread: Thread?

    init(replica: Store) { self.replica = replica }

    func stop() {
        condition.withLock {
            stopped = true
            condition.broadcast()
        }
    }

    private func applied() -> UInt64 { (try? replica.read { try $0.replicaState()?.originSequence }) ?? 0 }

    /// Returns once the replica has applied `sequence`; throws ``JetStreamError/replicaBehind(replica:sequence:applied:)``
    /// when the deadline passes first.
    func waitUntilApplied(_ sequence: UInt64, deadline: ContinuousClock.Instant, while keepGoing: () -> Bool) throws {
        if applied() >= sequence { return }
        let reached = BlockingResult<UInt64?>()
        condition.withLock {
            waiters.append((sequence, deadline, { reached.set($0) }))
            if thread == nil {
                let thread = Thread { [self] in run() }
                thread.name = "feedstore replica progress"
                thread.start()
                self.thread = thread
            }
            condition.broadcast()
        }
        var answer = reached.wait(timeout: .milliseconds(50))
        while answer == nil {
            guard keepGoing() else { throw CancellationError() }
            answer = reached.wait(timeout: .milliseconds(50))
        }
        guard answer! != nil else { throw JetStreamError.replicaBehind(replica: replica.path, sequence: sequence, applied: applied()) }
    }

    private func run() {
        var seen: UInt64 = 0
        while true {
            let idle = condition.withLock {
                while waiters.isEmpty && !stopped { condition.wait() }
                return stopped
            }
            if idle {
                let left = condition.withLock { defer { waiters = [] }; return waiters }
                for waiter in left { waiter.resume(nil) }
                return
            }
            seen = applied()
            let now = ContinuousClock.now
            let due: [(UInt64?, (UInt64?) -> Void)] = condition.withLock {
                var due: [(UInt64?, (UInt64?) -> Void)] = []
                waiters.removeAll { waiter in
                    if waiter.sequence <= seen { due.append((seen, waiter.resume)); return true }
                    if waiter.deadline <= now { due.append((nil, waiter.resume)); return true }
                    return false
                }
                return due
            }
            for (reached, resume) in due { resume(reached) }
            // A commit of this process rings at once; another process's is read within 5 ms.
            _ = replica.waitForCommit(after: seen, timeout: 0.005)
        }
    }
}

/// A value handed from another thread to a blocked one: the first one set is kept.
private final class BlockingResult<T>: @unchecked Sendable {
    private let condition = NSCondition()
    private var value: T?

    func set(_ value: T) {
        condition.withLock {
            if self.value == nil { self.value = value }
            condition.broadcast()
        }
    }

    func wait() -> T {
        condition.withLock {
            while value == nil { condition.wait() }
            return value!
        }
    }

    /// The value, or nil when none came within `timeout`.
    func wait(timeout: Duration) -> T? {
        let deadline = Date().addingTimeInterval(timeout.seconds)
        return condition.withLock {
            while value == nil { if !condition.wait(until: deadline) { break } }
            return value
        }
    }
}
