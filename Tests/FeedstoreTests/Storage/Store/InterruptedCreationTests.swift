@testable import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// A store whose making a power loss interrupted: LMDB writes both meta pages of a new data file
/// at once, unsynced, so one may never reach the disk, and LMDB then refuses the file. Such a
/// file holds no commit: a writer makes the store anew, a reader says so, and a file that holds
/// a commit, or is not LMDB's, is never taken for one.
@Suite(.blocking) struct InterruptedCreationTests {
    /// A data file as LMDB makes it, before any commit, with `page` (0 or 1) left as zeros.
    static func interrupted(at path: String, losing page: Int, transaction: UInt64? = nil) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let environment = try LMDBEnvironment(path: path, flags: [.noThreadLocalStorage], mapSize: 1 << 20, maxDatabases: 4, maxReaders: 8, mode: 0o600)
        let pageSize = environment.pageSize
        environment.close()
        try FileManager.default.removeItem(atPath: path + "/lock.mdb")
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb")))
        bytes.replaceSubrange((page * pageSize)..<((page + 1) * pageSize), with: [UInt8](repeating: 0, count: pageSize))
        if let transaction {
            // The other meta page as a commit would have left it.
            let at = (1 - page) * pageSize + LMDBMetaPages.transactionOffset
            withUnsafeBytes(of: transaction.littleEndian) { bytes.replaceSubrange(at..<(at + 8), with: $0) }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path + "/data.mdb"))
    }

    @Test(arguments: [0, 1]) func aWriterMakesTheStoreAnewAndAReaderSaysWhy(lostPage: Int) throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            try Self.interrupted(at: path, losing: lostPage)
            #expect { try Store(path: path, entities: [Item.self], options: StoreOptions(readOnly: true)) } throws: { error in
                guard case let FeedstoreError.notAStore(_, reason) = error else { return false }
                return reason.contains("holds no commit")
            }
            let store = try Store(path: path, entities: [Item.self])
            try store.write { try $0.insert(Item(id: 1, group: 1, score: 1, name: "one", flag: true, tag: nil)) }
            #expect(try store.read { try $0.count(Item.self) } == 1)
            #expect(try store.verify().isEmpty)
            store.close()
        }
    }

    @Test func aFileWithACommitOrNotLMDBsIsLeftAlone() throws {
        try withTemporaryDirectory { dir in
            // The remaining meta page names a commit: not a making that was interrupted.
            try Self.interrupted(at: dir + "/committed", losing: 0, transaction: 5)
            // Not LMDB's at all: zeros, then text.
            try FileManager.default.createDirectory(atPath: dir + "/foreign", withIntermediateDirectories: true)
            try Data([UInt8](repeating: 0, count: 4_096) + Array(String(repeating: "not a store ", count: 500).utf8))
                .write(to: URL(fileURLWithPath: dir + "/foreign/data.mdb"))
            for name in ["committed", "foreign"] {
                let before = try Data(contentsOf: URL(fileURLWithPath: dir + "/\(name)/data.mdb"))
                #expect(throws: FeedstoreError.self) { try Store(path: dir + "/\(name)", entities: [Item.self]) }
                #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/\(name)/data.mdb")) == before, "\(name)")
            }
        }
    }
}
