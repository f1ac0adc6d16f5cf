@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// `verify` says what it checked of records' kinds: against the kinds the type declares when the
/// catalog holds them; otherwise it says the types were not checked, and still finds fields of
/// several kinds and fields the type does not declare.
@Suite(.blocking) struct VerifyTypesTests {
    /// A demo store whose catalog lost its declared kinds (as a store written before they were
    /// recorded has none), with one message whose folder is text and one holding an undeclared
    /// field, written by name.
    func storeWithoutDeclaredKinds(_ path: String, badRecords: Bool) throws {
        let store = try populatedDemoStore(at: path, seed: 3, messages: 60, contacts: 5)
        try store.write { tx in try tx.updateCatalog { $0.entities["Message"]!.declaredKinds = nil } }
        store.close()
        let untyped = try Store(path: path)
        defer { untyped.close() }
        #expect(try untyped.catalog.entities["Message"]?.declaredKinds == nil)
        #expect(try untyped.catalog.entities["Message"]?.declaredFields != nil)
        guard badRecords else { return }
        let base = try #require(try untyped.read { try $0.record(entity: "Message", id: .uint(7)) })
        try untyped.write { tx in
            var text = base
            text["folder"] = .string("abc")
            try tx.put(entity: "Message", id: .uint(7), fields: text)
            var extra = try #require(try tx.record(entity: "Message", id: .uint(9)))
            extra["extra"] = .object(["a": .int(1)])
            try tx.put(entity: "Message", id: .uint(9), fields: extra, keepingUndeclaredFields: true)
        }
    }

    @Test func withoutDeclaredKindsVerifySaysTypesWereNotChecked() throws {
        try withTemporaryDirectory { dir in
            try storeWithoutDeclaredKinds(dir + "/s", badRecords: false)
            let verify = try runTool(storectlURL, ["verify", dir + "/s"])
            #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
            #expect(verify.stdout == "consistent: records, indexes, counts and journal agree; types: not checked for Message: "
                + "open the store once with the application's types\n")
            let json = try runTool(storectlURL, ["verify", dir + "/s", "--format", "json"])
            let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            #expect(report["typesNotChecked"] as? [String] == ["Message"] && report["consistent"] as? Bool == true)

            // Opened once with the application's types, the kinds are back and verify checks them.
            try Store(path: dir + "/s", entities: DemoFeed.entities).close()
            let again = try runTool(storectlURL, ["verify", dir + "/s"])
            #expect(again.status == 0 && again.stdout == "consistent: records, types, indexes, counts and journal agree\n", "\(again.stdout)")
        }
    }

    @Test func mixedKindsAndUndeclaredFieldsAreFindings() throws {
        try withTemporaryDirectory { dir in
            try storeWithoutDeclaredKinds(dir + "/s", badRecords: true)
            let verify = try runTool(storectlURL, ["verify", dir + "/s"])
            #expect(verify.status == 1, "\(verify.stdout)\(verify.stderr)")
            let lines = verify.stdout.split(separator: "\n").map(String.init)
            #expect(lines.contains("records:Message: Message.extra is not a field of the entity's type (its fields are contactId, date, "
                + "folder, id, isRead, title), yet 1 record holds it (first: Message 9)"), "\(verify.stdout)")
            #expect(lines.contains("records:Message: Message.folder holds values of 2 kinds, which its type cannot all read: "
                + "int in 59 (first: Message 1), string in 1 (first: Message 7)"), "\(verify.stdout)")
            #expect(lines.last == "2 findings")

            // Once the kinds are declared again, the text folder is a record the type cannot read
            // (the undeclared field is then one the type ignores, as if kept on purpose).
            try Store(path: dir + "/s", entities: DemoFeed.entities).close()
            let typed = try runTool(storectlURL, ["verify", dir + "/s"])
            #expect(typed.status == 1 && typed.stdout.contains("Message 7: field folder must hold an int"), "\(typed.stdout)")
        }
    }
}
