@_spi(Replication) import Feedstore
import Foundation

/// A store's snapshot in a bucket: a compacted copy of the store as of one commit, from which a
/// replica starts without the stream's history before that commit.
public struct Snapshot: Sendable, Equatable {
    /// The object's name in the bucket: `commit-<commit>`.
    public var name: String
    /// The store it copies.
    public var store: UUID
    /// The last commit it holds.
    public var commit: UInt64
    /// Its size in bytes (the copy's data file).
    public var size: UInt64
    /// `SHA-256=<base64url>` of its bytes.
    public var digest: String
    /// When it was stored.
    public var time: Date?
}

/// The snapshots of a store in a JetStream Object Store bucket (see ``ObjectStoreBucket`` for the
/// layout): each is a compacted copy of the store, named by the commit it holds and described by
/// the headers `Feedstore-Store` and `Feedstore-Commit`, so that any NATS client lists and
/// fetches them (`nats object ls <bucket>`, `nats object get <bucket> commit-1003`).
public final class SnapshotBucket {
    /// The bucket's name.
    public var name: String { bucket.name }

    private let connection: NATSConnection
    private let bucket: ObjectStoreBucket

    /// The bucket a shipper of `stream` keeps its snapshots in unless told another.
    public static func defaultName(forStream stream: String) -> String { "\(stream)-snapshots" }

    /// Opens the bucket `name`, creating it when `create` is true and it does not exist.
    /// - Throws: ``JetStreamError`` when the server cannot be reached, or the bucket does not
    ///   exist and `create` is false.
    public convenience init(connection: JetStreamConnection, name: String, create: Bool = false) throws {
        try self.init(NATSConnection(connection), name: name, create: create)
    }

    init(_ connection: NATSConnection, name: String, create: Bool) throws {
        self.connection = connection
        bucket = try ObjectStoreBucket(connection: connection, name: name, create: create)
    }

    /// The bucket's Feedstore snapshots, oldest commit first (other objects are left out).
    public func snapshots() throws -> [Snapshot] {
        try bucket.list().compactMap(Self.snapshot(of:)).sorted { $0.commit < $1.commit }
    }

    private static func snapshot(of info: ObjectInfo) -> Snapshot? {
        guard let store = info.header("Feedstore-Store").flatMap(UUID.init(uuidString:)),
              let commit = info.header("Feedstore-Commit").flatMap(UInt64.init)
        else { return nil }
        return Snapshot(name: info.name, store: store, commit: commit, size: info.size, digest: info.digest ?? "",
                        time: ChangeEnvelope.timeFormatter.date(from: info.mtime))
    }

    /// Takes a snapshot of `store` and stores it, then removes all but the newest `keep`
    /// snapshots of the bucket.
    ///
    /// The store is copied compacted (LMDB's copy, one read transaction: writers go on) into
    /// `snapshot-<bucket>.partial` in its directory, and the copy is streamed to the bucket chunk by chunk:
    /// the snapshot is never held whole in memory, and a copy on disk names the exact commit it
    /// holds. The copy is not synced, so that its pages need not reach the disk before it is
    /// deleted, nor hold up the store's own commits.
    /// - Parameter progress: called with the bytes stored so far, and the copy's size.
    @discardableResult
    /// - Parameter bytesPerSecond: at most this many bytes are sent per second (nil: no limit).
    public func publish(from store: Store, keep: Int = 2, bytesPerSecond: UInt64? = nil,
                        progress: (_ done: UInt64, _ total: UInt64) -> Void = { _, _ in }) throws -> Snapshot
    {
        let copy = store.path + "/snapshot-\(name).partial"
        let fm = FileManager.default
        try? fm.removeItem(atPath: copy)
        defer { try? fm.removeItem(atPath: copy) }
        try store.temporaryCopy(to: copy, compact: true)
        let (identifier, commit): (UUID?, UInt64) = try {
            let copied = try Store(path: copy, options: StoreOptions(readOnly: true))
            defer { copied.close() }
            return try copied.read { (try $0.storeIdentifier(), try $0.journalBounds().last) }
        }()
        guard let identifier else {
            throw FeedstoreError.readOnly(path: store.path, reason: "a store without an identifier (format 2, opened read-only) has no snapshots")
        }
        let file = copy + "/data.mdb"
        let descriptor = open(file, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw JetStreamError.fileFailed(reason: "opening \(file): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var info = stat()
        fstat(descriptor, &info)
        let total = UInt64(info.st_size)
        let name = "commit-\(commit)"
        let object = try bucket.put(name, from: descriptor,
                                    description: "Feedstore snapshot of store \(identifier.uuidString.lowercased()) through commit \(commit)",
                                    headers: ["Feedstore-Store": [identifier.uuidString.lowercased()], "Feedstore-Commit": [String(commit)]],
                                    bytesPerSecond: bytesPerSecond, progress: { progress($0, total) })
        let snapshot = Self.snapshot(of: object)!
        try prune(keeping: max(keep, 1))
        return snapshot
    }

    /// Removes `snapshot` from the bucket.
    public func remove(_ snapshot: Snapshot) throws {
        guard let info = try bucket.info(snapshot.name) else { return }
        try bucket.delete(info)
    }

    /// Removes all but the newest `keep` snapshots.
    public func prune(keeping keep: Int) throws {
        let objects = try bucket.list().compactMap { info in Self.snapshot(of: info).map { (info, $0.commit) } }
        for (info, _) in objects.sorted(by: { $0.1 > $1.1 }).dropFirst(keep) { try bucket.delete(info) }
    }

    /// Fetches `snapshot` into `directory` as a store's data file.
    ///
    /// The bytes go to `restore.partial/data.mdb` in `directory`; once whole and their digest
    /// checked, `prepare` may open the store there (a replica's follower records its state), and
    /// the file is moved to `directory/data.mdb` with one rename, synced. A restore cut short at
    /// any point leaves no `data.mdb`: the next one starts over.
    /// - Parameters:
    ///   - directory: an existing directory holding no store.
    ///   - prepare: called with the path of the restored store before it is moved into place.
    ///   - progress: called with the bytes fetched so far, and the snapshot's size.
    public func restore(_ snapshot: Snapshot, into directory: String, prepare: (String) throws -> Void = { _ in },
                        progress: (_ done: UInt64, _ total: UInt64) -> Void = { _, _ in }) throws
    {
        guard let info = try bucket.info(snapshot.name) else {
            throw JetStreamError.noSnapshot(bucket: name, reason: "snapshot \(snapshot.name) was removed")
        }
        let fm = FileManager.default
        let partial = directory + "/restore.partial"
        try? fm.removeItem(atPath: partial)
        do {
            try fm.createDirectory(atPath: partial, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        } catch {
            throw JetStreamError.fileFailed(reason: "creating \(partial): \(error.localizedDescription)")
        }
        defer { try? fm.removeItem(atPath: partial) }
        let file = partial + "/data.mdb"
        let descriptor = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw JetStreamError.fileFailed(reason: "creating \(file): \(String(cString: strerror(errno)))") }
        do {
            defer { close(descriptor) }
            try bucket.get(info, into: descriptor, progress: { progress($0, info.size) })
            guard fsync(descriptor) == 0 else { throw JetStreamError.fileFailed(reason: "syncing \(file): \(String(cString: strerror(errno)))") }
        }
        try prepare(partial)
        guard rename(file, directory + "/data.mdb") == 0 else {
            throw JetStreamError.fileFailed(reason: "moving the restored store into \(directory): \(String(cString: strerror(errno)))")
        }
        try DirectorySync.sync(directory)
    }
}
