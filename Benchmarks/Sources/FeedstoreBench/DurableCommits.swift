import CLMDBPeer
import Feedstore
import DemoFeed
import Foundation
import GRDB

/// Durable one-row commits per second, each writer committing one new message at a time and
/// waiting for it to be on disk: Feedstore (`.full`; concurrent async writers are group-committed),
/// GRDB (`synchronous = FULL`, one writer connection, so writers queue), raw LMDB (synced commits).
struct DurableCommits {
    let directory: String
    /// Commits each writer makes.
    let commitsPerWriter: Int

    struct Result {
        var writers: Int
        var feedstore: Double
        var grdb: Double
        var rawLMDB: Double
    }

    func message(_ id: UInt64) -> Message {
        Message(id: id, folder: Int64(id % 8), date: Date(timeIntervalSinceReferenceDate: Double(id)), title: "message \(id)",
                isRead: false, contactId: id % 1_000)
    }

    func run(writers: Int) async throws -> Result {
        try? FileManager.default.removeItem(atPath: directory)
        let total = writers * commitsPerWriter

        let store = try Store(path: directory + "/feedstore", entities: DemoFeed.entities, options: StoreOptions(durability: .full))
        var start = Date()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for w in 0..<writers {
                group.addTask {
                    for c in 0..<commitsPerWriter {
                        let m = message(UInt64(w * commitsPerWriter + c + 1))
                        try await store.write { tx in try tx.insert(m) }
                    }
                }
            }
            try await group.waitForAll()
        }
        let feedstore = Double(total) / Date().timeIntervalSince(start)
        store.close()

        let pool = try GRDBPeer.open(directory + "/grdb.sqlite", durable: true)
        start = Date()
        try concurrently(writers) { w in
            for c in 0..<commitsPerWriter {
                let m = message(UInt64(w * commitsPerWriter + c + 1))
                try pool.write { db in try m.insert(db) }
            }
        }
        let grdb = Double(total) / Date().timeIntervalSince(start)
        try pool.close()

        // Raw LMDB: one put per synced commit (LMDB lets one writer in at a time).
        nonisolated(unsafe) let env = try RawLMDB.open(directory + "/raw", flags: 0)
        let dbi = try RawLMDB.database(env, "records")
        start = Date()
        try concurrently(writers) { w in
            var value = [UInt8](repeating: 7, count: 60)
            for c in 0..<commitsPerWriter {
                var txn: OpaquePointer?
                try RawLMDB.check(mdb_txn_begin(env, nil, 0, &txn))
                try value.withUnsafeMutableBytes { try RawLMDB.put(txn, dbi, key: UInt64(w * commitsPerWriter + c + 1), value: $0) }
                try RawLMDB.check(mdb_txn_commit(txn))
            }
        }
        let raw = Double(total) / Date().timeIntervalSince(start)
        mdb_env_close(env)
        try? FileManager.default.removeItem(atPath: directory)
        return Result(writers: writers, feedstore: feedstore, grdb: grdb, rawLMDB: raw)
    }

    /// Runs `body` on `count` threads at once and waits for all; rethrows the first error.
    func concurrently(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) throws {
        let group = DispatchGroup()
        let failure = LockedBox<(any Error)?>(nil)
        for i in 0..<count {
            group.enter()
            Thread.detachNewThread {
                do { try body(i) } catch { failure.set(error) }
                group.leave()
            }
        }
        group.wait()
        if let error = failure.value { throw error }
    }
}

/// A value shared between threads.
final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T { lock.withLock { stored } }
    func set(_ value: T) { lock.withLock { stored = value } }
}
