@_spi(Replication) @testable import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// How a replica's follower writes: without syncs, it changes pages in the map itself, and what it
/// writes is whole for every later handle, through map growth and reopening.
@Suite(.blocking) struct ReplicaWritingTests {
    func item(_ id: Int64) -> Item { Item(id: id, group: id % 7, score: Double(id), name: "n\(id)", flag: id % 2 == 0, tag: nil) }

    @Test func anUnsyncedReplicaWritesThroughTheMapAndStaysWhole() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/replica"
            var options = StoreOptions(durability: .none, initialMapSize: 1 << 20)
            options.writesReplica = true
            do {
                let replica = try Store(path: path, entities: [Item.self], options: options)
                defer { replica.close() }
                #expect(replica.core.environment.flags.contains(.writeMap))
                // A map of 1 MiB grows several times under these commits.
                for start in stride(from: 1, through: 4_000, by: 200) {
                    try replica.write { tx in for id in start..<(start + 200) { try tx.insert(item(Int64(id))) } }
                }
                try replica.write { tx in for id in stride(from: 2, through: 4_000, by: 3) { try tx.delete(Item.self, id: Int64(id)) } }
            }
            // Any other handle, and a replica with syncs, writes in LMDB's usual way.
            for durability in [Durability.full, .relaxed] {
                var other = StoreOptions(durability: durability)
                other.writesReplica = durability == .relaxed
                let store = try Store(path: path, entities: [Item.self], options: other)
                defer { store.close() }
                #expect(!store.core.environment.flags.contains(.writeMap))
                #expect(try store.verify().isEmpty)
                let kept = (1...4_000).filter { ($0 - 2) % 3 != 0 }.map(Int64.init)
                try store.read { tx in
                    #expect(try tx.count(Item.self) == kept.count)
                    let found = try kept.filter { try tx.get(Item.self, id: $0)?.name == "n\($0)" }
                    #expect(found == kept)
                }
            }
        }
    }

    /// A listener hears each commit of this process once it is durable, on the committing
    /// thread, with the newest sequence, and nothing after it stops listening.
    @Test func listenersHearEachCommitOnTheCommittingThread() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self], options: StoreOptions(durability: .full))
            defer { store.close() }
            let heard = Locked<[(sequence: UInt64, visible: Bool, thread: Bool)]>([])
            nonisolated(unsafe) var committingThread: pthread_t?
            let listener = store.whenCommitted { sequence in
                // A new reader finds the commit already.
                let visible = (try? store.read { try $0.journalBounds().last }) == sequence
                heard.withLock { $0.append((sequence, visible, committingThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false)) }
            }
            for id in Int64(1)...3 {
                try store.write { tx in
                    committingThread = pthread_self()
                    try tx.put(item(id))
                }
            }
            store.stopListening(listener)
            try store.write { try $0.put(item(4)) }
            let last = try store.read { try $0.journalBounds().last }
            let calls = heard.current
            #expect(calls.map(\.sequence) == [last - 3, last - 2, last - 1])
            #expect(calls.allSatisfy { $0.visible && $0.thread })
        }
    }
}
