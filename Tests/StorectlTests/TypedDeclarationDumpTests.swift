import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// What tools see of a store does not depend on how its type declared its indexes.
@Suite(.blocking) struct TypedDeclarationDumpTests {
    @Test func storesDeclaredByKeyPathsAndByNamesDumpTheSameBytes() throws {
        try withTemporaryDirectory { dir in
            let messages = (1...120).map { numberedMessage(UInt64($0), folder: Int64($0 % 3)) }
            let typed = try Store(path: dir + "/typed", entities: [Message.self])
            try typed.write { tx in for message in messages { try tx.put(message) } }
            typed.close()
            let named = try Store(path: dir + "/named", entities: [MessageByName.self])
            try named.write { tx in for message in messages { try tx.put(MessageByName(message)) } }
            named.close()
            for index in [nil, "byFolderDate", "unreadByDate", "byContact"] {
                let arguments = ["--entity", "Message", "--jsonl"] + (index.map { ["--index", $0] } ?? [])
                let left = try runTool(storectlURL, ["dump", dir + "/typed"] + arguments)
                let right = try runTool(storectlURL, ["dump", dir + "/named"] + arguments)
                #expect(left.status == 0 && right.status == 0, "\(left.stderr)\(right.stderr)")
                #expect(left.stdout.split(separator: "\n").count >= 40, "\(index ?? "primary key")")
                #expect(left.stdout == right.stdout, "dump by \(index ?? "primary key")")
            }
            let left = try runTool(storectlURL, ["inspect", dir + "/typed", "--format", "json"])
            let right = try runTool(storectlURL, ["inspect", dir + "/named", "--format", "json"])
            let entities = { (text: String) throws -> String in
                let object = try #require(try parseJSON(text) as? [String: Any])
                let data = try JSONSerialization.data(withJSONObject: object["entities"] ?? [], options: [.sortedKeys])
                return String(decoding: data, as: UTF8.self)
            }
            #expect(try entities(left.stdout) == entities(right.stdout), "the catalogs' entities")
        }
    }
}
