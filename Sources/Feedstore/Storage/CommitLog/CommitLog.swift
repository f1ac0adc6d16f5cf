import Foundation

/// A log of commits ahead of LMDB: the file `commits.log` beside the data file. A store that
/// keeps one appends a commit's changes (``LMDBMutationLog``) here, commits them to LMDB without
/// syncing it, and syncs this file once (``CommitLogKeeper/commit(_:mutations:)``): one small sync
/// a commit, where LMDB's own commit syncs its pages, then its meta page.
///
/// A checkpoint syncs LMDB's file and starts the log again (a new epoch), recording the
/// checkpoint's commit and the body of its meta page. Until the next checkpoint, the store keeps
/// a read transaction on that commit, so that LMDB reuses none of its pages: whatever later
/// unsynced commits wrote, the checkpoint stays whole on disk. After a crash, the meta page is put
/// back and the log's records are made again, in order, up to the first one that is not whole.
///
/// Layout: two header slots at offsets 0 and 512 (the valid one with the higher epoch counts),
/// each `magic, epoch, transaction, machine boot (16 bytes), meta body length, meta body,
/// CRC-32`; records from offset 4,096, each `payload length, CRC-32 (of epoch, transaction and
/// payload), epoch, transaction, payload`, little-endian. The file is written ahead with zeros, so that appending and syncing
/// overwrite blocks already allocated and change no file size.
final class CommitLog {
    static let fileName = "commits.log"
    static let magic: [UInt8] = Array("FSLOG002".utf8)
    static let slotSize = 512, dataStart = 4_096
    /// How much the file grows by when an append would pass its end.
    static let growth = 4 << 20
    static let recordHeaderSize = 24

    /// What a checkpoint recorded.
    struct Checkpoint: Equatable {
        var epoch: UInt64
        /// The LMDB transaction the checkpoint synced.
        var transaction: UInt64
        /// That transaction's meta page body (``LMDBMetaPages/newestMeta(directory:)``).
        var metaBody: [UInt8]
        /// The start of the machine the checkpoint was made in (``MachineBoot/identity``).
        var boot: [UInt8]
    }

    let path: String
    /// The store's directory, for errors.
    private let directory: String
    private var descriptor: Int32
    /// The newest valid checkpoint, nil for a log that has none yet.
    private(set) var checkpoint: Checkpoint?
    /// Where the next record goes, and where the last one appended since the checkpoint starts.
    private var tail = CommitLog.dataStart
    private var lastRecord: Int?
    /// The file's size: written ahead up to here.
    private var allocated: Int
    /// The transaction the next record must be for.
    private var nextTransaction: UInt64 = 0

    /// Opens (or creates) the log in `directory`; `readOnly` opens an existing one to read.
    init(directory: String, mode: mode_t, readOnly: Bool = false) throws {
        path = directory + "/" + Self.fileName
        self.directory = directory
        let existed = FileManager.default.fileExists(atPath: path)
        descriptor = open(path, readOnly ? O_RDONLY | O_CLOEXEC : O_RDWR | O_CREAT | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw FeedstoreError.commitLogFailed(path: directory, reason: "opening \(path): \(String(cString: strerror(errno)))") }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let reason = "reading \(path)'s size: \(String(cString: strerror(errno)))"
            Self.closeFile(descriptor)
            throw FeedstoreError.commitLogFailed(path: directory, reason: reason)
        }
        allocated = Int(info.st_size)
        checkpoint = try [0, Self.slotSize].compactMap { try readSlot(at: $0) }.max { $0.epoch < $1.epoch }
        if let checkpoint { nextTransaction = checkpoint.transaction + 1 }
        // Its name must outlive a power loss as surely as what it will hold.
        if !existed { try DirectorySync.sync(directory) }
    }

    deinit { close() }

    /// Closes the file, letting go of its lock.
    func close() {
        guard descriptor >= 0 else { return }
        Self.closeFile(descriptor)
        descriptor = -1
    }

    private static func closeFile(_ descriptor: Int32) {
        #if canImport(Glibc)
        Glibc.close(descriptor)
        #else
        Darwin.close(descriptor)
        #endif
    }

    /// Takes the log for this process (an exclusive `flock`, let go when the log closes): the
    /// one process that writes the store. False when another process holds it.
    ///
    /// A forked child may hold the lock of a log this process has just closed
    /// (``ExclusiveFlock``): while no other process has the environment open (LMDB's lock file
    /// tells), the lock is tried again for up to `patience`; a process that does have it open is
    /// answered at once. This process must not have the environment open.
    func lockForWriting(patience: Duration = .seconds(2)) -> Bool {
        ExclusiveFlock.take(descriptor, patience: patience) {
            (try? LMDBLockFile.withNoOtherProcess(directory: directory) {}) != nil
        }
    }

    /// Whether a process holds the log for writing (``lockForWriting(patience:)``), this one
    /// through another descriptor included. (A shared lock taken through a descriptor of its own
    /// fails only then; it is let go at once.)
    var isLockedForWriting: Bool {
        let probe = open(path, O_RDONLY | O_CLOEXEC)
        guard probe >= 0 else { return false }
        defer { Self.closeFile(probe) }
        return flock(probe, LOCK_SH | LOCK_NB) != 0
    }

    /// The file's size, written ahead.
    var fileSize: Int { allocated }

    /// Bytes of records since the checkpoint.
    var recordBytes: Int { tail - Self.dataStart }

    /// The records after the checkpoint that are whole and follow one another (transaction after
    /// transaction), in order: what a recovery makes again. The log's tail is set after them.
    func records() throws -> [(transaction: UInt64, payload: [UInt8])] {
        guard let checkpoint else { return [] }
        var found: [(UInt64, [UInt8])] = []
        var at = Self.dataStart
        var expected = checkpoint.transaction + 1
        while at + Self.recordHeaderSize <= allocated {
            let header = try read(Self.recordHeaderSize, at: at)
            let length = Int(Self.word32(header, 0)), crc = Self.word32(header, 4)
            let epoch = Self.word64(header, 8), transaction = Self.word64(header, 16)
            guard epoch == checkpoint.epoch, transaction == expected, at + Self.recordHeaderSize + length <= allocated else { break }
            let payload = try read(length, at: at + Self.recordHeaderSize)
            guard CRC32.checksum(payload, continuing: CRC32.checksum(Array(header[8..<24]))) == crc else { break }
            found.append((transaction, payload))
            at += Self.recordHeaderSize + length
            expected += 1
        }
        tail = at
        lastRecord = nil
        nextTransaction = expected
        return found
    }

    /// Appends the record of LMDB transaction `transaction` (the one after the last appended or
    /// checkpointed). Not durable until ``sync()``.
    /// The payload is `parts` one after the other.
    func append(_ parts: [UInt8]..., transaction: UInt64) throws {
        guard checkpoint != nil else { throw failure("\(path) has no checkpoint to append after") }
        guard transaction == nextTransaction else {
            throw failure("\(path): a record of transaction \(transaction) where \(nextTransaction) comes next")
        }
        let payloadCount = parts.reduce(0) { $0 + $1.count }
        var record: [UInt8] = []
        record.reserveCapacity(Self.recordHeaderSize + payloadCount)
        Self.append32(UInt32(payloadCount), to: &record)
        Self.append32(0, to: &record)
        Self.append64(checkpoint!.epoch, to: &record)
        Self.append64(transaction, to: &record)
        for part in parts { record += part }
        let crc = record.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[8...])) }
        record.withUnsafeMutableBytes { $0.storeBytes(of: crc.littleEndian, toByteOffset: 4, as: UInt32.self) }
        if tail + record.count > allocated { try grow(to: tail + record.count) }
        try write(record, at: tail)
        lastRecord = tail
        tail += record.count
        nextTransaction = transaction + 1
    }

    /// Takes back the last record appended, of an LMDB transaction that did not commit after
    /// all: its header is zeroed and synced, so that no recovery makes it again, and the next
    /// record goes where it was.
    func takeBackLastRecord() throws {
        guard let start = lastRecord else { throw failure("\(path): no record appended since the checkpoint to take back") }
        try write([UInt8](repeating: 0, count: Self.recordHeaderSize), at: start)
        try sync()
        tail = start
        lastRecord = nil
        nextTransaction -= 1
    }

    /// Makes every record appended so far durable (`fdatasync`: the blocks are allocated already).
    func sync() throws {
        guard FileSync.data(descriptor) else { throw failure("syncing \(path): \(String(cString: strerror(errno)))") }
    }

    /// Starts a new epoch after a checkpoint of LMDB transaction `transaction`, whose meta page
    /// body is `metaBody` (LMDB's file is synced through it): writes the header slot the current
    /// checkpoint is not in, syncs it, and empties the log.
    func startEpoch(transaction: UInt64, metaBody: [UInt8]) throws {
        let epoch = (checkpoint?.epoch ?? 0) + 1
        if allocated < Self.dataStart { try grow(to: Self.growth) }
        var slot = Self.magic
        Self.append64(epoch, to: &slot)
        Self.append64(transaction, to: &slot)
        slot += MachineBoot.identity
        Self.append32(UInt32(metaBody.count), to: &slot)
        slot += metaBody
        Self.append32(CRC32.checksum(slot), to: &slot)
        // The slot of the older checkpoint: a torn write leaves the newer one.
        try write(slot, at: epoch % 2 == 0 ? 0 : Self.slotSize)
        try sync()
        checkpoint = Checkpoint(epoch: epoch, transaction: transaction, metaBody: metaBody, boot: MachineBoot.identity)
        tail = Self.dataStart
        lastRecord = nil
        nextTransaction = transaction + 1
    }

    /// Removes the log, once LMDB's file is synced with every commit it held, for a store that
    /// goes on without one.
    func retire() throws {
        guard unlink(path) == 0 || errno == ENOENT else { throw failure("removing \(path): \(String(cString: strerror(errno)))") }
        try DirectorySync.sync((path as NSString).deletingLastPathComponent)
        checkpoint = nil
    }

    private func readSlot(at offset: Int) throws -> Checkpoint? {
        guard offset + Self.slotSize <= allocated else { return nil }
        let slot = try read(Self.slotSize, at: offset)
        guard Array(slot[0..<8]) == Self.magic else { return nil }
        let length = Int(Self.word32(slot, 40))
        guard 44 + length + 4 <= Self.slotSize else { return nil }
        guard CRC32.checksum(Array(slot[0..<(44 + length)])) == Self.word32(slot, 44 + length) else { return nil }
        return Checkpoint(epoch: Self.word64(slot, 8), transaction: Self.word64(slot, 16), metaBody: Array(slot[44..<(44 + length)]),
                          boot: Array(slot[24..<40]))
    }

    /// Writes zeros up to at least `size` (a multiple of ``growth``) and syncs them with the
    /// file's new size, so that later appends change no file size.
    private func grow(to size: Int) throws {
        let target = (size + Self.growth - 1) / Self.growth * Self.growth
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        var at = allocated
        while at < target {
            let count = min(zeros.count, target - at)
            try zeros.withUnsafeBytes { try write(UnsafeRawBufferPointer(rebasing: $0.prefix(count)), at: at) }
            at += count
        }
        guard FileSync.all(descriptor) else { throw failure("syncing \(path): \(String(cString: strerror(errno)))") }
        allocated = target
    }

    private func write(_ bytes: [UInt8], at offset: Int) throws {
        try bytes.withUnsafeBytes { try write($0, at: offset) }
    }

    private func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws {
        var done = 0
        while done < bytes.count {
            let n = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            guard n > 0 else { throw failure("writing \(path): \(String(cString: strerror(errno)))") }
            done += n
        }
    }

    private func read(_ count: Int, at offset: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            guard n > 0 else { throw failure("reading \(path): \(n == 0 ? "it ends early" : String(cString: strerror(errno)))") }
            done += n
        }
        return bytes
    }

    private func failure(_ reason: String) -> FeedstoreError { .commitLogFailed(path: directory, reason: reason) }

    private static func append32(_ value: UInt32, to out: inout [UInt8]) { withUnsafeBytes(of: value.littleEndian) { out += $0 } }
    private static func append64(_ value: UInt64, to out: inout [UInt8]) { withUnsafeBytes(of: value.littleEndian) { out += $0 } }
    private static func word32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        bytes.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: at, as: UInt32.self)) }
    }
    private static func word64(_ bytes: [UInt8], _ at: Int) -> UInt64 {
        bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: at, as: UInt64.self)) }
    }
}
