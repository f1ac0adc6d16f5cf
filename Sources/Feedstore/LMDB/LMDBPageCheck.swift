#if BundledLMDB
internal import CLMDB
#else
internal import CFeedstoreLMDB
#endif
import Foundation

/// A structural check of LMDB's data file that reads pages with `pread`, never through the
/// map, so that damage which would crash LMDB (a bad page number, a node offset past its page)
/// is reported instead.
///
/// It checks the snapshot of a read transaction, which keeps that snapshot's pages from being
/// reused while the check runs: the meta page; every tree (the free list, the main database
/// and each named database) page by page, with header, node offsets and sizes, key order within
/// pages and between a branch's children, leaf depth and overflow runs; each tree's page and
/// entry totals against its record; and that every page up to the last is used by exactly one
/// tree or listed free, once. The layout is LMDB 0.9's on 64-bit little-endian machines.
struct LMDBPageCheck {
    // Offsets in LMDB 0.9's structures (mdb.c): page header, node header, meta page, tree record.
    static let pageHeaderSize = 16
    static let nodeHeaderSize = 8
    static let treeRecordSize = 48
    static let metaMagic: UInt32 = 0xBEEF_C0DE

    static let branchFlag: UInt16 = 0x01, leafFlag: UInt16 = 0x02, overflowFlag: UInt16 = 0x04
    static let bigDataFlag: UInt16 = 0x01, subDatabaseFlag: UInt16 = 0x02, duplicatesFlag: UInt16 = 0x04
    static let noPage = UInt64.max

    /// One tree's record: in the meta page (free list, main database) or in the main database.
    struct TreeRecord {
        var flags: UInt16
        var depth: Int
        var branchPages: UInt64, leafPages: UInt64, overflowPages: UInt64, entries: UInt64
        var root: UInt64

        init(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
            func word(_ at: Int) -> UInt64 { UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + at, as: UInt64.self)) }
            flags = UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt16.self))
            depth = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 6, as: UInt16.self)))
            branchPages = word(8)
            leafPages = word(16)
            overflowPages = word(24)
            entries = word(32)
            root = word(40)
        }
    }

    private struct Tally {
        var branchPages: UInt64 = 0, leafPages: UInt64 = 0, overflowPages: UInt64 = 0, entries: UInt64 = 0
    }

    private let file: Int32
    private let pageSize: Int
    private let lastPage: UInt64
    /// Pages met so far, by page number.
    private(set) var seen: [Bool]
    private(set) var problems: [String] = []
    private let maximumProblems = 30
    private var progress: ((Int, Int) -> Void)?
    private var pagesRead = 0
    /// Named databases found in the main database, checked after it.
    private var named: [(name: String, record: TreeRecord)] = []

    /// The map size the newest meta page of `environment`'s file records: the writer's map at
    /// its last commit. A read-only handle maps only what it reads, so its own map size says
    /// nothing of the room the writer has. Nil when no meta page can be read.
    static func committedMapSize(of environment: LMDBEnvironment) -> Int? {
        let file = open(environment.path + "/data.mdb", O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return nil }
        defer { close(file) }
        var newest: (txnid: UInt64, mapSize: UInt64)?
        for page in 0..<2 {
            var bytes = [UInt8](repeating: 0, count: 256)
            guard pread(file, &bytes, bytes.count, off_t(page * environment.pageSize)) == bytes.count else { continue }
            bytes.withUnsafeBytes { bytes in
                guard UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 16, as: UInt32.self)) == metaMagic else { return }
                let txnid = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 144, as: UInt64.self))
                let mapSize = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 32, as: UInt64.self))
                if txnid >= newest?.txnid ?? 0 { newest = (txnid, mapSize) }
            }
        }
        return newest.map { Int($0.mapSize) }
    }

    /// Checks the file of `environment` as `txn` sees it; returns what is wrong (empty when the
    /// structure is sound), or nil when commits since `txn` began overwrote its meta page (try
    /// again with a new transaction). With `only`, just the main database and the named
    /// databases listed are checked (a few pages), and pages are not accounted for.
    /// `progress` gets (pages read, pages in use).
    static func check(_ environment: LMDBEnvironment, in txn: borrowing LMDBTransaction, only: Set<String>? = nil,
                      progress: ((Int, Int) -> Void)? = nil) throws -> [String]?
    {
        let path = environment.path + "/data.mdb"
        let file = open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return ["data.mdb cannot be read: \(String(cString: strerror(errno)))"] }
        defer { close(file) }
        switch snapshotMeta(file: file, environment: environment, in: txn) {
        case nil: return nil
        case .problem(let problem): return [problem]
        case .meta(let free, let main, let lastPage):
            var check = LMDBPageCheck(file: file, pageSize: environment.pageSize, lastPage: lastPage, progress: progress)
            check.run(free: free, main: main, only: only)
            return check.problems
        }
    }

    /// The meta page of a read transaction's snapshot, or what is wrong with it.
    enum SnapshotMeta {
        case meta(free: TreeRecord, main: TreeRecord, lastPage: UInt64)
        case problem(String)
    }

    /// Reads the meta page of `txn`'s snapshot from `file` (the data file). Nil when commits
    /// since `txn` began overwrote it.
    static func snapshotMeta(file: Int32, environment: LMDBEnvironment, in txn: borrowing LMDBTransaction) -> SnapshotMeta? {
        let snapshot = UInt64(mdb_txn_id(txn.handle))
        // The transaction's meta page, read first: a later commit may overwrite it, though not
        // the pages it points to.
        var meta: [UInt8]?
        var newest: UInt64 = 0
        for page in 0..<2 {
            var bytes = [UInt8](repeating: 0, count: 256)
            let offset = page * environment.pageSize
            guard pread(file, &bytes, bytes.count, off_t(offset)) == bytes.count else { continue }
            let txnid = bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 144, as: UInt64.self)) }
            let magic = bytes.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: 16, as: UInt32.self)) }
            guard magic == metaMagic else { continue }
            if txnid == snapshot { meta = bytes }
            newest = max(newest, txnid)
        }
        guard let meta else {
            // Meta pages alternate, so two commits since the transaction began replace its own.
            if newest > snapshot + 1 { return nil }
            return .problem("no meta page holds the snapshot being checked (transaction \(snapshot))")
        }
        return meta.withUnsafeBytes { bytes in
            let lastPage = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 136, as: UInt64.self))
            let pageSize = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 40, as: UInt32.self)))
            guard pageSize == environment.pageSize else { return .problem("the meta page says pages of \(pageSize) bytes") }
            guard lastPage >= 1, lastPage < 1 << 36 else { return .problem("the meta page says the last page is \(lastPage)") }
            return .meta(free: TreeRecord(bytes, at: 40), main: TreeRecord(bytes, at: 88), lastPage: lastPage)
        }
    }

    init(file: Int32, pageSize: Int, lastPage: UInt64, progress: ((Int, Int) -> Void)?) {
        self.file = file
        self.pageSize = pageSize
        self.lastPage = lastPage
        self.seen = [Bool](repeating: false, count: Int(lastPage) + 1)
        self.progress = progress
        seen[0] = true
        seen[1] = true
    }

    private mutating func report(_ problem: String) {
        if problems.count < maximumProblems { problems.append(problem) }
    }

    private mutating func run(free: TreeRecord, main: TreeRecord, only: Set<String>?) {
        if only == nil { walk(free, name: "the free list", integerKeys: true) }
        walk(main, name: "the main database", integerKeys: false)
        for database in named where problems.isEmpty && only.map({ $0.contains(database.name) }) ?? true {
            walk(database.record, name: "database \(database.name)", integerKeys: false)
        }
        guard problems.isEmpty, only == nil else { return }
        let unaccounted = seen.lazy.filter { !$0 }.count
        if unaccounted > 0 { report("\(unaccounted) pages are neither in a tree nor free") }
    }

    /// Runs the check on a fresh read transaction until one keeps its meta page long enough.
    static func check(_ environment: LMDBEnvironment, begin: () throws -> LMDBTransaction, only: Set<String>? = nil,
                      progress: ((Int, Int) -> Void)? = nil) throws -> [String]
    {
        for _ in 0..<100 {
            if let problems = try check(environment, in: try begin(), only: only, progress: progress) { return problems }
        }
        throw busy(environment)
    }

    static func busy(_ environment: LMDBEnvironment) -> FeedstoreError {
        .lmdb(LMDBError(code: EBUSY, operation: "page check: the store kept changing"), path: environment.path)
    }

    /// Claims a page for one use; false (and a problem) when it is out of range or used twice.
    private mutating func claim(_ page: UInt64, _ what: String) -> Bool {
        guard page >= 2, page <= lastPage else {
            report("\(what) points to page \(page), outside 2…\(lastPage)")
            return false
        }
        guard !seen[Int(page)] else {
            report("\(what) uses page \(page), which is used elsewhere too")
            return false
        }
        seen[Int(page)] = true
        return true
    }

    /// Reads `count` pages from `page` on, which `user` uses; nil (and a problem) when the file
    /// ends before them.
    private mutating func read(_ page: UInt64, count: Int = 1, user: String) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: pageSize * count)
        let got = pread(file, &bytes, bytes.count, off_t(page) * off_t(pageSize))
        guard got == bytes.count else {
            var status = stat()
            let size = fstat(file, &status) == 0 ? " (\(status.st_size) bytes)" : ""
            report("page \(page), which \(user) uses, lies past the end of the file\(size)")
            return nil
        }
        pagesRead += count
        if pagesRead % 4_096 == 0 { progress?(pagesRead, Int(lastPage) + 1) }
        return bytes
    }

    // MARK: Trees

    mutating func walk(_ record: TreeRecord, name: String, integerKeys: Bool) {
        if record.root == Self.noPage {
            if record.entries != 0 || record.depth != 0 { report("\(name) has no root but claims \(record.entries) entries") }
            return
        }
        guard record.depth >= 1, record.depth <= 32 else { return report("\(name) claims a depth of \(record.depth)") }
        if record.flags & 0x7E != 0 && !integerKeys { return report("\(name) has flags \(record.flags) this store never sets") }
        var tally = Tally()
        walkPage(record.root, level: 1, depth: record.depth, low: nil, high: nil, name: name, integerKeys: integerKeys, tally: &tally)
        guard problems.isEmpty else { return }
        if tally.branchPages != record.branchPages || tally.leafPages != record.leafPages || tally.overflowPages != record.overflowPages {
            report("\(name) holds \(tally.branchPages)/\(tally.leafPages)/\(tally.overflowPages) branch/leaf/overflow pages; "
                + "its record says \(record.branchPages)/\(record.leafPages)/\(record.overflowPages)")
        }
        if tally.entries != record.entries { report("\(name) holds \(tally.entries) entries; its record says \(record.entries)") }
    }

    /// Checks a page and its subtree; every key must be at or above `low` and below `high`.
    private mutating func walkPage(_ page: UInt64, level: Int, depth: Int, low: [UInt8]?, high: [UInt8]?, name: String,
                                   integerKeys: Bool, tally: inout Tally)
    {
        guard problems.isEmpty, claim(page, name), let bytes = read(page, user: name) else { return }
        let place = "\(name), page \(page)"
        let (number, flags, lower, upper) = bytes.withUnsafeBytes { raw in
            (UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self)),
             UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: 10, as: UInt16.self)),
             Int(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: 12, as: UInt16.self))),
             Int(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: 14, as: UInt16.self))))
        }
        guard number == page else { return report("\(place): its header says page \(number)") }
        let isBranch = flags & 0x7F == Self.branchFlag, isLeaf = flags & 0x7F == Self.leafFlag
        guard isBranch || isLeaf else { return report("\(place): flags \(flags) make it neither a branch nor a leaf") }
        guard isLeaf == (level == depth) else { return report("\(place): a \(isLeaf ? "leaf" : "branch") at level \(level) of \(depth)") }
        guard lower >= Self.pageHeaderSize, lower % 2 == 0, lower <= upper, upper <= pageSize else {
            return report("\(place): free space \(lower)…\(upper) is out of bounds")
        }
        let count = (lower - Self.pageHeaderSize) / 2
        guard count >= 1 else { return report("\(place): an empty page in a tree") }
        if isBranch { tally.branchPages += 1 } else { tally.leafPages += 1 }

        // Nodes: offset, key and (leaf) data within the page, keys ascending and within bounds.
        var nodes: [(key: [UInt8], flags: UInt16, size: Int, data: Int, child: UInt64)] = []
        nodes.reserveCapacity(count)
        let ok: Bool = bytes.withUnsafeBytes { raw in
            for i in 0..<count {
                let offset = Int(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: Self.pageHeaderSize + 2 * i, as: UInt16.self)))
                guard offset >= upper, offset + Self.nodeHeaderSize <= pageSize else {
                    report("\(place): node \(i) at offset \(offset) is out of bounds")
                    return false
                }
                let lo = UInt64(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
                let hi = UInt64(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 2, as: UInt16.self)))
                let nodeFlags = UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt16.self))
                let keySize = Int(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 6, as: UInt16.self)))
                let keyStart = offset + Self.nodeHeaderSize
                let dataSize = isBranch ? 0 : Int(lo | hi << 16)
                let stored = isBranch ? 0 : (nodeFlags & Self.bigDataFlag != 0 ? 8 : dataSize)
                guard keyStart + keySize + stored <= pageSize else {
                    report("\(place): node \(i) runs past the end of the page")
                    return false
                }
                let child = isBranch ? lo | hi << 16 | UInt64(nodeFlags) << 32 : 0
                nodes.append((Array(raw[keyStart..<(keyStart + keySize)]), isBranch ? 0 : nodeFlags, dataSize, keyStart + keySize, child))
            }
            return true
        }
        guard ok else { return }
        func precedes(_ a: [UInt8], _ b: [UInt8]) -> Bool {
            guard integerKeys else { return a.lexicographicallyPrecedes(b) }
            return Self.integer(a) < Self.integer(b)
        }
        if integerKeys, let bad = nodes.indices.first(where: { (isLeaf || $0 > 0) && nodes[$0].key.count != 8 }) {
            return report("\(place): key \(bad) of \(nodes[bad].key.count) bytes where 8 are due")
        }
        // A branch's first key is a placeholder: its child's keys start at the parent's bound.
        let firstOrdered = isBranch ? 1 : 0
        for i in firstOrdered..<nodes.count {
            let key = nodes[i].key
            if i > firstOrdered, !precedes(nodes[i - 1].key, key) { return report("\(place): keys \(i - 1) and \(i) are out of order") }
            if let low, precedes(key, low) { return report("\(place): key \(i) sorts before its parent's bound") }
            if let high, !precedes(key, high) { return report("\(place): key \(i) sorts at or after its parent's bound") }
        }

        if isBranch {
            for i in nodes.indices where problems.isEmpty {
                walkPage(nodes[i].child, level: level + 1, depth: depth, low: i == 0 ? low : nodes[i].key,
                         high: i + 1 < nodes.count ? nodes[i + 1].key : high, name: name, integerKeys: integerKeys, tally: &tally)
            }
            return
        }
        for (i, node) in nodes.enumerated() where problems.isEmpty {
            tally.entries += 1
            if node.flags & Self.duplicatesFlag != 0 { return report("\(place): node \(i) has duplicates, which this store never writes") }
            var value: [UInt8]
            if node.flags & Self.bigDataFlag != 0 {
                let first = bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: node.data, as: UInt64.self)) }
                guard let data = overflow(first, size: node.size, name: name, tally: &tally) else { return }
                value = data
            } else {
                value = Array(bytes[node.data..<(node.data + node.size)])
            }
            if integerKeys {
                freePages(value, place: "\(place), node \(i)")
            } else if node.flags & Self.subDatabaseFlag != 0 {
                guard value.count == Self.treeRecordSize else { return report("\(place): node \(i) is a database record of \(value.count) bytes") }
                let record = value.withUnsafeBytes { TreeRecord($0, at: 0) }
                named.append((String(decoding: node.key, as: UTF8.self), record))
            }
        }
    }

    /// Claims an overflow run and returns the value it holds.
    private mutating func overflow(_ first: UInt64, size: Int, name: String, tally: inout Tally) -> [UInt8]? {
        guard first >= 2, first <= lastPage else {
            report("\(name) points to overflow page \(first), outside 2…\(lastPage)")
            return nil
        }
        guard let head = read(first, user: name) else { return nil }
        let (number, flags, pages) = head.withUnsafeBytes { raw in
            (UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self)),
             UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: 10, as: UInt16.self)),
             Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 12, as: UInt32.self))))
        }
        guard number == first, flags & 0x7F == Self.overflowFlag else {
            report("\(name): page \(first) should begin an overflow run")
            return nil
        }
        guard pages >= 1, UInt64(pages) <= lastPage - first + 1, size <= pages * pageSize - Self.pageHeaderSize else {
            report("\(name): the overflow run at page \(first) claims \(pages) pages for \(size) bytes")
            return nil
        }
        for page in first..<(first + UInt64(pages)) { guard claim(page, name) else { return nil } }
        tally.overflowPages += UInt64(pages)
        guard pages > 1 else { return Array(head[Self.pageHeaderSize..<(Self.pageHeaderSize + size)]) }
        guard let all = read(first, count: pages, user: name) else { return nil }
        return Array(all[Self.pageHeaderSize..<(Self.pageHeaderSize + size)])
    }

    /// Claims the pages a free-list entry lists: a count, then that many page numbers.
    private mutating func freePages(_ value: [UInt8], place: String) {
        guard value.count >= 8, value.count % 8 == 0 else { return report("\(place): a free list of \(value.count) bytes") }
        let count = Self.integer(Array(value[0..<8]))
        guard count == UInt64(value.count / 8 - 1) else { return report("\(place): a free list claims \(count) pages in \(value.count) bytes") }
        for i in 1..<(value.count / 8) {
            guard claim(Self.integer(Array(value[(8 * i)..<(8 * i + 8)])), "the free list") else { return }
        }
    }

    private static func integer(_ bytes: [UInt8]) -> UInt64 {
        bytes.count == 8 ? bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) } : 0
    }
}
