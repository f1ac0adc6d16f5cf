@_spi(Replication) import Feedstore
import Foundation
import Logging

/// Publishes a store's journal to a JetStream stream, one message per commit, in sequence order,
/// exactly once.
///
/// - The subject names the store alone (`feedstore.<store id>` unless given): a commit is one
///   message however many entities it changes, and one subject keeps every commit in one order
///   that the expected-last-sequence fence can check.
/// - Each message's `Nats-Msg-Id` is `<store id>:<sequence>`, and it carries
///   `Nats-Expected-Last-Sequence`: the server stores it only right after the message before it,
///   so a second shipper, or an old one that wakes up, is refused instead of interleaved.
/// - Publishes are pipelined (a batch in flight, then the acknowledgments). The shipper's durable
///   journal cursor (`jetstream:<stream>`) moves only after the server acknowledged; retention
///   keeps every commit the cursor has not passed.
/// - On start it reads the stream's last message and continues right after the commit it holds,
///   so a shipper killed between the acknowledgment and its cursor's update ships no commit
///   twice and skips none.
///
/// One shipper per store: a lock file in the store's directory refuses a second one on the same
/// machine, and the fence refuses one elsewhere.
public final class JournalShipper {
    /// The stream the journal goes to.
    public let stream: String
    /// The subject every message is published on.
    public private(set) var subject: String
    /// The store's identifier.
    public let storeIdentifier: UUID
    /// ``storeIdentifier`` as envelopes and message ids write it.
    private let storeText: String
    /// The newest commit the stream holds.
    public private(set) var shippedSequence: UInt64

    private let store: Store
    private var connection: NATSConnection
    private let options: JetStreamConnection
    private let cursor: JournalCursor
    private let lock: ExclusiveFileLock
    /// Whether the subject was given (else an existing stream's subject is taken).
    private let subjectGiven: Bool
    /// The stream's last sequence, as this shipper last saw or made it.
    private var streamLast: UInt64 = 0

    private let metrics: ReplicationMetrics
    private let logger: Logger

    /// The stream's last message (0 while it holds none), as of the shipper's last publish.
    public var streamSequence: UInt64 { streamLast }
    /// The catalog entry of each entity as this shipper last sent it: an envelope carries an
    /// entity's entry the first time and whenever it changed.
    private var sentSchemas: [String: CatalogEntity] = [:]

    /// The subject a shipper publishes the store `store`'s commits on unless given another.
    static func defaultSubject(of store: UUID) -> String { "feedstore.\(store.uuidString.lowercased())" }

    /// The store whose commits `subject` carries, when it is a ``defaultSubject(of:)``.
    static func store(ofDefaultSubject subject: String) -> UUID? {
        subject.hasPrefix("feedstore.") ? UUID(uuidString: String(subject.dropFirst("feedstore.".count))) : nil
    }

    /// Connects, creates the stream when it does not exist, and finds where shipping resumes.
    ///
    /// The first shipper of a store makes its journal keep records
    /// (``WriteTransaction/keepRecordImagesInJournal()``) and starts with the next commit; earlier
    /// commits reach replicas through a copy of the store.
    /// - Parameters:
    ///   - store: the primary store, opened for writing.
    ///   - connection: the NATS server and its credentials.
    ///   - stream: the stream's name; it is created holding only ``subject``.
    ///   - subject: the subject to publish on; by default the stream's when it exists, and
    ///     `feedstore.<store id>` for a new stream.
    ///   - snapshots: when to store snapshots of the store in the stream's bucket, from which
    ///     replicas start (nil: never). By default the first when shipping starts.
    ///   - onSnapshot: told what the snapshots do, on their thread.
    ///   - acceptWrites: answer write requests from replicas (``ReplicaWriter``) on the
    ///     stream's write subject, `feedstore-writes.<stream>`, with these settings (nil: no
    ///     requests are answered). Requests that arrive together share a commit, each applied
    ///     atomically and at most once, and are answered once their commit is in the stream; the
    ///     answers stop when the shipper is released or another store is promoted in this one's
    ///     place.
    ///   - logger: where the shipper logs (swift-log); it also reports its metrics through
    ///     swift-metrics (listed in the replication article).
    /// - Throws: ``JetStreamError`` when the server cannot be reached, the stream holds another
    ///   store's commits or commits this store lacks, another shipper runs, or a promotion
    ///   replaced this store (``JetStreamError/supersededByPromotion(stream:promoted:through:unshipped:)``);
    ///   ``JetStreamError/invalidName(kind:name:reason:)`` for a stream or bucket name JetStream
    ///   does not take.
    public init(store: Store, connection: JetStreamConnection, stream: String, subject: String? = nil,
                snapshots: SnapshotSchedule? = SnapshotSchedule(), onSnapshot: @escaping @Sendable (SnapshotEvent) -> Void = { _ in },
                acceptWrites: ForwardedWrites? = nil, logger: Logger = Logger(label: "feedstore.jetstream")) throws
    {
        try connection.checkURL()
        try JetStreamNames.checkStream(stream)
        // Before the stream is made: the bucket is made after it.
        if let snapshots { try JetStreamNames.checkBucket(snapshots.bucket ?? SnapshotBucket.defaultName(forStream: stream)) }
        guard let identifier = try store.read({ try $0.storeIdentifier() }) else {
            throw FeedstoreError.readOnly(path: store.path, reason: "a store without an identifier (format 2, opened read-only) cannot be shipped")
        }
        self.store = store
        self.stream = stream
        self.storeIdentifier = identifier
        storeText = identifier.uuidString.lowercased()
        metrics = ReplicationMetrics(stream: stream)
        var logger = logger
        logger[metadataKey: "stream"] = "\(stream)"
        logger[metadataKey: "store"] = "\(identifier.uuidString.lowercased())"
        self.logger = logger
        self.subject = subject ?? Self.defaultSubject(of: identifier)
        subjectGiven = subject != nil
        lock = try ExclusiveFileLock(path: store.path + "/jetstream-\(stream).lock",
                                     refusal: { .anotherShipper(stream: stream, reason: "a shipper of this store already runs: \($0)") })
        let imagesStart = try store.write { try $0.keepRecordImagesInJournal() }
        cursor = try store.journalCursor(named: "jetstream:\(stream)", start: .latest)
        if try cursor.position() + 1 < imagesStart { try cursor.acknowledge(through: imagesStart - 1) }
        options = connection
        self.connection = try NATSConnection(connection)
        shippedSequence = 0
        try resume()
        logger.info("shipping", metadata: ["after": "\(shippedSequence)", "subject": "\(self.subject)"])
        metrics.shippedCommit.record(shippedSequence)
        if let snapshots {
            let taker = SnapshotTaker(store: store, connection: connection, stream: stream, schedule: snapshots,
                                      metrics: metrics, logger: logger, onEvent: onSnapshot)
            try taker.readBucket(over: self.connection)
            snapshotTaker = taker
            firstNeeded = try firstCommitNeeded()
        }
        if let acceptWrites {
            writeService = try WriteService(store: store, connection: connection, stream: stream, shippedThrough: shippedSequence,
                                            settings: acceptWrites, metrics: metrics, logger: logger)
        }
    }

    /// Answers replicas' write requests, when asked to.
    private var writeService: WriteService?

    private var snapshotTaker: SnapshotTaker?
    /// The first commit a replica needs from the stream: its first message's, or the next to ship.
    private var firstNeeded: UInt64 = 1
    /// Bytes of envelopes this shipper has published.
    public private(set) var shippedBytes: UInt64 = 0

    private func firstCommitNeeded() throws -> UInt64 {
        guard let info = try connection.streamInfo(stream), info.lastSequence >= max(info.firstSequence, 1),
              let id = try StreamHistory(connection: connection, stream: stream).id(at: max(info.firstSequence, 1))
        else { return shippedSequence + 1 }
        return id.isPromotion ? id.sequence + 1 : id.sequence
    }

    /// Starts a snapshot when one is due (it runs on a thread of its own).
    private func startSnapshotIfDue() {
        guard let snapshotTaker,
              snapshotTaker.isDue(firstNeeded: firstNeeded, shippedSequence: shippedSequence, shippedBytes: shippedBytes)
        else { return }
        snapshotTaker.start(shippedBytes: shippedBytes)
    }

    /// Reads the stream's state and sets where shipping continues.
    private func resume() throws {
        guard let info = try connection.streamInfo(stream) else {
            try connection.addStream(stream, subject: subject, duplicateWindow: .seconds(120))
            streamLast = 0
            shippedSequence = try cursor.position()
            return
        }
        if !subjectGiven, info.subjects.count == 1 { subject = info.subjects[0] }
        guard info.subjects.contains(subject) else {
            throw JetStreamError.streamHoldsAnotherStore(stream: stream, found: "subjects \(info.subjects.joined(separator: ", "))",
                                                         expected: storeIdentifier)
        }
        streamLast = info.lastSequence
        guard streamLast > 0 else {
            shippedSequence = try cursor.position()
            return
        }
        guard let last = try connection.message(stream, at: streamLast), let id = last.id,
              let named = ChangeEnvelope.parseMessageID(id)
        else {
            throw JetStreamError.streamHoldsAnotherStore(stream: stream, found: "a message without a Feedstore id", expected: storeIdentifier)
        }
        guard named.store == storeIdentifier.uuidString.lowercased() else {
            throw try supersession(info: info) ?? JetStreamError.streamHoldsAnotherStore(stream: stream, found: named.store, expected: storeIdentifier)
        }
        let newest = try store.read { try $0.journalBounds().last }
        if named.isPromotion {
            // This store's own promotion: it continues after the commit the record names.
            guard named.sequence <= newest else {
                throw JetStreamError.streamAheadOfStore(stream: stream, streamSequence: named.sequence, storeSequence: newest)
            }
            try cursor.acknowledge(through: named.sequence)
            shippedSequence = named.sequence
            return
        }
        guard named.sequence <= newest else {
            throw JetStreamError.streamAheadOfStore(stream: stream, streamSequence: named.sequence, storeSequence: newest)
        }
        // A copy of the store has the same identifier: the commit must be this store's own.
        if let commit = try? store.read({ try $0.journal(after: named.sequence - 1, limit: 1) }).first, commit.sequence == named.sequence {
            let ours = try ChangeEnvelope.decode(try ChangeEnvelope.encode(commit, store: storeIdentifier), streamSequence: streamLast)
            guard try ChangeEnvelope.decode(last.data, streamSequence: streamLast).commit == ours.commit else {
                throw JetStreamError.historyDiverged(stream: stream, sequence: named.sequence)
            }
        }
        // The stream is the truth: commits it holds were acknowledged, even when the cursor did
        // not move before a crash.
        try cursor.acknowledge(through: named.sequence)
        shippedSequence = named.sequence
    }

    /// The error that says a promotion replaced this store, when the stream's last message is
    /// another store's; it names this store's commits that never reached the stream. Nil when
    /// the stream's last message is this store's.
    private func supersession(info: (subjects: [String], lastSequence: UInt64, firstSequence: UInt64)) throws -> JetStreamError? {
        let history = StreamHistory(connection: connection, stream: stream)
        let ours = storeIdentifier.uuidString.lowercased()
        let first = max(info.firstSequence, 1)
        guard info.lastSequence >= first, let lastID = try history.id(at: info.lastSequence), lastID.store != ours else { return nil }
        // This store's last commit in the stream, then its commits after it that a crash kept
        // the cursor from recording: the message after them is the promotion that replaced it.
        var sequence = try history.lastSequence(atOrBefore: try cursor.position() * 2, in: first...info.lastSequence) + 1
        while sequence <= info.lastSequence, let id = try history.id(at: sequence), id.store == ours, !id.isPromotion { sequence += 1 }
        guard sequence <= info.lastSequence, let message = try connection.message(stream, at: sequence),
              let promotion = try? ChangeEnvelope.decode(message.data, streamSequence: sequence), let record = promotion.promotion,
              record.from == storeIdentifier, let promoted = UUID(uuidString: promotion.store)
        else { return nil }
        let newest = try store.read { try $0.journalBounds().last }
        let error = JetStreamError.supersededByPromotion(stream: stream, promoted: promoted, through: record.through,
                                                         unshipped: newest > record.through ? (record.through + 1)...newest : nil)
        logger.error("\(error)")
        writeService?.supersede(reason: error.description)
        return error
    }

    /// Publishes the commits after ``shippedSequence``, at most `limit` of them, and waits for
    /// the server's acknowledgments; then moves the cursor.
    /// - Returns: how many commits were shipped (0 when the stream is up to date).
    @discardableResult
    public func shipAvailable(limit: Int = 512) throws -> Int {
        let shipped = try ship(limit: limit)
        try acknowledgeCursor()
        return shipped
    }

    /// A running shipper moves its durable cursor with the store's next commit after each round
    /// (no commit or sync of its own), and with a commit of its own only once it has been idle
    /// this long: the stream, not the cursor, says where shipping resumes; the cursor only lets
    /// retention trim what the stream holds.
    static let cursorInterval: Duration = .milliseconds(50)
    /// When the shipper last published.
    private var lastShipped = ContinuousClock.now
    /// Where this shipper last moved the cursor.
    private var cursorMovedTo: UInt64 = 0

    /// Moves the durable cursor to the newest commit in the stream.
    private func acknowledgeCursor() throws {
        guard shippedSequence > cursorMovedTo else { return }
        if try cursor.position() < shippedSequence { try cursor.acknowledge(through: shippedSequence) }
        cursorMovedTo = shippedSequence
    }

    /// Publishes the commits after ``shippedSequence``, at most `limit` of them, and waits for
    /// the server's acknowledgments; leaves the cursor where it was.
    private func ship(limit: Int) throws -> Int {
        let commits: [JournalCommit]
        var requests: [UInt64: [AppliedRequest]] = [:]
        do {
            commits = try store.read { tx in
                let commits = try tx.journal(after: shippedSequence, limit: limit)
                if let first = commits.first, let last = commits.last {
                    requests = Dictionary(grouping: try tx.appliedRequests(in: first.sequence...last.sequence), by: \.sequence)
                }
                return commits
            }
        } catch FeedstoreError.journalBehindRetention(_, let first) {
            throw JetStreamError.storeBehindStream(stream: stream, streamLast: shippedSequence, firstRetained: first)
        }
        guard let newest = commits.last else { return 0 }
        _ = connection.acknowledgments.take()
        let catalog = try store.catalog
        var sending = sentSchemas
        var bytes: UInt64 = 0
        for (offset, commit) in commits.enumerated() {
            var schemas: [CatalogEntity] = []
            for name in Set(commit.entries.map(\.entity)) {
                guard let entity = catalog.entities[name], sending[name] != entity else { continue }
                schemas.append(entity)
                sending[name] = entity
            }
            let envelope = try ChangeEnvelope.encode(commit, storeText: storeText, schemas: schemas, requests: requests[commit.sequence] ?? [])
            bytes += UInt64(envelope.count)
            // The expected sequence goes in as a header: the client's option takes 0 to mean none.
            let id = ChangeEnvelope.messageID(storeText: storeText, sequence: commit.sequence)
            let expected = String(streamLast + UInt64(offset))
            if offset == 0 {
                try connection.publishAsync(subject: subject, data: envelope, headers: ["Nats-Msg-Id": id, "Nats-Expected-Last-Sequence": expected])
            } else {
                // Each later commit of the batch also names the commit before it: once one is
                // refused because another store's message took its place, a later one cannot
                // land after that message by matching its position.
                let previous = ChangeEnvelope.messageID(storeText: storeText, sequence: commits[offset - 1].sequence)
                try connection.publishAsync(subject: subject, data: envelope,
                                            headers: ["Nats-Msg-Id": id, "Nats-Expected-Last-Sequence": expected, "Nats-Expected-Last-Msg-Id": previous])
            }
        }
        let finished = connection.waitForAcknowledgments(timeout: connection.timeout)
        let answers = connection.acknowledgments.take()
        if let refusal = answers.refusal {
            // 10071: the stream's last sequence was not the expected one; 10070: its last
            // message was not the commit before.
            if refusal.code == 10071 || refusal.code == 10070 {
                if let info = try connection.streamInfo(stream), let superseded = try supersession(info: info) { throw superseded }
                throw JetStreamError.anotherShipper(stream: stream, reason: refusal.reason)
            }
            throw JetStreamError.serverRefused("a commit", reason: refusal.reason)
        }
        if let reason = answers.unavailable { throw JetStreamError.serverUnavailable("publishing commits", reason: reason) }
        guard finished else { throw JetStreamError.timedOut("acknowledgments of \(commits.count) commits") }
        let expected = (1...UInt64(commits.count)).map { streamLast + $0 }
        guard answers.streamSequences.sorted() == expected, answers.duplicates == 0 else {
            throw JetStreamError.anotherShipper(stream: stream, reason: "the stream stored the commits at other sequences")
        }
        writeService?.shipped(through: newest.sequence)
        sentSchemas = sending
        shippedBytes += bytes
        metrics.shippedCommits.increment(by: Int64(commits.count))
        metrics.shippedBytes.increment(by: Int64(bytes))
        metrics.shippedCommit.record(newest.sequence)
        streamLast += UInt64(commits.count)
        shippedSequence = newest.sequence
        return commits.count
    }

    /// How long an idle shipper waits before a round of its own (acknowledging its cursor,
    /// starting a snapshot that is due, seeing whether to stop). A commit wakes it at once,
    /// whichever process makes it: the store's commit signal reports other processes' commits.
    public static let idleInterval: Duration = .milliseconds(250)

    /// Ships commits as they are made until every commit through `sequence` is in the stream
    /// (or forever when nil), woken by each commit and at least every `interval` when idle, and takes
    /// snapshots as the schedule says. A snapshot in progress finishes before this returns.
    ///
    /// When the server does not answer or cannot be reached (``JetStreamError/isTransient``),
    /// the shipper reconnects, every ``reconnectInterval`` for as long as it takes, and
    /// continues after the stream's last commit: commits published before the outage and stored
    /// are not published again, and those lost with it are.
    /// - Parameters:
    ///   - keepGoing: called before each round (a round ships what is there or waits
    ///     `interval`) and between attempts to reconnect; shipping stops when it returns false.
    ///     It can read ``shippedSequence``.
    ///   - onOutage: called with the error when the server is lost, before reconnecting.
    public func run(until sequence: UInt64? = nil, interval: Duration = idleInterval, while keepGoing: () -> Bool = { true },
                    onOutage: (JetStreamError) -> Void = { _ in }) throws
    {
        // A snapshot in progress finishes before this returns, and the cursor is where the
        // stream is.
        defer {
            snapshotTaker?.wait()
            try? acknowledgeCursor()
        }
        while keepGoing() {
            startSnapshotIfDue()
            if let sequence, shippedSequence >= sequence { return }
            do {
                // Idle: a commit wakes the shipper at once, made in this process or another.
                if try ship(limit: 512) == 0 {
                    let idle = ContinuousClock.now - lastShipped
                    if idle >= Self.cursorInterval { try acknowledgeCursor() }
                    // No longer than until the cursor is due, when it has not moved yet.
                    let due = shippedSequence > cursorMovedTo && idle < Self.cursorInterval ? min(interval, Self.cursorInterval - idle) : interval
                    _ = store.waitForCommit(after: shippedSequence, timeout: due.seconds)
                } else {
                    lastShipped = .now
                    cursor.acknowledgeWithNextCommit(through: shippedSequence)
                }
            } catch let error as JetStreamError where error.isTransient {
                logger.warning("\(error); reconnecting")
                onOutage(error)
                try reconnect(while: keepGoing)
            }
        }
    }

    /// ``run(until:interval:while:onOutage:)`` for Swift concurrency: ships on a thread of its
    /// own until every commit through `sequence` is in the stream (or forever when nil), and
    /// stops when the calling task is cancelled, after the round in progress.
    /// - Parameter onOutage: called on the shipper's thread with the error when the server is
    ///   lost, before reconnecting.
    public func ship(until sequence: UInt64? = nil, interval: Duration = idleInterval,
                     onOutage: @escaping @Sendable (JetStreamError) -> Void = { _ in }) async throws
    {
        // The shipper is used by one thread at a time: this call's own, until it returns.
        nonisolated(unsafe) let shipper = self
        try await OwnThread.run(name: "fs shipper") { keepGoing in
            try shipper.run(until: sequence, interval: interval, while: keepGoing, onOutage: onOutage)
        }
    }

    /// How long a running shipper waits between attempts to reach a lost server.
    public static let reconnectInterval: Duration = .milliseconds(250)

    /// A new connection, and where shipping resumes; retried while the server is unavailable.
    private func reconnect(while keepGoing: () -> Bool) throws {
        while keepGoing() {
            do {
                connection = try NATSConnection(options)
                try resume()
                writeService?.shipped(through: shippedSequence)
                logger.info("reconnected", metadata: ["after": "\(shippedSequence)"])
                return
            } catch let error as JetStreamError where error.isTransient {
                Thread.sleep(forTimeInterval: Self.reconnectInterval.seconds)
            }
        }
    }
}
