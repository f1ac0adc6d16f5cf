@_spi(Replication) @testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Another process's commit wakes a waiting watcher through the store's commit signal, with no
/// timer behind it: each test waits far longer than a working signal takes (a watcher's
/// `next(timeout:)` of a minute), so a missing wake-up fails it instead of being covered by a poll.
@Suite(.blocking) struct CommitSignalTests {
    static let patience: TimeInterval = 60

    /// Runs `storectl demo mutate` on `path` (one commit) and waits for it.
    static func commitFromAnotherProcess(_ path: String) throws {
        let result = try runTool(storectlURL, ["demo", "mutate", path, "--commits", "1", "--per-commit", "1", "--seed", "3",
                                               "--durability", "relaxed"])
        #expect(result.status == 0, "\(result.stderr)")
    }

    /// Waits on `watcher` (its initial batch taken) while `commit` runs; the first batch after.
    static func batch<E: Entity>(of watcher: Watcher<E>, after commit: () throws -> Void) throws -> ChangeBatch<E>? {
        let arrived = Protected<ChangeBatch<E>?>(nil)
        let failure = Protected<(any Error)?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            do {
                let batch = try watcher.next(timeout: patience)
                arrived.withLock { $0 = batch }
            } catch {
                failure.withLock { $0 = error }
            }
            done.signal()
        }
        thread.start()
        try commit()
        done.wait()
        if let error = failure.current { throw error }
        return arrived.current
    }

    /// A watcher of `store`, its initial batch taken, gets a batch once another process commits.
    static func expectWokenByAnotherProcess(_ store: Store, _ path: String) throws {
        let watcher = store.watch(Query(Message.self, index: "byFolderDate"))
        defer { watcher.cancel() }
        _ = try watcher.poll()
        let batch = try batch(of: watcher) { try commitFromAnotherProcess(path) }
        #expect(batch != nil, "no batch within \(patience) s of the other process's commit")
    }

    /// The signal is made with the data file's permissions; a commit writes it only while
    /// another process listens (a store one process alone uses wakes nothing), and then with
    /// the commit's sequence, which wakes that process's watcher.
    @Test func aCommitPostsTheSignalOnlyWhileAnotherProcessListens() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .none, fileMode: 0o640))
            defer { store.close() }
            let signal = path + "/" + CommitSignal.fileName
            var info = stat()
            #expect(stat(signal, &info) == 0)
            #expect(info.st_mode & 0o777 == 0o640)
            func posted() throws -> UInt64? {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: signal))
                return bytes.count == 8 ? bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) } : nil
            }
            // This process's own waiting watcher does not make its commits post.
            let own = store.watch(Query(Contact.primaryKeyOrder))
            defer { own.cancel() }
            _ = try own.poll()
            _ = try own.next(timeout: 0.01)
            try store.write { tx in try tx.put(Contact(id: 1, name: "Ada")) }
            #expect(try posted() == nil)

            // Another process waits on a watcher: from then on each commit posts.
            let watch = try RunningTool(storectlURL, ["watch", path, "--entity", "Contact", "--index", "id", "--jsonl"])
            defer { watch.kill() }
            #expect(watch.waitForLines(1, timeout: Self.patience), "the initial batch was not printed")
            let descriptor = open(signal, O_RDONLY)
            defer { close(descriptor) }
            let deadline = Date().addingTimeInterval(Self.patience)
            while !CommitSignal.anotherProcessListens(descriptor), Date() < deadline { usleep(1_000) }
            #expect(CommitSignal.anotherProcessListens(descriptor), "the watching process holds no listener's lock")
            try store.write { tx in try tx.put(Contact(id: 2, name: "Grace")) }
            #expect(try posted() == store.read { try $0.journalBounds().last })
            #expect(watch.waitForLines(2, timeout: Self.patience), "the other process's watcher got no batch: \(watch.lines)")
        }
    }

    @Test func anotherProcessesCommitWakesAWaitingWatcher() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            let store = try populatedDemoStore(at: path, seed: 4, messages: 200, contacts: 10)
            defer { store.close() }
            try Self.expectWokenByAnotherProcess(store, path)
        }
    }

    /// A read-only handle on a store whose signal no writable handle has made yet listens for
    /// the file to appear, and is woken by the commit of the process that makes it.
    @Test func aReadOnlyHandleIsWokenOnceAWriterMakesTheSignal() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            try populatedDemoStore(at: path, seed: 5, messages: 200, contacts: 10).close()
            try FileManager.default.removeItem(atPath: path + "/" + CommitSignal.fileName)
            let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(readOnly: true))
            defer { store.close() }
            try Self.expectWokenByAnotherProcess(store, path)
            #expect(FileManager.default.fileExists(atPath: path + "/" + CommitSignal.fileName))
        }
    }

    /// A wait for the next commit (a journal shipper's, `storectl journal --follow`'s) ends when
    /// another process commits: no poll of the journal behind it.
    @Test func aWaitForTheNextCommitEndsWhenAnotherProcessCommits() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            let store = try populatedDemoStore(at: path, seed: 7, messages: 50, contacts: 5)
            defer { store.close() }
            let head = try store.read { try $0.journalBounds().last }
            #expect(!store.waitForCommit(after: head, timeout: 0.01))
            let woke = Protected<Bool?>(nil)
            let done = DispatchSemaphore(value: 0)
            Thread {
                woke.withLock { $0 = store.waitForCommit(after: head, timeout: Self.patience) }
                done.signal()
            }.start()
            try Self.commitFromAnotherProcess(path)
            done.wait()
            #expect(woke.current == true, "no commit seen within \(Self.patience) s of the other process's")
        }
    }

    /// `storectl journal --follow` prints another process's commit as it comes.
    @Test func journalFollowPrintsAnotherProcessesCommits() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            let store = try populatedDemoStore(at: path, seed: 8, messages: 20, contacts: 3)
            defer { store.close() }
            let next = try store.read { try $0.journalBounds().last } + 1
            let follow = try RunningTool(storectlURL, ["journal", path, "--follow", "--format", "jsonl"])
            defer { follow.kill() }
            #expect(follow.waitForLines(1, timeout: Self.patience), "the journal's commits were not printed")
            try store.write { tx in try tx.put(Contact(id: 77, name: "Lin")) }
            #expect(follow.waitFor("{\"sequence\":\(next),", timeout: Self.patience), "\(follow.lines.suffix(3))")
        }
    }

    /// More stores with waiting watchers than Linux lets a user have inotify instances (128):
    /// the process listens to all of them through one.
    @Test func aProcessListensToManyStoresAtOnce() throws {
        try withTemporaryDirectory { dir in
            var stores: [Store] = []
            var watchers: [Watcher<Message>] = []
            defer {
                watchers.forEach { $0.cancel() }
                stores.forEach { $0.close() }
            }
            let waiting = DispatchGroup()
            for i in 0..<150 {
                let path = dir + "/s\(i)"
                let store = try i == 149 ? populatedDemoStore(at: path, seed: 6, messages: 50, contacts: 5)
                    : Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .none))
                let watcher = store.watch(Query(Message.primaryKeyOrder))
                _ = try watcher.poll()
                stores.append(store)
                watchers.append(watcher)
                // Each waits once, so that each store's feed listens (briefly: no commit comes).
                waiting.enter()
                Thread {
                    _ = try? watcher.next(timeout: 0.01)
                    waiting.leave()
                }.start()
            }
            waiting.wait()
            let last = watchers[149]
            let batch = try Self.batch(of: last) { try Self.commitFromAnotherProcess(dir + "/s149") }
            #expect(batch != nil, "no batch within \(Self.patience) s of the other process's commit")
        }
    }
}
