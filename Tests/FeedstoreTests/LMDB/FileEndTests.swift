@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// A data file may end before the last page its meta page counts: pages allocated and freed
/// within one transaction go to the free list unwritten. Such a file is healthy; a file that
/// lost a page a tree uses is not.
@Suite(.blocking) struct FileEndTests {
    func fileEnd(_ store: Store) throws -> LMDBPageCheck.FileEnd? {
        try LMDBPageCheck.fileEnd(store.core.environment, in: try store.core.begin(readOnly: true))
    }

    /// Small commits of the demo feed with a trimmed journal, each store handle closed after two
    /// of them, until the file ends before pages only the free list names (LMDB wrote them
    /// never: allocated and freed again within a commit). Returns how many such pages.
    func storeWithUnwrittenFreePages(_ path: String) throws -> Int {
        var populating = DemoFeed(seed: 1)
        try populating.load(into: path, messages: 200, contacts: 10)
        var options = StoreOptions()
        options.journalRetention = JournalRetention(minimumCommits: 1, maximumCommits: 10)
        for seed: UInt64 in 1701...1740 {
            let store = try Store(path: path, entities: DemoFeed.entities, options: options)
            defer { store.close() }
            var feed = DemoFeed(seed: seed)
            for _ in 0..<2 { _ = try store.write { tx in try feed.mutate(tx, count: 2, contacts: 10) } }
            if case .unwrittenFreePages(let pages) = try fileEnd(store) { return pages }
        }
        Issue.record("80 commits never left the file short of pages only the free list names")
        return 0
    }

    /// The newest meta page's main database root: a page in use.
    func mainRoot(_ path: String) throws -> Int {
        let body = try LMDBMetaPages.newestMeta(directory: path).body
        return body.withUnsafeBytes { Int(UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 88 + 40 - 16, as: UInt64.self))) }
    }

    func size(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path + "/data.mdb")[.size] as? NSNumber).intValue
    }

    @Test func aFileEndingBeforeUnwrittenFreePagesOpensVerifiesAndTakesWrites() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            let unwritten = try storeWithUnwrittenFreePages(path)
            #expect(unwritten > 0)
            let before = try size(path)
            let store = try Store(path: path, entities: DemoFeed.entities)
            defer { store.close() }
            #expect(try store.verify() == [])
            #expect(try fileEnd(store) == .unwrittenFreePages(unwritten))
            let count = try store.read { try $0.count(Message.self) }
            var feed = DemoFeed(seed: 9)
            try store.write { tx in for id: UInt64 in 1_000..<1_200 { try tx.put(feed.message(id: id, contacts: 10)) } }
            #expect(try store.read { try $0.count(Message.self) } == count + 200)
            #expect(try store.verify() == [])
            #expect(try size(path) >= before)

            // LMDB's plain copy stops at the end of the file: the copy opens too.
            try store.copy(to: dir + "/copy", compact: false)
            let copy = try Store(path: dir + "/copy", entities: DemoFeed.entities)
            #expect(try copy.verify() == [])
            #expect(try copy.read { try $0.count(Message.self) } == count + 200)
            copy.close()
        }
    }

    @Test func aFileCutInsideAPageInUseIsRefusedUntouched() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            _ = try storeWithUnwrittenFreePages(path)
            let root = try mainRoot(path)
            let pageSize = Int(getpagesize())
            let cut = root * pageSize + pageSize / 2
            #expect(cut < (try size(path)))
            let handle = try #require(FileHandle(forWritingAtPath: path + "/data.mdb"))
            try handle.truncate(atOffset: UInt64(cut))
            try handle.close()
            for options in [StoreOptions(), StoreOptions(readOnly: true)] {
                #expect { try Store(path: path, entities: DemoFeed.entities, options: options) } throws: { error in
                    guard case FeedstoreError.notAStore(_, let reason) = error else { return false }
                    return reason.contains("truncated") && reason.contains("lies past")
                }
            }
            #expect(try size(path) == cut)
        }
    }
}
