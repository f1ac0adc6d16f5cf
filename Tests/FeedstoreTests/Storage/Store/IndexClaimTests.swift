@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// A handle whose declaration would drop or rebuild an index that another open handle declares
/// (in this process or another) is refused, naming both; the index is untouched and the other
/// handle goes on using it. Once no open handle declares the index, the schema change goes
/// through, also after the other handle's process was killed.
@Suite(.blocking) struct IndexClaimTests {
    /// The demo's `Message` as an older build of the app declared it: without `unreadByDate`.
    struct OlderMessage: Entity {
        static var entityName: String { "Message" }
        var id: UInt64
        var folder: Int64
        var date: Date
        var title: String
        var isRead: Bool
        var contactId: UInt64
        static let byFolderDate = index(\.folder, \.date.descending)
        static let byContact = index("byContact", \.contactId)
        static let indexes = [byFolderDate.definition, byContact.definition]
    }

    static func refusesTheOlderDeclaration(_ error: any Error, holder: String) -> Bool {
        guard case let FeedstoreError.indexInUse(entity, index, holderText) = error else { return false }
        return entity == "Message" && index == "unreadByDate" && holderText.contains(holder)
            && "\(error)".contains("declare the index as that handle does, or close that handle first")
    }

    @Test func anotherHandleInThisProcessKeepsItsIndex() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            let current = try populatedDemoStore(at: path, seed: 5, messages: 200, contacts: 10)
            #expect { try Store(path: path, entities: [OlderMessage.self]) } throws: {
                Self.refusesTheOlderDeclaration($0, holder: "process \(getpid())")
            }
            // Untouched: the first handle still reads its index.
            #expect(try current.read { try $0.count(Message.self, index: "unreadByDate") } > 0)
            // A handle declaring the same indexes, or one declaring none, is no trouble.
            try Store(path: path, entities: DemoFeed.entities).close()
            try Store(path: path).close()
            current.close()
            let older = try Store(path: path, entities: [OlderMessage.self])
            defer { older.close() }
            #expect(try older.catalog.entities["Message"]?.index(named: "unreadByDate") == nil, "no handle declares it now: dropped")
        }
    }

    @Test func aHandleInAnotherProcessKeepsItsIndexUntilItIsKilled() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            try populatedDemoStore(at: path, seed: 6, messages: 200, contacts: 10).close()
            let writer = try RunningTool(storectlURL, ["demo", "mutate", path, "--commits", "1000000", "--pause", "20", "--quiet"])
            defer { if writer.isRunning { writer.kill() } }
            // Its claim is there once its handle is open.
            let folder = path + "/" + IndexClaim.folderName
            try waitUntilBlocking("the writer's handle claims its indexes") {
                ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).contains { $0.hasSuffix(".json") }
            }
            #expect { try Store(path: path, entities: [OlderMessage.self]) } throws: {
                Self.refusesTheOlderDeclaration($0, holder: "process \(writer.processIdentifier)")
            }
            writer.kill()
            _ = writer.finish(timeout: 30)
            // A killed process's claim holds nothing: the change goes through, and the claim is gone.
            let older = try Store(path: path, entities: [OlderMessage.self])
            defer { older.close() }
            #expect(try older.catalog.entities["Message"]?.index(named: "unreadByDate") == nil)
            let left = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".json") }
            #expect(left.count == 1, "only this handle's claim is left: \(left)")
            #expect(try older.verify().isEmpty)
        }
    }

    @Test func aClosedHandleLeavesNoClaim() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            let store = try Store(path: path, entities: DemoFeed.entities)
            let folder = path + "/" + IndexClaim.folderName
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder).count == 1)
            try store.declare(entity: "Tag", primaryKeyKind: "string", indexes: [IndexDefinition("byLabel", ["label"])])
            let file = try #require(store.claim.current?.file)
            let record = try JSONDecoder().decode(IndexClaim.Record.self, from: try Data(contentsOf: URL(fileURLWithPath: file)))
            #expect(Set(record.entities.keys) == ["Contact", "Message", "Tag"] && record.process == getpid())
            store.close()
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
        }
    }
}
