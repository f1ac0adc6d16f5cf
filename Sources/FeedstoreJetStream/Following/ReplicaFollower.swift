@_spi(Replication) import Feedstore
import Foundation
import Logging

/// Applies a shipped stream, in order, to a replica store: each commit in one transaction with
/// the replica's state (origin, stream and origin sequences), so that the replica's records,
/// indexes, counts and journal match the origin's as of that commit, and a follower killed at
/// any point resumes with no commit applied twice or skipped.
///
/// The replica's journal gets one commit per origin commit, with the same entries: its watchers
/// deliver the batches the origin's deliver. Applications open a replica like any store, and
/// every write of theirs is refused: only the follower writes it.
///
/// A replica starts from nothing: the follower restores the newest snapshot of the stream's
/// bucket (``SnapshotBucket``) and continues with the commit after it. Without a snapshot, the
/// stream must begin with the origin's first commit. A copy of the origin (`storectl compact`)
/// also serves as a start. When the stream has promoted a replica in its origin's place, the
/// follower reads the promotion record and follows the promoted store.
public final class ReplicaFollower {
    /// The stream followed.
    public let stream: String
    /// The replica, open for its follower.
    public private(set) var replica: Store
    /// How far the replica has applied its origin's commits (nil before the first one, for a
    /// replica started from an empty store).
    public private(set) var state: ReplicaState?
    /// When the origin made the last commit the replica applied (nil before it applied one, or
    /// when no one knows).
    public private(set) var appliedCommitTime: Date?
    /// How the replica's commits are synced: as asked, or as chosen when not asked (`.none`
    /// when a snapshot can re-seed the replica, `.relaxed` when none can).
    public let durability: Durability

    /// What a follower does to start a replica from nothing, as it happens.
    public enum SeedEvent: Sendable {
        /// A snapshot is being fetched.
        case restoring(Snapshot)
        /// Bytes of the snapshot fetched so far, and its size.
        case fetched(UInt64, of: UInt64)
        /// The snapshot is in place, its digest checked.
        case restored(Snapshot)
        /// The replica starts empty: the stream holds the origin's whole history.
        case startingEmpty
    }

    private let path: String
    private let storeOptions: StoreOptions
    private let connection: NATSConnection
    private let history: StreamHistory
    private let lock: ExclusiveFileLock
    private let snapshots: SnapshotBucket?
    private let onSeed: (SeedEvent) -> Void
    private let reseed: Bool
    private let metrics: ReplicationMetrics
    private let logger: Logger
    /// When the lag metrics were last updated.
    private var lagReported = ContinuousClock.now - .seconds(1)
    private var subscription: OrderedSubscription?
    private var subject = ">"
    /// The catalog entries of the origin's entities, from the envelopes that carried them.
    private var schemas: [String: CatalogEntity] = [:]

    /// Opens the replica at `path`, restoring it from the newest snapshot first when the
    /// directory holds no store, and finds where in the stream it continues. Its durability is
    /// chosen by what can rebuild it: `.none` when the bucket holds a snapshot to re-seed from,
    /// `.relaxed` (each commit synced right after the replica's watchers see it) when it does not; see
    /// ``init(path:connection:stream:durability:bucket:reseed:onSeed:logger:)`` and ``durability``.
    /// - Parameters:
    ///   - path: the replica's directory; missing or empty to start from nothing.
    ///   - connection: the NATS server and its credentials.
    ///   - stream: the stream a shipper fills.
    ///   - bucket: the snapshots' bucket; ``SnapshotBucket/defaultName(forStream:)`` by default.
    ///   - reseed: when the stream no longer holds the commit the replica needs next, replace
    ///     the replica with the newest snapshot (no other process may have it open). Without it,
    ///     that is ``JetStreamError/replicaNeedsSeed(stream:reason:)``.
    ///   - onSeed: told what a start from nothing does (for progress lines).
    ///   - logger: where the follower logs (swift-log); it also reports its metrics through
    ///     swift-metrics (listed in the replication article).
    /// - Throws: ``JetStreamError`` when the stream does not exist or holds another store's
    ///   commits (a store with commits that is not a copy of its origin included), when the
    ///   replica cannot continue from it, or a start from nothing finds no snapshot and a stream
    ///   that does not begin with the origin's first commit;
    ///   ``JetStreamError/invalidName(kind:name:reason:)`` for a stream or bucket name JetStream
    ///   does not take.
    public convenience init(path: String, connection: JetStreamConnection, stream: String,
                            bucket: String? = nil, reseed: Bool = false, onSeed: @escaping (SeedEvent) -> Void = { _ in },
                            logger: Logger = Logger(label: "feedstore.jetstream")) throws
    {
        try self.init(path: path, connection: connection, stream: stream, chosen: nil, bucket: bucket, reseed: reseed, onSeed: onSeed, logger: logger)
    }

    /// Opens the replica at `path` with the durability given, as
    /// ``init(path:connection:stream:bucket:reseed:onSeed:logger:)`` does.
    /// - Parameter durability: the replica's durability. The stream holds every commit, so
    ///   neither `.relaxed` nor `.none` makes the replica's watchers wait for a sync:
    ///   - `.relaxed` syncs each commit right after the watchers see it, before the next begins,
    ///     so a power loss can damage only the newest commit. A follower that finds the
    ///     replica was written so when the machine last went down rolls that commit back and
    ///     applies it again from the stream.
    ///   - `.none` syncs nothing; a machine that goes down may damage the replica anywhere, so a
    ///     follower that finds it was written so when the machine last went down re-seeds it
    ///     from the newest snapshot.
    ///   - A follower merely killed continues either.
    public convenience init(path: String, connection: JetStreamConnection, stream: String, durability: Durability,
                            bucket: String? = nil, reseed: Bool = false, onSeed: @escaping (SeedEvent) -> Void = { _ in },
                            logger: Logger = Logger(label: "feedstore.jetstream")) throws
    {
        try self.init(path: path, connection: connection, stream: stream, chosen: durability, bucket: bucket, reseed: reseed, onSeed: onSeed, logger: logger)
    }

    /// `chosen` nil: by what can rebuild the replica. (Not an optional parameter of the public
    /// initializers: `durability: .none` would read as nil.)
    private init(path: String, connection: JetStreamConnection, stream: String, chosen: Durability?,
                 bucket: String?, reseed: Bool, onSeed: @escaping (SeedEvent) -> Void, logger: Logger) throws
    {
        try connection.checkURL()
        try JetStreamNames.checkStream(stream)
        if let bucket { try JetStreamNames.checkBucket(bucket) }
        self.stream = stream
        self.path = path
        let metrics = ReplicationMetrics(stream: stream)
        self.metrics = metrics
        var logger = logger
        logger[metadataKey: "stream"] = "\(stream)"
        logger[metadataKey: "replica"] = "\(path)"
        self.logger = logger
        // Logged and counted, then told to the caller.
        let onSeed: (SeedEvent) -> Void = { [logger] event in
            switch event {
            case let .restoring(snapshot): logger.info("restoring snapshot", metadata: ["name": "\(snapshot.name)", "bytes": "\(snapshot.size)"])
            case let .fetched(done, _): metrics.restoreBytes.record(done)
            case let .restored(snapshot):
                metrics.restores.increment()
                logger.info("restored snapshot", metadata: ["name": "\(snapshot.name)"])
            case .startingEmpty: logger.info("starting from an empty store")
            }
            onSeed(event)
        }
        self.onSeed = onSeed
        self.reseed = reseed
        let connection = try NATSConnection(connection)
        self.connection = connection
        history = StreamHistory(connection: connection, stream: stream)
        let bucketName = bucket ?? SnapshotBucket.defaultName(forStream: stream)
        let snapshots = try connection.streamInfo("OBJ_\(bucketName)") == nil ? nil : SnapshotBucket(connection, name: bucketName, create: false)
        self.snapshots = snapshots
        let durability = try chosen ?? (snapshots?.snapshots().isEmpty == false ? .none : .relaxed)
        self.durability = durability
        var storeOptions = StoreOptions(durability: durability)
        storeOptions.writesReplica = true
        // The stream keeps every commit, so a relaxed replica can afford to sync after its
        // watchers see a commit, and to drop its newest commit after the machine went down.
        storeOptions.syncsAfterPublishing = durability == .relaxed
        self.storeOptions = storeOptions
        guard try connection.streamInfo(stream) != nil else {
            throw JetStreamError.serverRefused("following stream \(stream)", reason: "there is no such stream")
        }
        let fm = FileManager.default
        if !fm.fileExists(atPath: path) {
            do { try fm.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]) } catch {
                throw JetStreamError.fileFailed(reason: "creating \(path): \(error.localizedDescription)")
            }
        }
        lock = try ExclusiveFileLock(path: path + "/follower.lock", refusal: { .anotherFollower(replica: path, reason: $0) })
        if !fm.fileExists(atPath: path + "/data.mdb") {
            // A replica starts in an empty directory, never among other files (a mistyped path).
            let others = ((try? fm.contentsOfDirectory(atPath: path)) ?? [])
                .filter { !["follower.lock", "restore.partial", Self.unsyncedMarker].contains($0) }
            guard others.isEmpty else {
                throw FeedstoreError.notAStore(path: path, reason: "the directory holds no data.mdb and is not empty (\(others.sorted().prefix(3).joined(separator: ", "))); a replica starts in an empty or missing directory")
            }
            // A mark left with no file describes nothing.
            try Self.setMark(nil, at: path)
            try Self.seed(snapshots, history: history, into: path, replacing: false, onSeed: onSeed)
        } else if let mark = Self.mark(at: path), mark.isFromEarlierBoot {
            switch mark.writing {
            case .unsynced:
                // Written without syncs when the machine went down: the file may be damaged.
                logger.warning("the machine restarted while the replica was written without syncs: re-seeding it")
                try Self.seed(snapshots, history: history, into: path, replacing: true, onSeed: onSeed)
            case let .syncedAfterPublishing(after):
                // Only the newest commit may be damaged; the one before it is whole.
                if let dropped = try Store.rollBackNewestCommit(at: path, madeAfter: after) {
                    logger.warning("the machine restarted while the replica was written: its newest commit, which may be damaged, is rolled back and applied again from the stream",
                                   metadata: ["transaction": "\(dropped.droppedTransaction)"])
                }
            }
        }
        try Self.setMark(durability == .none ? .unsynced : nil, at: path)
        replica = try Self.openReplica(at: path, options: storeOptions)
        state = try replica.read { try $0.replicaState() }
        appliedCommitTime = state?.originTime
        do {
            try start()
        } catch let error as JetStreamError where reseed && error.needsSeed {
            try reseedReplica()
        }
    }

    deinit {
        // Synced now: a restart of the machine from here on cannot have damaged it.
        if durability != .full, (try? replica.sync()) != nil { unlink(path + "/" + Self.unsyncedMarker) }
    }

    /// Names the file that marks a replica whose newest commits may not be synced, holding when
    /// the machine last started and how the replica is written. A follower killed leaves it, and
    /// the page cache keeps what it wrote; a machine that went down may have lost part of it, so
    /// a follower that finds the mark from an earlier boot repairs the replica:
    /// - written without syncs (`durability: .none`), it may be damaged anywhere, and is re-seeded
    ///   from the newest snapshot;
    /// - written with each commit synced right after its watchers saw it (`.relaxed`), only the
    ///   newest commit may be damaged: it is rolled back, and applied again from the stream.
    static let unsyncedMarker = "follower.unsynced"

    /// What a replica's mark says.
    struct Mark: Equatable {
        enum Writing: Equatable {
            /// Nothing synced (`durability: .none`).
            case unsynced
            /// Each commit synced after it was published (`.relaxed`); the ones after LMDB
            /// transaction `after` were made so.
            case syncedAfterPublishing(after: UInt64)
        }

        /// Which start of the machine wrote the mark.
        enum Boot: Equatable {
            /// ``MachineBoot/text``.
            case identity(String)
            /// When the machine started, in seconds since 1970, as marks written by earlier
            /// versions say it (still read: a replica may be opened by a newer version after a crash).
            case started(Double)
        }

        var boot: Boot
        var writing: Writing

        /// The file's text: "boot:BOOT" for an unsynced replica, "boot:BOOT after TRANSACTION"
        /// for one synced after publishing.
        var text: String {
            let boot = switch boot {
            case let .identity(text): "boot:" + text
            case let .started(time): String(format: "%.0f", time)
            }
            return switch writing {
            case .unsynced: boot + "\n"
            case let .syncedAfterPublishing(after): boot + " after \(after)\n"
            }
        }

        init(boot: Boot = .identity(MachineBoot.text), writing: Writing) {
            self.boot = boot
            self.writing = writing
        }

        init?(text: String) {
            let words = text.split(whereSeparator: \.isWhitespace)
            guard let first = words.first else { return nil }
            if first.hasPrefix("boot:") {
                boot = .identity(String(first.dropFirst(5)))
            } else if let started = Double(first) {
                boot = .started(started)
            } else {
                return nil
            }
            switch words.count {
            case 1: writing = .unsynced
            case 3 where words[1] == "after": guard let after = UInt64(words[2]) else { return nil }
                writing = .syncedAfterPublishing(after: after)
            default: return nil
            }
        }

        /// Whether the machine has restarted since the mark was written: another boot's identity
        /// (a mark of an earlier version: another start time, to within the clock's adjustments).
        var isFromEarlierBoot: Bool {
            switch boot {
            case let .identity(text): text != MachineBoot.text
            case let .started(time): abs(time - (Date().timeIntervalSince1970 - ProcessInfo.processInfo.systemUptime)) > 30
            }
        }
    }

    /// How long and how many applied write requests a replica remembers.
    private static let requestMemory = ForwardedWrites()

    /// The replica's mark, if it has a readable one.
    static func mark(at path: String) -> Mark? {
        (try? String(contentsOfFile: path + "/" + unsyncedMarker, encoding: .utf8)).flatMap(Mark.init(text:))
    }

    /// Marks the replica as written so from now on, durably (or removes the mark).
    private static func setMark(_ writing: Mark.Writing?, at path: String) throws {
        let marker = path + "/" + unsyncedMarker
        guard let writing else {
            unlink(marker)
            return
        }
        do { try Mark(writing: writing).text.write(toFile: marker, atomically: true, encoding: .utf8) } catch {
            throw JetStreamError.fileFailed(reason: "writing \(marker): \(error.localizedDescription)")
        }
        try DirectorySync.sync(path)
    }

    /// Opens the replica for its follower. A replica whose commits are synced after they are
    /// published is marked with the transaction it starts from before it commits anything.
    private static func openReplica(at path: String, options: StoreOptions) throws -> Store {
        let store = try Store(path: path, options: options)
        if options.syncsAfterPublishing {
            do { try setMark(.syncedAfterPublishing(after: Store.newestTransaction(at: path)), at: path) } catch {
                store.close()
                throw error
            }
        }
        return store
    }

    /// Replaces the replica with the newest snapshot and starts again.
    private func reseedReplica() throws {
        guard state != nil else {
            throw JetStreamError.replicaNeedsSeed(stream: stream, reason: "the store at \(path) is no replica, so re-seeding it would lose its own commits; follow into another directory")
        }
        logger.warning("re-seeding the replica from the newest snapshot")
        subscription = nil
        replica.close()
        // Closed, the replica is synced; the mark of a relaxed one names transactions of the
        // file about to be replaced. (An unsynced one keeps its mark until the new file is in.)
        if storeOptions.syncsAfterPublishing { try Self.setMark(nil, at: path) }
        try Self.seed(snapshots, history: history, into: path, replacing: true, onSeed: onSeed)
        replica = try Self.openReplica(at: path, options: storeOptions)
        state = try replica.read { try $0.replicaState() }
        appliedCommitTime = state?.originTime
        schemas = [:]
        try start()
    }

    /// Puts a store at `path`: the newest snapshot, with the replica's state set; or, when the
    /// bucket has none and the stream begins with the origin's first commit, an empty store.
    private static func seed(_ snapshots: SnapshotBucket?, history: StreamHistory, into path: String, replacing: Bool,
                             onSeed: (SeedEvent) -> Void) throws
    {
        if replacing {
            // A process reading the replica would keep the replaced file, and its lock file would
            // be gone.
            do { try Store.checkClosedEverywhere(at: path, doing: "replacing the replica with a snapshot") } catch {
                throw JetStreamError.replicaNeedsSeed(stream: history.stream, reason: "\(error); close it everywhere and start the follower again")
            }
        }
        if let snapshots, let newest = try snapshots.snapshots().last {
            onSeed(.restoring(newest))
            try snapshots.restore(newest, into: path, prepare: { restored in
                let store = try Store(path: restored, options: { var o = StoreOptions(durability: .full); o.writesReplica = true; return o }())
                defer { store.close() }
                let through = try store.read { try $0.journalBounds().last }
                let streamSequence = try seedPosition(through: through, history: history)
                try store.write {
                    try $0.makeReplica(ReplicaState(origin: newest.store, streamSequence: streamSequence, originSequence: through,
                                                    originTime: try lastCommitTime(of: store)))
                }
                // The replaced store's lock file describes readers of the file being replaced.
                if replacing { unlink(path + "/lock.mdb") }
            }, progress: { onSeed(.fetched($0, of: $1)) })
            onSeed(.restored(newest))
            return
        }
        guard let info = try history.connection.streamInfo(history.stream) else { return }
        let first = max(info.firstSequence, 1)
        if info.lastSequence >= first, let id = try history.id(at: first), id.sequence != 1 || id.isPromotion {
            throw JetStreamError.noSnapshot(bucket: snapshots?.name ?? SnapshotBucket.defaultName(forStream: history.stream),
                                            reason: "the stream begins with commit \(id.sequence), so a replica starts from a snapshot; a shipper takes one when it starts")
        }
        guard !replacing else { throw JetStreamError.noSnapshot(bucket: snapshots?.name ?? "", reason: "there is none to re-seed from") }
        if let snapshots, info.lastSequence < first {
            // Snapshots are taken, and neither the stream nor the bucket holds anything yet: the
            // shipper is storing its first snapshot, which holds what came before shipping.
            throw JetStreamError.noSnapshot(bucket: snapshots.name, reason: "the stream holds no commit yet and the bucket no snapshot; the shipper stores one when it starts, so try again once it has")
        }
        onSeed(.startingEmpty)
        // An empty store, made beside and moved in, so that the directory holds nothing else
        // until it is whole.
        let partial = path + "/restore.partial"
        try? FileManager.default.removeItem(atPath: partial)
        try Store(path: partial, options: StoreOptions(durability: .full)).close()
        defer { try? FileManager.default.removeItem(atPath: partial) }
        guard rename(partial + "/data.mdb", path + "/data.mdb") == 0 else {
            throw JetStreamError.fileFailed(reason: "moving the new replica into \(path): \(String(cString: strerror(errno)))")
        }
        try DirectorySync.sync(path)
    }

    /// When the origin made the last commit of a copy of it (its journal is the origin's), to
    /// the millisecond; nil when the journal is empty.
    private static func lastCommitTime(of store: Store) throws -> Date? {
        let last = try store.read { try $0.journalBounds().last }
        guard last > 0, let commit = try store.read({ try $0.journal(after: last - 1, limit: 1) }).first else { return nil }
        return Date(timeIntervalSince1970: (commit.timestamp.timeIntervalSince1970 * 1_000).rounded() / 1_000)
    }

    /// The stream sequence after which a store holding the origin's commits through `through`
    /// continues: its last message at or before that commit (a promotion record right after it
    /// comes next), or the stream's end.
    private static func seedPosition(through: UInt64, history: StreamHistory) throws -> UInt64 {
        guard let info = try history.connection.streamInfo(history.stream) else { return 0 }
        let first = max(info.firstSequence, 1)
        guard info.lastSequence >= first else { return info.lastSequence }
        guard let firstID = try history.id(at: first), firstID.position <= (through + 1) * 2 else {
            let begins = try history.id(at: first).map { "commit \($0.sequence)" } ?? "a message it dropped"
            throw JetStreamError.replicaNeedsSeed(stream: history.stream,
                                                  reason: "the start holds commits through \(through) and the stream begins with \(begins): the commits between are in neither")
        }
        return try history.lastSequence(atOrBefore: through * 2, in: first...info.lastSequence)
    }

    /// Sets the state of a replica seeded from a copy, and subscribes where the replica continues.
    private func start() throws {
        guard let info = try connection.streamInfo(stream) else {
            throw JetStreamError.serverRefused("following stream \(stream)", reason: "there is no such stream")
        }
        subject = info.subjects.first ?? ">"
        if state == nil, try replica.read({ try $0.journalBounds().last }) > 0 {
            // A copy of the origin: it holds the origin's commits through its journal's end.
            guard let origin = try replica.read({ try $0.storeIdentifier() }) else {
                throw JetStreamError.replicaNeedsSeed(stream: stream, reason: "the store has commits but no identifier")
            }
            let through = try replica.read { try $0.journalBounds().last }
            let streamSequence = try Self.seedPosition(through: through, history: history)
            try checkStreamCarries(origin, after: streamSequence, info: info)
            let seeded = ReplicaState(origin: origin, streamSequence: streamSequence, originSequence: through,
                                      originTime: try Self.lastCommitTime(of: replica))
            try replica.write { try $0.makeReplica(seeded) }
            state = seeded
        }
        if let state, info.firstSequence > state.streamSequence + 1 {
            throw JetStreamError.replicaNeedsSeed(stream: stream, reason: "the stream starts at message \(info.firstSequence); the replica needs message \(state.streamSequence + 1)")
        }
        subscription = try connection.subscribe(stream: stream, subject: subject, from: (state?.streamSequence ?? 0) + 1)
    }

    /// Throws unless the stream carries the commits of `origin`, whose copy the replica is: a
    /// store with commits of its own that is not a copy of the stream's origin (a primary given
    /// by mistake) must not be made its replica, which would leave it read-only, waiting for
    /// commits that are not its continuation. The message the replica continues after (or the
    /// stream's first) must be `origin`'s, or be followed by the record of `origin`'s promotion
    /// (a copy of a replica promoted right after that commit). An empty stream is checked by its
    /// subject, when it is a shipper's own (``JournalShipper/defaultSubject(of:)``).
    private func checkStreamCarries(_ origin: UUID, after streamSequence: UInt64, info: (subjects: [String], lastSequence: UInt64, firstSequence: UInt64)) throws {
        let own = origin.uuidString.lowercased()
        let first = max(info.firstSequence, 1)
        guard info.lastSequence >= first else {
            if let carried = info.subjects.first.flatMap(JournalShipper.store(ofDefaultSubject:)), carried != origin {
                throw JetStreamError.streamHoldsAnotherStore(stream: stream, found: carried.uuidString.lowercased(), expected: origin)
            }
            return
        }
        let at = max(streamSequence, first)
        guard let found = try history.id(at: at), found.store != own else { return }
        if at < info.lastSequence, let next = try history.id(at: at + 1), next.isPromotion, next.store == own { return }
        throw JetStreamError.streamHoldsAnotherStore(stream: stream, found: found.store, expected: origin)
    }

    /// A commit of the stream, checked and ready to write: its records' changes and the replica's
    /// state once it is applied.
    private struct PlannedCommit {
        /// Each record's change: the origin's exact stored record, stored as it is, or one read
        /// from JSON and held to the catalog; none for a delete.
        var changes: [ReplicatedChange]
        var next: ReplicaState
        /// The forwarded write requests the commit holds.
        var requests: [(id: String, time: Date)]
    }

    /// How far the replica is behind its stream: the messages the stream holds past the
    /// replica's, and, when some are waiting, how long ago the origin made the last commit the
    /// replica applied (an upper bound on how long the oldest waiting one has waited; 0 when
    /// none is waiting, or nil when this follower has applied nothing yet).
    public func lag() throws -> (commits: UInt64, milliseconds: Double?) {
        guard let info = try connection.streamInfo(stream) else { return (0, nil) }
        let behind = info.lastSequence > (state?.streamSequence ?? 0) ? info.lastSequence - (state?.streamSequence ?? 0) : 0
        guard behind > 0 else { return (0, 0) }
        return (behind, appliedCommitTime.map { Date().timeIntervalSince($0) * 1_000 })
    }

    /// How many commits share one of the replica's write transactions (and syncs) at most.
    static let commitsPerWrite = 256

    /// Applies the messages that arrive within `wait`, at most `limit` of them. Commits that are
    /// waiting already are applied together, each as a commit of its own in the replica's journal,
    /// sharing syncs (``Store/writeEach(_:)``).
    /// - Returns: how many commits were applied.
    @discardableResult
    public func applyAvailable(limit: Int = 1_000, wait: Duration = .milliseconds(100)) throws -> Int {
        var applied = 0
        var group: [PlannedCommit] = []
        var planned = state
        while applied + group.count < limit, let message = try subscription!.next(timeout: applied + group.count == 0 ? wait : .zero) {
            guard let envelope = try check(message, after: planned) else { continue }
            if !envelope.received.schemas.isEmpty {
                // Entities are declared between commits, as on the origin.
                applied += try write(&group)
                try declare(envelope.received.schemas)
            }
            group.append(plan(envelope.received, next: envelope.next))
            planned = envelope.next
            if group.count == Self.commitsPerWrite { applied += try write(&group) }
        }
        applied += try write(&group)
        return applied
    }

    /// Applies commits until the one with origin sequence `sequence` is applied (or forever).
    /// While the server cannot be reached the replica keeps its last applied state and the
    /// follower waits: the client's ordered consumer reconnects and resumes where it was.
    /// - Parameter keepGoing: called before each round (a round applies what arrives within
    ///   100 ms); following stops when it returns false. It can read ``state``.
    public func run(untilOriginSequence sequence: UInt64? = nil, while keepGoing: () -> Bool = { true }) throws {
        while keepGoing() {
            if let sequence, let state, state.originSequence >= sequence { return }
            do {
                try applyAvailable()
            } catch let error as JetStreamError where reseed && error.needsSeed {
                logger.warning("\(error)")
                try reseedReplica()
            }
            if ContinuousClock.now - lagReported >= .seconds(1), let lag = try? lag() {
                metrics.lagCommits.record(lag.commits)
                if let milliseconds = lag.milliseconds { metrics.lagMilliseconds.record(milliseconds) }
                lagReported = .now
            }
        }
    }

    /// ``run(untilOriginSequence:while:)`` for Swift concurrency: applies commits on a thread of
    /// its own until the one with origin sequence `sequence` is applied (or forever when nil),
    /// and stops when the calling task is cancelled, after the round in progress (at most 100 ms).
    public func follow(untilOriginSequence sequence: UInt64? = nil) async throws {
        // The follower is used by one thread at a time: this call's own, until it returns.
        nonisolated(unsafe) let follower = self
        try await OwnThread.run(name: "fs follower") { keepGoing in
            try follower.run(untilOriginSequence: sequence, while: keepGoing)
        }
    }

    /// How long a promotion tries to take the stream from a primary that keeps shipping.
    public static let promotionPatience: Duration = .seconds(30)

    /// Makes the replica a primary in its origin's place, writable and ready to ship on the
    /// same stream after the last commit it holds.
    ///
    /// - The follower first applies every commit the stream holds.
    /// - It then publishes a promotion record fenced by the stream (`Nats-Expected-Last-Sequence`
    ///   is the replica's last message): the record is stored only if no commit reached the
    ///   stream since, so every commit the stream acknowledged is in the promoted store. When
    ///   the old primary shipped meanwhile, the follower applies that too and tries again.
    /// - The record tells other replicas to follow the promoted store; the old primary's
    ///   shipper is refused from then on (``JetStreamError/supersededByPromotion(stream:promoted:through:unshipped:)``).
    /// - Snapshots of the bucket holding commits past the promotion (taken by the old primary
    ///   before they shipped) are removed: no replica can follow the stream from them.
    ///
    /// Promoting again after a crash finishes the promotion the record already made. Handles
    /// opened while the store was a replica stay read-only; open new ones.
    /// - Parameter durability: the promoted store's.
    /// - Returns: the promoted store, open for writing; ship it with ``JournalShipper``.
    public func promote(durability: Durability = .full) throws -> Store {
        try promote(durability: durability, while: { true })
    }

    /// ``promote(durability:)`` for Swift concurrency: runs on a thread of its own, and stops
    /// when the calling task is cancelled before the promotion record is published (after the
    /// round in progress, at most 100 ms), with `CancellationError`. Once the record is in the
    /// stream, the promotion finishes.
    public func promote(durability: Durability = .full) async throws -> Store {
        // The follower is used by one thread at a time: the promotion's own, until it returns.
        nonisolated(unsafe) let follower = self
        final class Result: @unchecked Sendable { var store: Store? }
        let result = Result()
        try await OwnThread.run(name: "fs promotion") { keepGoing in
            result.store = try follower.promote(durability: durability, while: keepGoing)
        }
        return result.store!
    }

    private func promote(durability: Durability, while keepGoing: () -> Bool) throws -> Store {
        // However far behind the replica is, it first applies what the stream holds.
        try catchUp(by: nil, while: keepGoing)
        let deadline = ContinuousClock.now + Self.promotionPatience
        guard let own = try replica.read({ try $0.storeIdentifier() }), state != nil else {
            throw JetStreamError.promotionFailed(stream: stream, reason: "the replica has applied no commit of the stream")
        }
        while state!.origin != own {
            guard keepGoing() else { throw CancellationError() }
            guard ContinuousClock.now < deadline else {
                throw JetStreamError.promotionFailed(stream: stream, reason: "the primary kept shipping for \(Self.promotionPatience); stop it first")
            }
            try catchUp(by: deadline, while: keepGoing)
            let current = state!
            let journalEnd = try replica.read { try $0.journalBounds().last }
            guard journalEnd == current.originSequence else {
                throw JetStreamError.promotionFailed(stream: stream, reason: "the replica's journal ends at commit \(journalEnd), not at its origin's \(current.originSequence)")
            }
            let stored = try connection.publish(subject: subject,
                                                data: ChangeEnvelope.encodePromotion(store: own, from: current.origin, through: current.originSequence),
                                                headers: ["Nats-Msg-Id": ChangeEnvelope.promotionMessageID(store: own, through: current.originSequence),
                                                          "Nats-Expected-Last-Sequence": String(current.streamSequence)])
            // Nil: the primary shipped meanwhile; apply that and try again. Otherwise the loop
            // ends once the follower has applied the record.
            // Once the record is in the stream, the promotion is made: finish it.
            if stored != nil { try catchUp(by: deadline, while: { true }) }
        }
        // The promoted store's own commits keep their records from the first on, so that a
        // shipper started after writes were made can still ship them.
        try replica.write { tx in
            try tx.removeReplicaState()
            _ = try tx.keepRecordImagesInJournal()
        }
        subscription = nil
        let through = state!.originSequence
        metrics.promotions.increment()
        logger.notice("promoted: the replica ships in its origin's place", metadata: ["after": "\(through)"])
        state = nil
        if let snapshots {
            for snapshot in try snapshots.snapshots() where snapshot.commit > through { try snapshots.remove(snapshot) }
        }
        // The promoted store's handle syncs its commits before watchers see them; once what the
        // replica wrote is synced, its mark no longer applies (a follower would repair a primary).
        let promoted = try Store(path: path, options: StoreOptions(durability: durability))
        try promoted.sync()
        try Self.setMark(nil, at: path)
        return promoted
    }

    /// Applies commits until the replica holds every message the stream held when called.
    /// - Throws: `CancellationError` when `keepGoing` turns false, ``JetStreamError/timedOut(_:)``
    ///   past `deadline`.
    private func catchUp(by deadline: ContinuousClock.Instant?, while keepGoing: () -> Bool) throws {
        guard let info = try connection.streamInfo(stream) else {
            throw JetStreamError.serverRefused("following stream \(stream)", reason: "there is no such stream")
        }
        while (state?.streamSequence ?? 0) < info.lastSequence {
            guard keepGoing() else { throw CancellationError() }
            if let deadline, ContinuousClock.now >= deadline {
                throw JetStreamError.timedOut("applying the stream through message \(info.lastSequence)")
            }
            try applyAvailable()
        }
    }

    /// The store the last message named, as written and parsed.
    private var lastOrigin: (text: String, id: UUID)?

    /// Reads a message and checks that its commit is the one after `planned`; nil when the replica
    /// already has it.
    private func check(_ message: StreamMessage, after planned: ReplicaState?) throws -> (received: ChangeEnvelope.Received, next: ReplicaState)? {
        if let planned, message.streamSequence <= planned.streamSequence { return nil }
        let envelope = try ChangeEnvelope.decode(message.data, streamSequence: message.streamSequence)
        // Every message names its store; parsing the same UUID text each time is not free.
        let origin: UUID
        if let known = lastOrigin, known.text == envelope.store {
            origin = known.id
        } else {
            guard let parsed = UUID(uuidString: envelope.store) else {
                throw JetStreamError.badEnvelope(streamSequence: message.streamSequence, reason: "store \(envelope.store) is not a UUID")
            }
            origin = parsed
            lastOrigin = (envelope.store, parsed)
        }
        if let promotion = envelope.promotion {
            // The origin changes; the history goes on. A replica seeded from the promoted
            // store at the promotion's commit has that store as its origin already.
            guard let planned else {
                throw JetStreamError.replicaNeedsSeed(stream: stream, reason: "the stream begins with a promotion record, not the origin's first commit")
            }
            guard planned.originSequence == promotion.through, planned.origin == promotion.from || planned.origin == origin else {
                throw JetStreamError.replicaNeedsSeed(stream: stream, reason: planned.origin == promotion.from && planned.originSequence > promotion.through
                    ? "the replica holds commits \(promotion.through + 1)–\(planned.originSequence) of store \(promotion.from.uuidString.lowercased()), which never reached the stream before store \(envelope.store) was promoted"
                    : "store \(envelope.store) was promoted after commit \(promotion.through) of store \(promotion.from.uuidString.lowercased()); the replica follows \(planned.origin.uuidString.lowercased()) at commit \(planned.originSequence)")
            }
            logger.notice("store \(envelope.store) was promoted in place of \(promotion.from.uuidString.lowercased()); following it",
                          metadata: ["after": "\(promotion.through)"])
            return (envelope, ReplicaState(origin: origin, streamSequence: message.streamSequence, originSequence: promotion.through,
                                           originTime: Self.originTime(envelope)))
        }
        let expected = (planned?.originSequence ?? 0) + 1
        if let planned {
            guard origin == planned.origin else {
                throw JetStreamError.streamHoldsAnotherStore(stream: stream, found: envelope.store, expected: planned.origin)
            }
            if envelope.sequence < expected { return nil }
        }
        guard envelope.sequence == expected else {
            throw JetStreamError.replicaNeedsSeed(stream: stream, reason: planned == nil
                ? "the stream begins with commit \(envelope.sequence), not the origin's first; seed the replica from a copy of the origin"
                : "the replica has applied commit \(expected - 1) and the stream's next is \(envelope.sequence)")
        }
        return (envelope, ReplicaState(origin: origin, streamSequence: message.streamSequence, originSequence: envelope.sequence,
                                       originTime: Self.originTime(envelope)))
    }

    /// When the origin made an envelope's commit, to the millisecond, as the replica's state
    /// keeps it.
    private static func originTime(_ envelope: ChangeEnvelope.Received) -> Date? {
        envelope.timeText.flatMap(FieldValue.date(fromJSONText:))
    }

    /// The changes of a commit as the replica stores them (values read from JSON take the kinds
    /// the origin's catalog gives their fields).
    private func plan(_ envelope: ChangeEnvelope.Received, next: ReplicaState) -> PlannedCommit {
        PlannedCommit(changes: envelope.entries.map { entry in
            var change = ReplicatedChange(entity: entry.entity, id: entry.id, record: entry.record)
            if case var .fields(fields)? = entry.record, let schema = schemas[entry.entity] {
                for (name, value) in fields { fields[name] = schema.coerce(value, toField: name) }
                change.record = .fields(fields)
            }
            return change
        }, next: next, requests: envelope.requests)
    }

    /// Writes the planned commits, each in a transaction of its own with the replica's state,
    /// sharing syncs; empties `group`. Each checks that the replica is where the one before left
    /// it, so a commit that fails leaves every later one unapplied.
    private func write(_ group: inout [PlannedCommit]) throws -> Int {
        guard !group.isEmpty else { return 0 }
        var before = state
        let bodies = group.map { commit -> (WriteTransaction) throws -> Void in
            let expected = before
            before = commit.next
            return { tx in
                let current = try tx.replicaState()
                guard current == nil ? expected == nil : current!.samePosition(as: expected) else {
                    throw JetStreamError.replicaNeedsSeed(stream: self.stream, reason: "commit \(commit.next.originSequence) found the replica elsewhere than after the commit before it")
                }
                for change in commit.changes {
                    try tx.applyReplicated(change)
                }
                // Remembered as the primary remembers them by default: once promoted, the
                // replica answers a retried request instead of applying it again.
                for request in commit.requests {
                    try tx.rememberRequest(AppliedRequest(id: request.id, sequence: commit.next.originSequence, time: request.time),
                                           keepingAtMost: Self.requestMemory.rememberedRequests,
                                           since: Date().addingTimeInterval(-Self.requestMemory.rememberedFor.seconds))
                }
                try tx.setReplicaState(commit.next)
            }
        }
        let outcomes = try replica.writeEach(bodies)
        defer { group.removeAll(keepingCapacity: true) }
        for (outcome, commit) in zip(outcomes, group) {
            try outcome.get()
            state = commit.next
        }
        metrics.appliedCommits.increment(by: Int64(group.count))
        metrics.appliedCommit.record(state?.originSequence ?? 0)
        if let time = state?.originTime { appliedCommitTime = time }
        return group.count
    }

    /// Declares entities whose catalog entries the replica lacks or has otherwise.
    private func declare(_ received: [String: CatalogEntity]) throws {
        guard !received.isEmpty else { return }
        let catalog = try replica.catalog
        for (name, entity) in received {
            schemas[name] = entity
            let current = catalog.entities[name]
            if current?.primaryKeyKind == entity.primaryKeyKind, current?.indexes.map(\.definition) == entity.indexes.map(\.definition),
               current?.declaredFields == entity.declaredFields, current?.declaredKinds == entity.declaredKinds { continue }
            // The origin's declared fields and kinds come along, so that the replica holds what
            // it applies to what the origin's types read.
            try replica.declare(like: entity)
        }
    }
}
