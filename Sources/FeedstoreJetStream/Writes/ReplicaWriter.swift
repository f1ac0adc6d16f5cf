@_spi(Replication) import Feedstore
import Foundation
import Logging

/// Writes from a replica's machine: sends a transaction's writes to the stream's primary (a
/// ``JournalShipper`` with `acceptWrites`), and returns once the local replica has applied the
/// commit that holds them, so the caller reads its own write at once.
///
/// - Each call is one request with an id (a new UUID unless given), applied by the primary in
///   one transaction, at most once: a request sent again with the same id gets its first answer.
/// - The call learns of its success from the replica: the commit that applies a request names
///   it, so the replica holds the request once it applies that commit, and the primary sends no
///   reply for it. It replies to the rest (refusals, requests applied before).
/// - A request that the replica does not hold and the primary does not answer within
///   ``attemptTimeout`` is sent again with the same id, until the call's timeout; then
///   ``JetStreamError/writeOutcomeUnknown(stream:request:reason:)`` says it may have been
///   applied, and a retry with the same id is safe.
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
        try connection.checkURL()
        try JetStreamNames.checkStream(stream)
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
    /// applied the commit that holds them. The call holds no thread while it waits: it suspends
    /// until the replica holds the write (or the primary refuses it).
    ///
    /// Cancelling the task ends the call at once with `CancellationError`, before or after the
    /// primary applied the writes: calling again with the same `requestID` applies them at most
    /// once.
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
        let deadline = ContinuousClock.now + timeout
        let payload = WriteMessages.encode(WriteMessages.Request(id: requestID, writes: writes, answeredByStream: true))
        var retries = Retries(stream: stream, requestID: requestID, subject: subject, attemptTimeout: attemptTimeout, metrics: metrics, logger: logger)
        while true {
            try Task.checkCancellation()
            let remaining = try retries.remaining(until: deadline)
            let attempt: Attempt = try await Self.suspended { resume in self.attempt(payload, requestID: requestID, timeout: min(self.attemptTimeout, remaining), resume) }
            switch try retries.next(after: attempt) {
            case let .held(sequence): return sequence
            case let .applied(sequence):
                try await Self.suspended { (resume: @escaping @Sendable (Result<Void, JetStreamError>) -> Void) in
                    self.progress.whenApplied(sequence, deadline: deadline, resume)
                }.get()
                return sequence
            case .again: continue
            case .afterPause: try await Task.sleep(for: retries.pause(until: deadline))
            }
        }
    }

    /// ``write(_:requestID:timeout:)`` for callers outside Swift concurrency (tools, threads of
    /// their own): blocks the calling thread.
    @discardableResult
    public func writeBlocking(_ writes: [RecordWrite], requestID: String = ReplicaWriter.newRequestID(), timeout: Duration = .seconds(10)) throws -> UInt64 {
        let deadline = ContinuousClock.now + timeout
        let payload = WriteMessages.encode(WriteMessages.Request(id: requestID, writes: writes, answeredByStream: true))
        var retries = Retries(stream: stream, requestID: requestID, subject: subject, attemptTimeout: attemptTimeout, metrics: metrics, logger: logger)
        while true {
            let remaining = try retries.remaining(until: deadline)
            let attempt: Attempt = Self.blocked { resume in self.attempt(payload, requestID: requestID, timeout: min(attemptTimeout, remaining), resume) }
            switch try retries.next(after: attempt) {
            case let .held(sequence): return sequence
            case let .applied(sequence):
                try Self.blocked { (resume: @escaping @Sendable (Result<Void, JetStreamError>) -> Void) in
                    progress.whenApplied(sequence, deadline: deadline, resume)
                }.get()
                return sequence
            case .again: continue
            case .afterPause: Thread.sleep(forTimeInterval: retries.pause(until: deadline).seconds)
            }
        }
    }

    /// What a call does after each attempt, and what it tells its caller when time runs out.
    private struct Retries {
        let stream: String, requestID: String, subject: String, attemptTimeout: Duration
        let metrics: ReplicationMetrics, logger: Logger
        /// Whether an attempt may have reached the primary: then the outcome is unknown.
        var mayHaveApplied = false
        var lastProblem = "no attempt was made"
        var attempts = 0

        enum Next {
            /// The replica holds the request: it applied the commit that names it.
            case held(UInt64)
            /// The primary applied it in this commit, which the replica may not hold yet.
            case applied(UInt64)
            /// Send the request again at once (the attempt waited its time already).
            case again
            /// Send it again after a short pause (no primary answers, or it asks to retry).
            case afterPause
        }

        /// The time left for the next attempt; throws what the call ends with when none is.
        mutating func remaining(until deadline: ContinuousClock.Instant) throws -> Duration {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else {
                if mayHaveApplied { throw JetStreamError.writeOutcomeUnknown(stream: stream, request: requestID, reason: lastProblem) }
                throw JetStreamError.primaryUnreachable(stream: stream, reason: lastProblem)
            }
            if attempts > 0 { metrics.forwardedRetries.increment() }
            attempts += 1
            return remaining
        }

        mutating func next(after attempt: Attempt) throws -> Next {
            switch attempt {
            case let .inReplica(sequence): return .held(sequence)
            case let .answered(bytes):
                switch try WriteMessages.decodeReply(bytes) {
                case let .applied(sequence, _): return .applied(sequence)
                case let .refused(refusal): throw refusal.error
                case let .notApplied(reason, retry):
                    guard retry else { throw JetStreamError.writeNotApplied(stream: stream, request: requestID, reason: reason) }
                    lastProblem = reason
                    return .afterPause
                }
            case .noResponders:
                lastProblem = "no primary accepts writes on \(subject)"
                return .afterPause
            case let .notSent(error):
                guard error.isTransient else { throw JetStreamError.writeNotApplied(stream: stream, request: requestID, reason: "\(error)") }
                lastProblem = "\(error)"
                return .afterPause
            case .timedOut:
                mayHaveApplied = true
                lastProblem = "no answer within \(attemptTimeout) after \(attempts) attempts"
                logger.debug("a write request got no answer; sending it again", metadata: ["request": "\(requestID)"])
                return .again
            }
        }

        /// A short wait before trying again when no primary answers.
        func pause(until deadline: ContinuousClock.Instant) -> Duration {
            min(.milliseconds(50), max(deadline - ContinuousClock.now, .zero))
        }
    }

    private enum Attempt: Sendable {
        /// The replica applied the commit that names the request.
        case inReplica(UInt64)
        case answered([UInt8])
        case noResponders
        case notSent(JetStreamError)
        case timedOut
    }

    /// Sends the request once; `resume` gets its answer: the replica applying the commit that
    /// names it (the primary sends no reply then), the primary's reply otherwise, or
    /// `.timedOut` after `timeout`.
    private func attempt(_ payload: [UInt8], requestID: String, timeout: Duration, _ resume: @escaping @Sendable (Attempt) -> Void) {
        let (answers, progress) = (answers, progress)
        let token = answers.newToken()
        answers.register(token) { attempt in
            if case .inReplica = attempt {} else { progress.forget(token) }
            resume(attempt)
        }
        // The replica's progress thread ends the attempt when it holds the request, or when the
        // time is up.
        progress.whenRequestApplied(requestID, watch: token, until: .now + timeout) { sequence in
            answers.finish(token, with: sequence.map { .inReplica($0) } ?? .timedOut)
        }
        do {
            try connection.publishRequest(subject: subject, reply: "\(inbox).\(token)", data: payload)
        } catch {
            answers.finish(token, with: .notSent(error as? JetStreamError ?? .serverRefused("sending a write request", reason: "\(error)")))
        }
    }

    /// Suspends the task until `start`'s callback gets a value, or the task is cancelled.
    private static func suspended<T: Sendable>(_ start: (@escaping @Sendable (T) -> Void) -> Void) async throws -> T {
        let outcome = OneShot<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                outcome.install(continuation)
                start { outcome.resume(with: .success($0)) }
            }
        } onCancel: {
            outcome.resume(with: .failure(CancellationError()))
        }
    }

    /// Blocks the thread until `start`'s callback gets a value.
    private static func blocked<T: Sendable>(_ start: (@escaping @Sendable (T) -> Void) -> Void) -> T {
        let outcome = BlockingResult<T>()
        start { outcome.set($0) }
        return outcome.wait()
    }

    /// The requests that wait for an answer, by the token that ends their inbox.
    private final class PendingAnswers: @unchecked Sendable {
        private let lock = NSLock()
        private var next = 0
        private var waiting: [Int: @Sendable (Attempt) -> Void] = [:]

        /// A token for a new attempt, whose answer goes to the inbox subject ending in it.
        func newToken() -> Int {
            lock.withLock {
                next += 1
                return next
            }
        }

        /// Hands the attempt's outcome to `resume`, once, with whichever ``finish(_:with:)``
        /// comes first (one that came before this is lost: register before sending).
        func register(_ token: Int, _ resume: @escaping @Sendable (Attempt) -> Void) {
            lock.withLock { waiting[token] = resume }
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

/// Waits, for any number of callers, until the replica has applied a commit or holds a request.
/// A round reads the replica's state, wakes the callers whose commit or request it holds, and
/// ends the waits whose deadline passed (so an attempt's timeout costs no timer of its own).
/// Each commit of a follower in this process runs a round on the follower's thread as it
/// commits; while callers wait, a thread of its own also runs one every 5 ms, for a follower in
/// another process and for deadlines.
private final class ReplicaProgress: @unchecked Sendable {
    private let replica: Store
    private let condition = NSCondition()
    /// Callers waiting for a commit; resumed with nil at their deadline.
    private var waiters: [(sequence: UInt64, deadline: ContinuousClock.Instant, resume: @Sendable (UInt64?) -> Void)] = []
    /// Callers waiting for the replica to remember a request (with the commit that applied it);
    /// resumed with nil at their deadline. `newRequestWaiters`: one came since the replica's
    /// requests were last read.
    private var requestWaiters: [(watch: Int, id: String, deadline: ContinuousClock.Instant, resume: @Sendable (UInt64?) -> Void)] = []
    private var newRequestWaiters = false
    private var stopped = false
    private var thread: Thread?
    /// The replica's commits in this process, heard as they are made.
    private var listener: Int?
    /// One round at a time; `seen` is the origin's commit the last round found applied.
    private let rounds = NSLock()
    private var seen: UInt64 = 0

    init(replica: Store) {
        self.replica = replica
        listener = replica.whenCommitted { [weak self] _ in self?.committed() }
    }

    func stop() {
        if let listener { replica.stopListening(listener) }
        condition.withLock {
            stopped = true
            condition.broadcast()
        }
    }

    private func applied() -> UInt64 { (try? replica.read { try $0.replicaState()?.originSequence }) ?? 0 }

    /// Calls `resume` with the commit that applied request `id` once the replica holds it, or
    /// with nil once `deadline` passes, unless ``forget(_:)`` ends `watch` (a number of the
    /// caller's, unique among its watches) first.
    func whenRequestApplied(_ id: String, watch: Int, until deadline: ContinuousClock.Instant, _ resume: @escaping @Sendable (UInt64?) -> Void) {
        condition.withLock {
            requestWaiters.append((watch, id, deadline, resume))
            newRequestWaiters = true
            startWaiting()
        }
    }

    /// Ends a watch of ``whenRequestApplied(_:watch:until:_:)`` without calling it.
    func forget(_ watch: Int) {
        condition.withLock { requestWaiters.removeAll { $0.watch == watch } }
    }

    /// Calls `resume` once the replica has applied `sequence`, or with
    /// ``JetStreamError/replicaBehind(replica:sequence:applied:)`` when the deadline passes first.
    func whenApplied(_ sequence: UInt64, deadline: ContinuousClock.Instant, _ resume: @escaping @Sendable (Result<Void, JetStreamError>) -> Void) {
        condition.withLock {
            waiters.append((sequence, deadline, { [self] reached in
                resume(reached != nil ? .success(()) : .failure(.replicaBehind(replica: replica.path, sequence: sequence, applied: applied())))
            }))
            startWaiting()
        }
        // The replica may hold it already, with no commit to come.
        round()
    }

    /// Under `condition`, after adding a waiter: starts the thread, or wakes it when it waited for
    /// callers (when it polls already, its next round comes within 5 ms).
    private func startWaiting() {
        guard thread != nil else {
            thread = NamedThread.start("fs replica wait") { [self] in run() }
            return
        }
        if waiters.count + requestWaiters.count == 1 { condition.signal() }
    }

    /// A commit of the replica in this process: a round, when callers wait.
    private func committed() {
        guard condition.withLock({ !waiters.isEmpty || !requestWaiters.isEmpty }) else { return }
        round()
    }

    /// Reads the replica's state and the requests callers wait for, then wakes the callers it
    /// can answer and those whose deadline passed.
    private func round() {
        rounds.lock()
        let state = read()
        let due = takeDue(state)
        rounds.unlock()
        for (reached, resume) in due { resume(reached) }
    }

    /// The origin's commit the replica has applied, and the commits that applied the requests
    /// callers wait for, looked up when the replica applied commits since the last round or
    /// callers came (in the same read); under `rounds`.
    private func read() -> (applied: UInt64, held: [String: UInt64]) {
        let before = seen
        let (ids, newWaiters): ([String], Bool) = condition.withLock {
            defer { newRequestWaiters = false }
            return (requestWaiters.map(\.id), newRequestWaiters)
        }
        var held: [String: UInt64] = [:]
        let applied: UInt64 = (try? replica.read { tx in
            let applied = try tx.replicaState()?.originSequence ?? 0
            if !ids.isEmpty, applied != before || newWaiters {
                for id in ids { if let request = try tx.appliedRequest(id) { held[id] = request.sequence } }
            }
            return applied
        }) ?? 0
        seen = applied
        return (applied, held)
    }

    /// Takes out the callers that `state` answers and those whose deadline passed.
    private func takeDue(_ state: (applied: UInt64, held: [String: UInt64])) -> [(UInt64?, @Sendable (UInt64?) -> Void)] {
        let now = ContinuousClock.now
        var due: [(UInt64?, @Sendable (UInt64?) -> Void)] = []
        condition.withLock {
            waiters.removeAll { waiter in
                if waiter.sequence <= state.applied { due.append((state.applied, waiter.resume)); return true }
                if waiter.deadline <= now { due.append((nil, waiter.resume)); return true }
                return false
            }
            requestWaiters.removeAll { waiter in
                if let sequence = state.held[waiter.id] { due.append((sequence, waiter.resume)); return true }
                if waiter.deadline <= now { due.append((nil, waiter.resume)); return true }
                return false
            }
        }
        return due
    }

    private func run() {
        while true {
            let idle = condition.withLock {
                while waiters.isEmpty && requestWaiters.isEmpty && !stopped { condition.wait() }
                return stopped
            }
            if idle {
                let left = condition.withLock {
                    defer { (waiters, requestWaiters) = ([], []) }
                    return waiters.map(\.resume) + requestWaiters.map(\.resume)
                }
                for resume in left { resume(nil) }
                return
            }
            round()
            // A commit of this process runs its round as it is made; another process's is read
            // within 5 ms.
            condition.withLock {
                if !stopped { _ = condition.wait(until: Date().addingTimeInterval(0.005)) }
            }
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
}

/// The outcome of a suspended call, from whichever comes first: its callback or the task's
/// cancellation. The continuation is resumed once, whatever the order.
private final class OneShot<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, any Error>?
    private var outcome: Result<T, any Error>?

    func install(_ continuation: CheckedContinuation<T, any Error>) {
        let ready: Result<T, any Error>? = lock.withLock {
            guard let outcome else { self.continuation = continuation; return nil }
            return outcome
        }
        if let ready { continuation.resume(with: ready) }
    }

    func resume(with result: Result<T, any Error>) {
        let waiting: CheckedContinuation<T, any Error>? = lock.withLock {
            guard outcome == nil else { return nil }
            outcome = result
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(with: result)
    }
}
