@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// One scenario through the typed declarations and queries (key paths, Swift values) and
/// through names: the stores end equal, and every watcher's batches are the same.
@Suite(.blocking) struct TypedDeclarationTests {
    /// A batch as text: sequences, sections, and each list's paths, ids and fields.
    func text<E: Entity>(_ batch: ChangeBatch<E>) -> String {
        let h = batch.header
        return "\(h.fromSequence)→\(h.toSequence) s-\(h.sectionDeletes) s+\(h.sectionInserts.map { "\($0.index):\($0.key)" }) "
            + "-\(batch.deletes.map { "\($0.path)#\($0.id)" }) +\(batch.inserts.map { "\($0.path)#\($0.id)" }) "
            + "~\(batch.moves.map { "\($0.from)>\($0.to)#\($0.id)\($0.fields)" }) !\(batch.updates.map { "\($0.from)>\($0.to)#\($0.id)\($0.fields)" })"
    }

    @Test(arguments: [11, 12, 13] as [UInt64])
    func typedAndNamedDeclarationsGiveTheSameStoreAndBatches(seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            let typed = try Store(path: dir + "/typed", entities: [Message.self])
            let named = try Store(path: dir + "/named", entities: [MessageByName.self])
            defer { typed.close(); named.close() }
            let cutoff = Date(timeIntervalSinceReferenceDate: 40 * 60)
            let newest = Date(timeIntervalSinceReferenceDate: 200 * 60)
            let folder: Int64 = 1
            let typedWatchers = [
                typed.watch(Query(Message.byFolderDate), options: WatchOptions(sectionBy: \Message.folder, window: WatchWindow(offset: 3, limit: 12))),
                typed.watch(Query(Message.byFolderDate, prefix: folder), options: WatchOptions(fields: [\Message.title, \Message.isRead])),
                typed.watch(Query(Message.unreadByDate, from: newest, to: cutoff)),
                typed.watch(Query(Message.byFolderDate, prefix: folder, from: cutoff, to: newest, reverse: true)),  // the list's order: oldest first
                typed.watch(Query(Message.byContact, range: .prefix(UInt64(2)))),
            ]
            let namedWatchers = [
                named.watch(Query(MessageByName.self, index: "byFolderDate"), options: WatchOptions(sectionBy: 1, window: WatchWindow(offset: 3, limit: 12))),
                named.watch(Query(MessageByName.self, index: "byFolderDate", range: .prefix(.int(1))), options: WatchOptions(fields: ["title", "isRead"])),
                named.watch(Query(MessageByName.self, index: "unreadByDate",
                                  range: IndexRange(from: .inclusive([.date(newest)]), to: .inclusive([.date(cutoff)])))),
                named.watch(Query(MessageByName.self, index: "byFolderDate",
                                  range: IndexRange(prefix: [.int(1)], from: .inclusive([.date(newest)]), to: .inclusive([.date(cutoff)])), reverse: true)),
                named.watch(Query(MessageByName.self, index: "byContact", range: .prefix(.uint(2)))),
            ]
            defer {
                typedWatchers.forEach { $0.cancel() }
                namedWatchers.forEach { $0.cancel() }
            }
            var random = SeededGenerator(seed: seed)
            var batches = 0
            for step in 0..<25 {
                var writes: [Message] = []
                var deletes: [UInt64] = []
                for _ in 0..<4 {
                    let id = UInt64.random(in: 1...60, using: &random)
                    if Int.random(in: 0..<5, using: &random) == 0 {
                        deletes.append(id)
                    } else {
                        writes.append(scenarioMessage(id, folder: Int64.random(in: 0...2, using: &random),
                                                      minute: Double(Int.random(in: 0...240, using: &random)),
                                                      read: Bool.random(using: &random), contact: UInt64.random(in: 1...3, using: &random)))
                    }
                }
                try typed.write { tx in
                    for message in writes { try tx.put(message) }
                    for id in deletes { _ = try tx.delete(Message.self, id: id) }
                }
                try named.write { tx in
                    for message in writes { try tx.put(MessageByName(message)) }
                    for id in deletes { _ = try tx.delete(MessageByName.self, id: id) }
                }
                for (index, (t, n)) in zip(typedWatchers, namedWatchers).enumerated() {
                    let left = try t.poll().map(text), right = try n.poll().map(text)
                    #expect(left == right, "seed \(seed), step \(step), watcher \(index)")
                    if left != nil { batches += 1 }
                }
            }
            #expect(batches > 60, "the watchers saw changes")
            #expect(try storeDifference(typed, named) == nil, "seed \(seed)")
        }
    }

    @Test func sectioningByAKeyPathThatIsNoComponentIsReported() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Message.self])
            defer { store.close() }
            let watcher = store.watch(Query(Message.byContact), options: WatchOptions(sectionBy: \Message.folder))
            defer { watcher.cancel() }
            #expect { try watcher.poll() } throws: { error in
                guard case let FeedstoreError.invalidRange(entity, index, reason) = error else { return false }
                return entity == "Message" && index == "byContact"
                    && reason.hasPrefix("sectionBy reads folder, which is not a component of the index (its components are contactId)")
            }
        }
    }
}
