@testable import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// The structural check of LMDB's data file: sound after any mix of writes (large values on
/// overflow pages, deletes, trimming, map growth), and each kind of damage named.
@Suite(.blocking) struct PageCheckTests {
    func pageProblems(_ store: Store) throws -> [String] {
        try LMDBPageCheck.check(store.core.environment, begin: { try store.core.begin(readOnly: true) })
    }

    /// A store with small and overflowing values, deletes and a trimmed journal.
    func populated(_ path: String, seed: UInt64) throws -> Store {
        var options = StoreOptions(durability: .none, initialMapSize: 256 << 10)
        options.journalRetention = JournalRetention(minimumCommits: 20)
        let store = try Store(path: path, entities: [Item.self, Note.self], options: options)
        var random = RandomValues(seed: seed)
        for round in 0..<60 {
            try store.write { tx in
                for _ in 0..<20 {
                    let id = Int64.random(in: 0..<400, using: &random.rng)
                    if Bool.random(using: &random.rng) {
                        try tx.put(Item(id: id, group: id % 7, score: random.double(), name: "n\(id)", flag: Bool.random(using: &random.rng), tag: nil))
                    } else {
                        _ = try tx.delete(Item.self, id: id)
                    }
                }
                // Labels of up to 12 KB go to overflow pages.
                let length = Int.random(in: 0...12_000, using: &random.rng)
                try tx.put(Note(id: "note\(round % 15)", body: "body \(round)", priority: 1,
                                when: Date(timeIntervalSinceReferenceDate: Double(round)), labels: [String(repeating: "l", count: length)]))
            }
        }
        return store
    }

    @Test(arguments: testSeeds(2)) func aStoreAfterRandomWritesIsSound(seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            let store = try populated(dir + "/s", seed: seed)
            defer { store.close() }
            #expect(try pageProblems(store) == [], "seed \(seed)")
            try store.copy(to: dir + "/copy", compact: true)
            let copy = try Store(path: dir + "/copy", options: StoreOptions(readOnly: true))
            defer { copy.close() }
            #expect(try pageProblems(copy) == [], "seed \(seed), compacted copy")
            #expect(try store.verify() == [])
        }
    }

    /// The check reads the file beside a live writer (page reuse, map growth): it must see only
    /// the snapshot its transaction pins.
    @Test func aSnapshotIsSoundWhileAWriterReusesPages() throws {
        try withTemporaryDirectory { dir in
            let store = try populated(dir + "/s", seed: 3)
            defer { store.close() }
            let writer = Thread {
                var random = RandomValues(seed: 4)
                for round in 0..<300 {
                    try? store.write { tx in
                        for _ in 0..<10 {
                            let id = Int64.random(in: 0..<400, using: &random.rng)
                            if Bool.random(using: &random.rng) {
                                try tx.put(Item(id: id, group: id % 7, score: random.double(), name: "n\(id)", flag: true, tag: nil))
                            } else {
                                _ = try tx.delete(Item.self, id: id)
                            }
                        }
                        try tx.put(Note(id: "note\(round % 15)", body: "b\(round)", priority: 1, when: Date(),
                                        labels: [String(repeating: "x", count: Int.random(in: 0...9_000, using: &random.rng))]))
                    }
                }
            }
            writer.start()
            var checks = 0
            repeat {
                let issues = try store.verify()
                #expect(issues.isEmpty, "check \(checks): \(issues)")
                checks += 1
            } while !writer.isFinished
            #expect(checks >= 2)
        }
    }

    /// Pages of a closed store's file: (page number, flags, node count), for picking targets.
    func pages(_ path: String) throws -> (bytes: [UInt8], pageSize: Int, list: [(page: Int, flags: UInt16, nodes: Int)]) {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb")))
        let pageSize = Int(getpagesize())
        var list: [(Int, UInt16, Int)] = []
        for page in 2..<(bytes.count / pageSize) {
            let base = page * pageSize
            let flags = UInt16(bytes[base + 10]) | UInt16(bytes[base + 11]) << 8
            let lower = Int(bytes[base + 12]) | Int(bytes[base + 13]) << 8
            list.append((page, flags, max(0, (lower - 16) / 2)))
        }
        return (bytes, pageSize, list)
    }

    @Test func eachKindOfDamageIsNamed() throws {
        try withTemporaryDirectory { dir in
            try populated(dir + "/base", seed: 1).close()
            let (original, pageSize, list) = try pages(dir + "/base")
            // The candidate pages need not be live (free pages keep old content), so each kind of
            // damage is tried on several pages until the check names it.
            let branches = list.filter { $0.flags == 0x01 && $0.nodes >= 2 }.map(\.page)
            let leaves = list.filter { $0.flags == 0x02 && $0.nodes >= 3 }.map(\.page)
            #expect(!branches.isEmpty && !leaves.isEmpty)
            func node(_ bytes: [UInt8], _ page: Int, _ i: Int) -> Int {
                Int(bytes[page * pageSize + 16 + 2 * i]) | Int(bytes[page * pageSize + 17 + 2 * i]) << 8
            }
            let damages: [(name: String, pages: [Int], expected: String, damage: (inout [UInt8], Int) -> Void)] = [
                ("page number in the header", leaves, "its header says page", { bytes, page in bytes[page * pageSize] ^= 0x40 }),
                ("page flags", leaves, "neither a branch nor a leaf", { bytes, page in bytes[page * pageSize + 10] = 0x04 }),
                ("free space bounds", leaves, "free space", { bytes, page in bytes[page * pageSize + 15] = 0xFF }),
                ("a node offset", leaves, "out of bounds", { bytes, page in
                    bytes[page * pageSize + 16] = 0xFE; bytes[page * pageSize + 17] = 0x0F
                }),
                ("a key's length", leaves, "runs past the end of the page", { bytes, page in
                    let offset = page * pageSize + node(bytes, page, 0)
                    bytes[offset + 6] = 0xFF; bytes[offset + 7] = 0x7F
                }),
                ("key order", leaves, "out of order", { bytes, page in
                    // Swap the first two node pointers.
                    let base = page * pageSize + 16
                    bytes.swapAt(base, base + 2); bytes.swapAt(base + 1, base + 3)
                }),
                ("a child page number", branches, "outside 2…", { bytes, page in
                    let offset = page * pageSize + node(bytes, page, 1)
                    bytes[offset + 3] = 0x7F
                }),
            ]
            for damage in damages {
                var named = false
                for page in damage.pages.prefix(40) where !named {
                    let path = dir + "/damaged"
                    try? FileManager.default.removeItem(atPath: path)
                    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
                    var bytes = original
                    damage.damage(&bytes, page)
                    try Data(bytes).write(to: URL(fileURLWithPath: path + "/data.mdb"))
                    // Only the environment: opening a store reads trees, which damage may crash.
                    let environment = try LMDBEnvironment(path: path, flags: .readOnly, mapSize: 64 << 20, maxDatabases: 8,
                                                          maxReaders: 8, mode: 0o600)
                    let problems = try LMDBPageCheck.check(environment, begin: { try LMDBTransaction(environment: environment, readOnly: true) })
                    environment.close()
                    // Opening as usual checks the pages it reads: it opens or refuses, never crashes.
                    do { try Store(path: path, options: StoreOptions(readOnly: true)).close() } catch let error as FeedstoreError {
                        guard case .damagedFile = error else { Issue.record("\(damage.name): \(error)"); continue }
                    }
                    // (A page no tree uses may be damaged without consequence.)
                    guard problems.contains(where: { $0.contains(damage.expected) }) else { continue }
                    named = true
                    // A store opened with the page check refuses the file with a typed error.
                    var options = StoreOptions(readOnly: true)
                    options.verifyPagesOnOpen = true
                    #expect { try Store(path: path, options: options) } throws: { error in
                        guard case let FeedstoreError.damagedFile(_, found) = error else { return false }
                        return found == problems
                    }
                }
                #expect(named, "\(damage.name) was never named")
            }
        }
    }
}
