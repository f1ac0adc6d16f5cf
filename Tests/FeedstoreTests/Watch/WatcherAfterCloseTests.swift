import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// A watcher that outlives its store's last handle gets `storeClosed`, never a transaction on an
/// environment that is gone (an indexes-only watcher holds a read snapshot between batches).
@Suite(.blocking) struct WatcherAfterCloseTests {
    @Test func watchersOfAClosedStoreThrowStoreClosed() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Message.self, Contact.self])
            var feed = DemoFeed(seed: 1)
            try feed.populate(store, messages: 100, contacts: 5)
            let indexes = store.watchIndexes(Query(Message.byFolderDate), options: WatchOptions(sectionBy: \Message.folder))
            let objects = store.watch(Query(Message.byFolderDate, prefix: 1))
            _ = try indexes.poll()
            _ = try objects.poll()
            #expect(try indexes.object(at: RowPath(section: 0, row: 0)) != nil)
            store.close()
            func isClosed(_ error: any Error) -> Bool {
                if case FeedstoreError.storeClosed = error { return true }
                return false
            }
            #expect { try indexes.poll() } throws: { isClosed($0) }
            #expect { try indexes.object(at: RowPath(section: 0, row: 0)) } throws: { isClosed($0) }
            #expect { try objects.poll() } throws: { isClosed($0) }
            indexes.cancel()
            objects.cancel()
            #expect(try indexes.poll() == nil, "a cancelled watcher has nothing more")
        }
    }
}
