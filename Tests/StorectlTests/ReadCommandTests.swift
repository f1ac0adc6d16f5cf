@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// End-to-end runs of storectl's read-only commands on a populated store.
@Suite(.blocking) struct ReadCommandTests {
    @Test func versionNamesTheLibraryAndStoreFormat() throws {
        let result = try runTool(storectlURL, ["--version"])
        #expect(result.status == 0)
        #expect(result.stdout == "storectl \(feedstoreVersion) (store format \(Catalog.currentFormatVersion), LMDB \(lmdbVersion), \(lmdbLocking))\n")
    }

    /// The LMDB linked in is the one the build chose: compiled in with the BundledLMDB trait,
    /// else the system's, as pkg-config describes it.
    @Test func theLMDBLinkedInIsTheOneTheTraitChose() throws {
        #if BundledLMDB
        #expect(lmdbVersion == "0.9.70")
        #else
        let system = try runTool(URL(fileURLWithPath: "/usr/bin/env"), ["pkg-config", "--modversion", "lmdb"])
        #expect(system.status == 0 && lmdbVersion == system.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "\(system)")
        #endif
    }

    @Test func inspectReportsEntitiesIndexesAndJournal() throws {
        try withChangedDemoStore { path, store in
            let result = try runTool(storectlURL, ["inspect", path, "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let report = try #require(try parseJSON(result.stdout) as? [String: Any])
            let journal = try #require(report["journal"] as? [String: Any])
            #expect(journal["lastSequence"] as? Int == Int(try store.read { try $0.journalBounds().last }))
            let entities = try #require(report["entities"] as? [[String: Any]])
            let message = try #require(entities.first { $0["name"] as? String == "Message" })
            #expect(message["records"] as? Int == (try store.read { try $0.count(Message.self) }))
            #expect(message["primaryKeyKind"] as? String == "uint")
            let indexes = try #require(message["indexes"] as? [[String: Any]])
            #expect(Set(indexes.compactMap { $0["name"] as? String }) == ["byFolderDate", "unreadByDate", "byContact", "id"])
            let unread = try #require(indexes.first { $0["name"] as? String == "unreadByDate" })
            let unreadCount = try store.read { try $0.count(Message.self, index: "unreadByDate") }
            #expect(unread["partial"] as? Bool == true)
            #expect(unread["entries"] as? Int == unreadCount)
            let human = try runTool(storectlURL, ["inspect", path])
            #expect(human.status == 0 && human.stdout.contains("byFolderDate") && human.stdout.contains("Journal: commits"))
        }
    }

    @Test func dumpFollowsAnIndexRangeLikeTheLibrary() throws {
        try withChangedDemoStore { path, store in
            let result = try runTool(storectlURL, ["dump", path, "--entity", "Message", "--index", "byFolderDate", "--prefix", "[2]",
                                                   "--offset", "3", "--limit", "7", "--jsonl"])
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n").map(String.init)
            let want = try store.read { try $0.query(Message.self, index: "byFolderDate", range: .prefix(2), offset: 3, limit: 7) }
            #expect(lines.count == 7)
            for (line, message) in zip(lines, want) {
                let object = try #require(try parseJSON(line) as? [String: Any])
                #expect(object["id"] as? Int == Int(message.id))
                #expect((object["key"] as? [Any])?.first as? Int == 2)
                #expect((object["record"] as? [String: Any])?["title"] as? String == message.title)
            }
            // Unsigned keys given as JSON numbers are matched to the stored kind.
            let contact = try runTool(storectlURL, ["dump", path, "--entity", "Message", "--index", "byContact", "--prefix", "[7]", "--jsonl"])
            #expect(contact.stdout.split(separator: "\n").count == (try store.read { try $0.count(Message.self, index: "byContact", range: .prefix(.uint(7))) }))
            // Primary-key order, with bounds.
            let ids = try runTool(storectlURL, ["dump", path, "--entity", "Message", "--from", "[10]", "--to", "[14]", "--jsonl"])
            let got = try ids.stdout.split(separator: "\n").map { try #require((try parseJSON(String($0)) as? [String: Any])?["id"] as? Int) }
            #expect(got == Array(10...14).filter { id in (try? store.read { try $0.get(Message.self, id: UInt64(id)) }) != nil })
        }
    }

    @Test func getAndJournal() throws {
        try withChangedDemoStore { path, store in
            let got = try runTool(storectlURL, ["get", path, "--entity", "Contact", "7", "--json"])
            #expect(got.status == 0, "\(got.stderr)")
            let object = try #require(try parseJSON(got.stdout) as? [String: Any])
            #expect((object["record"] as? [String: Any])?["name"] as? String == (try store.read { try $0.get(Contact.self, id: 7) })?.name)
            let journal = try runTool(storectlURL, ["journal", path, "--after", "1", "--limit", "5", "--jsonl"])
            let lines = journal.stdout.split(separator: "\n")
            let want = try store.read { try $0.journal(after: 1, limit: 5) }.flatMap(\.entries)
            #expect(lines.count == want.count)
            for (line, entry) in zip(lines, want) {
                let o = try #require(try parseJSON(String(line)) as? [String: Any])
                #expect(o["sequence"] as? Int == Int(entry.sequence) && o["kind"] as? String == entry.kind.rawValue)
                #expect(o["entity"] as? String == entry.entity && o["changedFields"] as? [String] == entry.changedFields)
            }
        }
    }

    @Test func verifyFindsACorruptedIndexEntry() throws {
        try withChangedDemoStore { path, store in
            let clean = try runTool(storectlURL, ["verify", path, "--json"])
            #expect(clean.status == 0 && clean.stdout.contains("\"consistent\":true"), "\(clean.stdout)\(clean.stderr)")
            // Remove one index entry behind the store's back, through the LMDB layer.
            let index = try store.core.schema.entity("Message").index(named: "byFolderDate")
            try store.core.mapLock.withShared {
                let txn = try LMDBTransaction(environment: store.core.environment, readOnly: false)
                try txn.withCursor(index.database) { cursor in
                    _ = try cursor.first()
                    try cursor.deleteCurrent()
                }
                try txn.commit()
            }
            let broken = try runTool(storectlURL, ["verify", path])
            #expect(broken.status == 1)
            #expect(broken.stdout.contains("index:Message.byFolderDate") && broken.stdout.contains("missing entry"))
        }
    }

    @Test func damagedRecordsAndNewerFormatsAreReportedNotCrashedOn() throws {
        try withChangedDemoStore { path, store in
            // Garbage in place of message 1's record, written through the LMDB layer.
            let records = try store.core.schema.entity("Message").records
            try store.core.mapLock.withShared {
                let txn = try LMDBTransaction(environment: store.core.environment, readOnly: false)
                try txn.put(records, key: try KeyEncoding.encode([FieldValue.uint(1)]), value: [0xFF, 0x07, 0x01])
                try txn.commit()
            }
            for arguments in [["get", path, "--entity", "Message", "1"], ["dump", path, "--entity", "Message"]] {
                let result = try runTool(storectlURL, arguments)
                #expect(result.status == 2 && result.stderr.contains("corrupt"), "\(arguments): \(result.status) \(result.stderr)")
            }
            let verify = try runTool(storectlURL, ["verify", path])
            #expect(verify.status == 1 && verify.stdout.contains("records:Message"), "\(verify.stdout)\(verify.stderr)")

            // A store written by a newer library: every command refuses it with the versions.
            try store.core.mapLock.withShared {
                let txn = try LMDBTransaction(environment: store.core.environment, readOnly: false)
                try txn.put(try txn.openDatabase(named: SystemDatabases.metaName, create: false)!, key: MetaKey.format, value: [0, 0, 0, 99])
                try txn.commit()
            }
            for command in [["inspect", path], ["verify", path], ["dump", path, "--entity", "Message"],
                            ["watch", path, "--entity", "Message", "--index", "byFolderDate", "--max-batches", "1"]] {
                let result = try runTool(storectlURL, command)
                #expect(result.status == 2 && result.stderr.contains("99"), "\(command): \(result.status) \(result.stderr)")
            }
        }
    }

    /// A store in format 1 (no journal commits yet: only its layout's marks) is refused by the
    /// read-only commands with the way out, and `upgrade` brings it to the current format.
    @Test func upgradeBringsAnOlderFormatToTheCurrentOne() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            try Store(path: path).close()
            let env = try LMDBEnvironment(path: path, flags: [], mapSize: 16 << 20, maxDatabases: 126, maxReaders: 8, mode: 0o600)
            let txn = try LMDBTransaction(environment: env, readOnly: false)
            let meta = try txn.openDatabase(named: SystemDatabases.metaName, create: false)!
            _ = try txn.openDatabase(named: SystemDatabases.formatOneCommitsName, create: true)
            try txn.put(meta, key: MetaKey.formatOneLastSequence, value: MetaKey.encode(0))
            try txn.put(meta, key: MetaKey.format, value: [0, 0, 0, 1])
            try txn.commit()
            env.close()

            let refused = try runTool(storectlURL, ["inspect", path])
            #expect(refused.status == 2 && refused.stderr.contains("storectl upgrade"), "\(refused.stderr)")
            let upgrade = try runTool(storectlURL, ["upgrade", path])
            #expect(upgrade.status == 0 && upgrade.stdout == "upgraded \(path) from format 1 to format \(Catalog.currentFormatVersion)\n",
                    "\(upgrade.stdout)\(upgrade.stderr)")
            let again = try runTool(storectlURL, ["upgrade", path])
            #expect(again.stdout == "\(path) is already in format \(Catalog.currentFormatVersion); nothing to upgrade\n", "\(again.stdout)")
            let inspect = try runTool(storectlURL, ["inspect", path, "--json"])
            #expect(inspect.status == 0, "\(inspect.stderr)")
            #expect((try parseJSON(inspect.stdout) as? [String: Any])?["formatVersion"] as? Int == Int(Catalog.currentFormatVersion))
            #expect(try runTool(storectlURL, ["verify", path]).status == 0)
        }
    }

    @Test func compactWritesAVerifiedCopyWithTheSameRecords() throws {
        try withChangedDemoStore { path, store in
            let copy = path + "-compact"
            let result = try runTool(storectlURL, ["compact", path, copy])
            #expect(result.status == 0, "\(result.stderr)")
            let copied = try Store(path: copy, options: StoreOptions(readOnly: true))
            #expect(try copied.verify().isEmpty)
            let original = try store.read { try $0.entries(entity: "Message", index: "byFolderDate").map(\.id) }
            #expect(try copied.read { try $0.entries(entity: "Message", index: "byFolderDate").map(\.id) } == original)
            let missingParent = try runTool(storectlURL, ["compact", path, path + "-missing/dir/copy"])
            #expect(missingParent.status == 2 && missingParent.stderr.contains("parent directory \(path)-missing/dir does not exist"),
                    "\(missingParent.stderr)")
            #expect(!FileManager.default.fileExists(atPath: path + "-missing"))
            let again = try runTool(storectlURL, ["compact", path, copy])
            #expect(again.status == 2 && again.stderr.contains("exists and is not empty"), "\(again.stderr)")
        }
    }

    @Test func errorsAreClearAndNonZero() throws {
        try withChangedDemoStore { path, _ in
            let cases: [([String], String)] = [
                (["inspect", path + "-missing"], "does not exist"),
                (["dump", path, "--entity", "Nope"], "no entity named Nope"),
                (["dump", path, "--entity", "Message", "--index", "nope"], "no index named nope"),
                (["dump", path, "--entity", "Message", "--index", "byFolderDate", "--prefix", "[1"], "JSON array"),
                (["get", path, "--entity", "Message", "999999999"], "not found"),
            ]
            for (arguments, message) in cases {
                let result = try runTool(storectlURL, arguments)
                #expect(result.status != 0 && result.stderr.contains(message), "\(arguments): \(result.stderr)")
            }
            // A truncated copy: a clear error, not a crash.
            let truncated = path + "-truncated"
            try FileManager.default.copyItem(atPath: path, toPath: truncated)
            let handle = try #require(FileHandle(forWritingAtPath: truncated + "/data.mdb"))
            try handle.truncate(atOffset: 8_192 * 4)
            try handle.close()
            for command in ["inspect", "verify"] {
                let result = try runTool(storectlURL, [command, truncated])
                #expect(result.status == 2 && result.stderr.contains("truncated"), "\(command): \(result.status) \(result.stderr)")
            }
            try Data("x".utf8).write(to: URL(fileURLWithPath: path + ".file"))
            let file = try runTool(storectlURL, ["inspect", path + ".file"])
            #expect(file.status != 0 && file.stderr.contains("not a Feedstore store"))
        }
    }
}
