@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Processes killed while they hold one of LMDB's mutexes: inside a write transaction, or while
/// taking a slot of the reader table. Every other process's next read and write goes on within
/// a bounded time, and nothing acknowledged is lost: the system's LMDB recovers its robust
/// mutexes itself; the bundled one's, which are not robust, are set free by Feedstore's gates
/// (``LMDBMutexGate``). The same tests run with either LMDB (`--traits BundledLMDB`).
@Suite(.blocking) struct KilledLockHolderTests {
    /// The crash-loop tool, built with the tests, which can hold a write or a mutex for ever.
    static var crashLoopURL: URL { buildProductsDirectory.appendingPathComponent("crash-loop") }
    /// How long a read or a write may take after the kill (the gate waits 0.2 s for a holder).
    static let bound: TimeInterval = 30

    /// Runs `body` on a thread of its own; nil when it has not returned within ``bound`` (it is
    /// then left running: the process would hang on it, which the test reports).
    func withinBound<R: Sendable>(_ what: String, _ body: @escaping @Sendable () throws -> R) -> R? {
        let done = DispatchSemaphore(value: 0)
        let result = Protected<Result<R, Error>?>(nil)
        Thread {
            let outcome = Result { try body() }
            result.withLock { $0 = outcome }
            done.signal()
        }.start()
        guard done.wait(timeout: .now() + Self.bound) == .success else {
            Issue.record("\(what) did not return within \(Int(Self.bound)) s: a lock of a killed process was never let go")
            return nil
        }
        switch result.current! {
        case .success(let value): return value
        case .failure(let error):
            Issue.record("\(what) failed: \(error)")
            return nil
        }
    }

    func message(_ id: UInt64) -> Message {
        Message(id: id, folder: 1, date: Date(timeIntervalSince1970: 1_700_000_000 + Double(id)), title: "after the kill", isRead: false, contactId: 1)
    }

    @Test func aWriterKilledInsideItsWriteLocksNoOneOut() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            try populatedDemoStore(at: path, seed: 3, messages: 50, contacts: 5, options: StoreOptions(durability: .full)).close()
            let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .full))
            try store.write { try $0.insert(self.message(10_000)) }

            let holder = try RunningTool(Self.crashLoopURL, ["--hold-write", path])
            #expect(holder.waitFor("inside a write", timeout: 120), "\(holder.finish(timeout: 1))")
            holder.kill()
            _ = holder.finish(timeout: 60)

            // This process reads and writes; so do processes started after the kill.
            guard withinBound("a write in this process", { try store.write { try $0.insert(self.message(10_001)) } }) != nil else { return }
            let count = withinBound("a read in this process") { try store.read { try $0.count(Message.self) } }
            #expect(count == 52)
            let file = dir + "/one.jsonl"
            try #"{"contactId": 1, "date": "2026-01-01T09:30:00Z", "folder": 1, "id": 10002, "isRead": false, "title": "from another process"}"#
                .appending("\n").write(toFile: file, atomically: true, encoding: .utf8)
            let loaded = withinBound("a write in another process") { try runTool(storectlURL, ["load", path, "--entity", "Message", "--input", file], timeout: 60) }
            #expect(loaded?.status == 0, "\(loaded?.stderr ?? "")")
            let counted = withinBound("a read in another process") { try runTool(storectlURL, ["count", path, "--entity", "Message"], timeout: 60) }
            #expect(counted?.stdout.contains("53") == true, "\(counted?.stdout ?? "") \(counted?.stderr ?? "")")
            // The killed writer's record was never acknowledged, and is not there; no
            // acknowledged one is lost.
            #expect(try store.read { try $0.get(Contact.self, id: 999_999) } == nil)
            for id: UInt64 in [10_000, 10_001, 10_002] { #expect(try store.read { try $0.get(Message.self, id: id) } != nil) }
            store.close()

            // Reopened, the store verifies clean and takes writes.
            #expect(try runTool(storectlURL, ["verify", path]).status == 0)
            let reopened = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .full))
            try reopened.write { try $0.insert(self.message(10_003)) }
            #expect(try reopened.read { try $0.count(Message.self) } == 54)
            reopened.close()
        }
    }

    @Test func aProcessKilledWhileTakingAReaderSlotLocksNoOneOut() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            try populatedDemoStore(at: path, seed: 4, messages: 50, contacts: 5, options: StoreOptions(durability: .full)).close()
            // Read while this process has the store closed: closing a descriptor of lock.mdb
            // would drop this process's locks on it.
            let head = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path + "/lock.mdb")).prefix(8))
            let layout = try #require(LMDBLockRegion.layout(ofHead: head), "a lock file of a layout not known: \(head)")
            let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .full))
            defer { store.close() }
            // The reader table's mutex, locked by a process then killed (taking a slot holds it
            // for too short a time for a kill to land in it).
            let holder = try RunningTool(Self.crashLoopURL, ["--lock-mutex", path + "/lock.mdb", String(layout.readersMutex)])
            #expect(holder.waitFor("locked", timeout: 120), "\(holder.finish(timeout: 1))")
            holder.kill()
            _ = holder.finish(timeout: 60)

            // A new process needs a slot of the reader table.
            let counted = withinBound("a read in another process") { try runTool(storectlURL, ["count", path, "--entity", "Message"], timeout: 60) }
            #expect(counted?.stdout.contains("50") == true, "\(counted?.stdout ?? "") \(counted?.stderr ?? "")")
            let count = withinBound("a read in this process") { try store.read { try $0.count(Message.self) } }
            #expect(count == 50)
            guard withinBound("a write in this process", { try store.write { try $0.insert(self.message(20_000)) } }) != nil else { return }
            #expect(try store.read { try $0.count(Message.self) } == 51)
        }
    }
}

/// ``LMDBMutexGate`` on a lock region with mutexes that are not robust, as the bundled LMDB
/// makes them, whatever LMDB this build links: a holder killed while it holds the mutex is found
/// dead under the gate and the mutex set free, once.
@Suite(.blocking) struct LMDBMutexGateTests {
    @Test(arguments: [LMDBLockRegion.Mutex.writer, .readers]) func aDeadHoldersMutexIsSetFree(mutex: LMDBLockRegion.Mutex) throws {
        try withTemporaryDirectory { dir in
            // A lock file's head: LMDB's magic and format, two fresh process-shared mutexes.
            let file = dir + "/lock.mdb"
            var head = [UInt8](repeating: 0, count: 4096)
            withUnsafeBytes(of: LMDBLockRegion.magic.littleEndian) { head.replaceSubrange(0..<4, with: $0) }
            withUnsafeBytes(of: UInt32(2).littleEndian) { head.replaceSubrange(4..<8, with: $0) }
            try Data(head).write(to: URL(fileURLWithPath: file))
            let region = try #require(LMDBLockRegion(path: file))
            region.reinitialize(.writer)
            region.reinitialize(.readers)
            #expect(!region.isLocked(mutex))

            let recoveries = Protected(0)
            let gate = try #require(LMDBMutexGate(file: dir + "/gate.lock", create: true, mode: 0o600, region: region, mutex: mutex) {
                recoveries.withLock { $0 += 1 }
            })
            // Entering with the mutex free sets nothing free.
            gate.enter()
            #expect(!region.isLocked(mutex))
            gate.leave()
            #expect(recoveries.current == 0)

            let offset = region.layout.offset(of: mutex)
            let holder = try RunningTool(KilledLockHolderTests.crashLoopURL, ["--lock-mutex", file, String(offset)])
            #expect(holder.waitFor("locked", timeout: 120), "\(holder.finish(timeout: 1))")
            holder.kill()
            _ = holder.finish(timeout: 60)
            #expect(region.isLocked(mutex), "a killed holder's mutex stays locked")

            gate.enter()
            #expect(!region.isLocked(mutex))
            #expect(recoveries.current == 1)
            gate.leave()
            gate.enter()
            gate.leave()
            #expect(recoveries.current == 1)
        }
    }
}
