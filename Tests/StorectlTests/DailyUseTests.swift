@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Every field kind, nested values included: what `dump | load` must carry over unchanged.
struct Everything: Entity, Equatable {
    struct Part: Codable, Equatable {
        var label: String
        var weights: [Double]
        var count: Int
    }

    var id: UInt64
    var number: Int64
    var ratio: Double
    var text: String
    var flag: Bool
    var when: Date
    var uuid: UUID
    var data: Data
    var list: [Int64]
    var part: Part
    var maybe: String?

    static let indexes: [IndexDefinition] = [
        IndexDefinition("byText", ["text"]),
        IndexDefinition("byWhen", [.descending("when"), .ascending("number")]),
    ]

    static func random(id: UInt64, _ values: inout RandomValues) -> Everything {
        let doubles: [Double] = [0, -0.0, 0.1, -1.5, 2, 1e300, -2.5e-300, 123_456.789]
        func double() -> Double {
            Bool.random(using: &values.rng) ? doubles.randomElement(using: &values.rng)! : Double(Int.random(in: -1_000_000...1_000_000, using: &values.rng)) / 64
        }
        return Everything(
            id: id, number: values.int(), ratio: double(), text: values.string(), flag: Bool.random(using: &values.rng),
            // Whole milliseconds: what JSON's dates hold.
            when: Date(timeIntervalSince1970: Double(Int64.random(in: -2_000_000_000_000...4_000_000_000_000, using: &values.rng)) / 1000),
            uuid: UUID(uuid: (UInt8.random(in: 0...255, using: &values.rng), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, UInt8.random(in: 0...255, using: &values.rng))),
            data: Data(values.bytes()), list: (0..<Int.random(in: 0...3, using: &values.rng)).map { _ in values.int() },
            part: Part(label: values.string(), weights: [double(), double()], count: Int.random(in: -5...5, using: &values.rng)),
            maybe: Bool.random(using: &values.rng) ? values.string() : nil)
    }
}

/// storectl on the daily jobs of big stores: streaming output in every format, counts, the
/// journal's tail, timestamps and keys, a full inspect, compact's file modes, exit statuses, and
/// load as dump's inverse. Each output is checked against the library.
@Suite(.blocking) struct DailyUseTests {
    func lines(_ text: String) -> [String] { text.split(separator: "\n").map(String.init) }

    @Test func countsComeFromTheLibrarysCounts() throws {
        try withChangedDemoStore { path, store in
            let all = try runTool(storectlURL, ["count", path, "--entity", "Message"])
            let messages = try store.read { try $0.count(Message.self) }
            #expect(all.status == 0 && all.stdout == "\(messages)\n", "\(all)")
            let folder = try runTool(storectlURL, ["count", path, "--entity", "Message", "--index", "byFolderDate", "--prefix", "[2]",
                                                   "--from", "[\"2025-06-01T00:00:00Z\"]"])
            let want = try store.read { try $0.count(Message.self, index: "byFolderDate", range: IndexRange(prefix: [.int(2)],
                from: .inclusive([.date(ISO8601DateFormatter().date(from: "2025-06-01T00:00:00Z")!)]))) }
            #expect(folder.status == 0 && folder.stdout == "\(want)\n", "\(folder)")
            let inFolder = try store.read { try $0.count(Message.self, index: "byFolderDate", range: .prefix(2)) }
            #expect(want > 0 && want < inFolder)
            let unindexed = try runTool(storectlURL, ["count", path, "--entity", "Message", "--prefix", "[2]"])
            #expect(unindexed.status == 2 && unindexed.stderr.contains("need --index"), "\(unindexed)")
            // One count in JSON is one object.
            let json = try runTool(storectlURL, ["count", path, "--entity", "Message", "--index", "byFolderDate", "--prefix", "[2]",
                                                 "--format", "json"])
            let object = try #require(try parseJSON(json.stdout) as? [String: Any], "\(json.stdout)")
            #expect(object["count"] as? Int == inFolder && object["entity"] as? String == "Message" && object["index"] as? String == "byFolderDate")
            let whole = try #require(try parseJSON(try runTool(storectlURL, ["count", path, "--entity", "Message", "--format", "json"]).stdout)
                as? [String: Any])
            #expect(whole["count"] as? Int == messages && whole["index"] is NSNull)
        }
    }

    /// `--filter` keeps the records that meet a condition: `count` counts them, `dump` pages
    /// through them (in an index's order and in primary-key order), and a condition that cannot
    /// be tested is an error naming what is wrong, with status 2.
    @Test func filtersKeepTheRecordsThatMeetACondition() throws {
        try withChangedDemoStore { path, store in
            let filter = #"{"and": [{"field": "title", "contains": "RE", "caseInsensitive": true}, {"field": "isRead", "==": false}]}"#
            let condition = try IndexCondition(jsonText: filter)
            let want = try store.read { try $0.entries(entity: "Message", index: "byFolderDate", range: .prefix(2)) }
                .filter { entry in condition.holds { entry.record[$0] ?? .null } }
            #expect(want.count > 3)
            let count = try runTool(storectlURL, ["count", path, "--entity", "Message", "--index", "byFolderDate", "--prefix", "[2]", "--filter", filter])
            #expect(count.status == 0 && count.stdout == "\(want.count)\n", "\(count)")
            let dump = try runTool(storectlURL, ["dump", path, "--entity", "Message", "--index", "byFolderDate", "--prefix", "[2]",
                                                 "--filter", filter, "--offset", "1", "--limit", "3", "--format", "jsonl"])
            let ids = lines(dump.stdout).compactMap { try? parseJSON($0) as? [String: Any] }.compactMap { $0["id"] as? Int }
            #expect(dump.status == 0 && ids.map(String.init) == want.dropFirst().prefix(3).map(\.id.jsonText), "\(dump)")
            let everyone = try store.read { try $0.entries(entity: "Message", index: nil) }.filter { entry in condition.holds { entry.record[$0] ?? .null } }
            let byID = try runTool(storectlURL, ["dump", path, "--entity", "Message", "--filter", filter, "--offset", "2", "--format", "jsonl"])
            #expect(lines(byID.stdout).count == everyone.count - 2, "\(byID.stderr)")
            for (bad, says) in [(#"{"field": "subject", "==": 1}"#, "the filter names \"subject\", which is not a field of Message"),
                                (#"{"field": "folder", "contains": "2"}"#, "folder is stored as int"),
                                (#"{"field": "date", ">": "soon"}"#, "ISO 8601"),
                                (#"{"field": "title"}"#, "--filter: not a filter condition: field title needs exactly one test"),
                                ("{", "--filter: not a filter condition")] {
                let result = try runTool(storectlURL, ["dump", path, "--entity", "Message", "--index", "byFolderDate", "--filter", bad])
                #expect(result.status == 2 && result.stderr.contains(says) && result.stdout.isEmpty, "\(bad): \(result)")
            }
            let unindexed = try runTool(storectlURL, ["count", path, "--entity", "Message", "--filter", filter])
            #expect(unindexed.status == 2 && unindexed.stderr.contains("need --index"), "\(unindexed)")
        }
    }

    /// `--search` finds records by their words through a text index: `count`, `dump` and `watch`
    /// give the rows a query of the same search gives; a search without a text index, or with a
    /// range of its own, is an error that names the text indexes.
    @Test func searchFindsRecordsByTheirWords() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            var feed = DemoFeed(seed: 5)
            let store = try populatedDemoStore(at: path, feed: &feed, messages: 400, contacts: 10, entities: SearchableMessage.entities)
            defer { store.close() }
            let index = SearchableMessage.byText.name
            for (text, prefix) in [("REPORT", false), ("lunch re", true), ("plan", true)] {
                let (range, filter) = TextSearch(text, lastWordIsPrefix: prefix).query(on: SearchableMessage.byText.definition)
                let want = try store.read { try $0.objects(in: Query<Message>(index: index, range: range, filter: filter)) }
                #expect(want.count > 3, "\(text)")
                let flags = ["--index", index, "--search", text] + (prefix ? ["--last-word-is-prefix"] : [])
                let count = try runTool(storectlURL, ["count", path, "--entity", "Message"] + flags)
                #expect(count.status == 0 && count.stdout == "\(want.count)\n", "\(text): \(count)")
                let dump = try runTool(storectlURL, ["dump", path, "--entity", "Message", "--offset", "1", "--limit", "3", "--format", "jsonl"] + flags)
                let ids = lines(dump.stdout).compactMap { try? parseJSON($0) as? [String: Any] }.compactMap { $0["id"] as? Int }
                #expect(dump.status == 0 && ids.map(UInt64.init) == want.dropFirst().prefix(3).map(\.id), "\(text): \(dump)")
                let watch = try runTool(storectlURL, ["watch", path, "--entity", "Message", "--max-batches", "1"] + flags)
                #expect(watch.status == 0 && watch.stdout.contains("(initial)") && watch.stdout.contains("\(want.count.formatted()) rows"),
                        "\(text): \(watch)")
            }
            for (bad, says) in [(["--index", "byFolderDate", "--search", "report"], "text indexes: \(index)"),
                                (["--search", "report"], "--search needs --index"),
                                (["--index", index, "--search", "report", "--prefix", "[\"report\"]"], "give no --prefix"),
                                (["--index", index, "--last-word-is-prefix"], "--last-word-is-prefix goes with --search")] {
                let result = try runTool(storectlURL, ["dump", path, "--entity", "Message"] + bad)
                #expect(result.status == 2 && result.stderr.contains(says) && result.stdout.isEmpty, "\(bad): \(result)")
            }
        }
    }

    @Test func dumpPrintsEveryFormatFromTheSameRecords() throws {
        try withChangedDemoStore { path, store in
            let arguments = ["dump", path, "--entity", "Message", "--index", "byFolderDate", "--prefix", "[1]", "--offset", "5", "--limit", "40"]
            let want = try store.read { try $0.entries(entity: "Message", index: "byFolderDate", range: .prefix(1), offset: 5, limit: 40) }
            #expect(want.count == 40)

            let jsonl = try runTool(storectlURL, arguments + ["--format", "jsonl"])
            #expect(jsonl.status == 0, "\(jsonl.stderr)")
            let objects = try lines(jsonl.stdout).map { try #require(try parseJSON($0) as? [String: Any]) }
            #expect(objects.count == want.count)
            for (object, entry) in zip(objects, want) {
                #expect(object["id"] as? Int == Int(entry.id.jsonText))
                #expect(FieldValue.array(entry.key).jsonText == String(decoding: try JSONSerialization.data(withJSONObject: object["key"]!), as: UTF8.self)
                    .replacingOccurrences(of: "\\/", with: "/"))
                #expect((object["record"] as? [String: Any])?["title"] as? String == entry.record["title"]?.text)
            }

            let array = try runTool(storectlURL, arguments + ["--format", "json"])
            #expect(array.status == 0)
            let parsed = try #require(try parseJSON(array.stdout) as? [[String: Any]])
            #expect(parsed.map { $0["id"] as? Int } == objects.map { $0["id"] as? Int })

            let columns = ["key", "id", "contactId", "date", "folder", "isRead", "title"]
            let csv = try runTool(storectlURL, arguments + ["--format", "csv"])
            let csvLines = lines(csv.stdout)
            #expect(csv.status == 0 && csvLines.first == columns.joined(separator: ","), "\(csv.stdout.prefix(200))")
            #expect(csvLines.count == want.count + 1)
            for (line, entry) in zip(csvLines.dropFirst(), want) {
                // The key is a JSON array, quoted because it holds commas; the rest are plain.
                let fields = line.components(separatedBy: "\",").last!.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
                #expect(fields == [entry.id.jsonText, entry.record["contactId"]!.jsonText,
                                   String(entry.record["date"]!.jsonText.dropFirst().dropLast()), entry.record["folder"]!.jsonText,
                                   entry.record["isRead"]!.jsonText, entry.record["title"]!.text!], "\(line)")
            }

            let table = try runTool(storectlURL, arguments + ["--format", "table"])
            let tableLines = lines(table.stdout)
            #expect(table.status == 0 && tableLines.count == want.count + 2)
            #expect(tableLines.first?.split(separator: " ").map(String.init) == columns)
            for (line, entry) in zip(tableLines.dropFirst(2), want) {
                #expect(line.contains(entry.record["title"]!.text!) && line.contains(" \(entry.id.jsonText) "), "\(line)")
            }

            // Primary-key order with an offset walks; it agrees with the library too.
            let byID = try runTool(storectlURL, ["dump", path, "--entity", "Message", "--offset", "100", "--limit", "3", "--format", "jsonl"])
            let ids = try store.read { try $0.entries(entity: "Message", index: nil, offset: 100, limit: 3) }.map { Int($0.id.jsonText) }
            #expect(try lines(byID.stdout).map { try (parseJSON($0) as? [String: Any])?["id"] as? Int } == ids)
        }
    }

    @Test func journalShowsItsTailTimesAndIndexKeys() throws {
        try withChangedDemoStore { path, store in
            let newest = try store.read { try $0.journal(newest: 3) }
            #expect(newest.count == 3 && newest.map(\.sequence) == newest.map(\.sequence).sorted(by: >))
            let tail = try runTool(storectlURL, ["journal", path, "--tail", "3", "--keys", "--format", "jsonl"])
            #expect(tail.status == 0, "\(tail.stderr)")
            let objects = try lines(tail.stdout).map { try #require(try parseJSON($0) as? [String: Any]) }
            // Oldest first, as tail prints, each commit's entries in order.
            let entries = newest.reversed().flatMap { commit in commit.entries.map { (commit.timestamp, $0) } }
            #expect(objects.count == entries.count)
            for (object, (time, entry)) in zip(objects, entries) {
                #expect(object["sequence"] as? Int == Int(entry.sequence) && object["id"] as? Int == Int(entry.id.jsonText))
                #expect(object["time"] as? String == String(FieldValue.date(time).jsonText.dropFirst().dropLast()))
                let indexes = try #require(object["indexes"] as? [[String: Any]])
                #expect(indexes.map { $0["index"] as? String } == entry.indexChanges.map(\.index))
                for (shown, change) in zip(indexes, entry.indexChanges) {
                    let before = try change.before.map { try FieldValue.array($0.components()).jsonText } ?? "null"
                    let after = try change.after.map { try FieldValue.array($0.components()).jsonText } ?? "null"
                    #expect(try canonical(shown["before"]!) == canonical(parseJSON(before)))
                    #expect(try canonical(shown["after"]!) == canonical(parseJSON(after)))
                }
            }
            // The readable form: the newest commit first, each line with its commit's time.
            let readable = lines(try runTool(storectlURL, ["journal", path, "--tail", "1"]).stdout)
            #expect(readable.count == newest[0].entries.count)
            #expect(readable.allSatisfy { $0.hasPrefix("\(newest[0].sequence)  \(FieldValue.date(newest[0].timestamp).jsonText.dropFirst().dropLast())  ") })

            // --limit counts commits, as --tail does.
            let first = try store.read { try $0.journal(after: 0, limit: 2) }
            let two = try runTool(storectlURL, ["journal", path, "--limit", "2", "--format", "jsonl"])
            #expect(two.status == 0 && lines(two.stdout).count == first.map(\.entries.count).reduce(0, +), "\(two.stdout)")
            #expect(Set(try lines(two.stdout).map { try (parseJSON($0) as? [String: Any])?["sequence"] as? Int }) == Set(first.map { Int($0.sequence) }))
        }
    }

    /// JSON values compared as text with sorted keys.
    func canonical(_ value: Any) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed]), as: UTF8.self)
    }

    @Test func journalStartsAtTheOldestRetainedCommitAfterATrim() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            var feed = DemoFeed(seed: 4)
            let store = try populatedDemoStore(at: path, feed: &feed, messages: 100, contacts: 5,
                                               options: StoreOptions(durability: .none, journalRetention: JournalRetention(maximumCommits: 5)))
            for _ in 0..<20 { _ = try store.write { tx in try feed.mutate(tx, count: 1, contacts: 5) } }
            try store.sync()
            let bounds = try store.read { try $0.journalBounds() }
            #expect(bounds.first > 1)
            let result = try runTool(storectlURL, ["journal", path, "--format", "jsonl"])
            #expect(result.status == 0, "\(result.stderr)")
            let sequences = try lines(result.stdout).map { try (parseJSON($0) as? [String: Any])?["sequence"] as? Int }
            #expect(sequences.first == Int(bounds.first) && sequences.last == Int(bounds.last))
            let behind = try runTool(storectlURL, ["journal", path, "--after", "0"])
            #expect(behind.status == 2 && behind.stderr.contains("trimmed"), "\(behind)")
            // Past the end: nothing to print, and standard error says where the journal ends.
            let past = try runTool(storectlURL, ["journal", path, "--after", String(bounds.last + 100)])
            #expect(past.status == 0 && past.stdout.isEmpty, "\(past)")
            #expect(past.stderr == "storectl: the journal ends at commit \(bounds.last) (it holds commits \(bounds.first)…\(bounds.last)); "
                + "nothing follows commit \(bounds.last + 100)\n", "\(past.stderr)")
            let atEnd = try runTool(storectlURL, ["journal", path, "--after", String(bounds.last)])
            #expect(atEnd.status == 0 && atEnd.stdout.isEmpty && atEnd.stderr.isEmpty, "\(atEnd)")
        }
    }

    @Test func inspectJSONHoldsRealValuesOnly() throws {
        try withChangedDemoStore { path, store in
            let result = try runTool(storectlURL, ["inspect", path, "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(!result.stdout.contains("\\/") && !result.stdout.contains("no active readers"))
            let report = try #require(try parseJSON(result.stdout) as? [String: Any])
            let library = try store.inspect()
            #expect(report["path"] as? String == path)
            let environment = try #require(report["environment"] as? [String: Any])
            let readers = try #require(environment["readers"] as? [Any])
            #expect(readers.allSatisfy { ($0 as? [String: Any])?["pid"] is Int })
            let pageSize = try #require(environment["pageSize"] as? Int)
            let percent = try #require(environment["mapUsedPercent"] as? Double)
            #expect(percent > 0 && percent <= 100)
            #expect(environment["freePages"] as? Int == library.environment.freePages)
            #expect(environment["fileSize"] as? Int == (try FileManager.default.attributesOfItem(atPath: path + "/data.mdb")[.size] as? Int))
            let entities = try #require(report["entities"] as? [[String: Any]])
            let message = try #require(entities.first { $0["name"] as? String == "Message" })
            let fields = try #require(message["fields"] as? [[String: String]])
            #expect(fields.map { $0["name"]! } == library.entities.first { $0.name == "Message" }!.fields.map(\.name))
            #expect(fields.first { $0["name"] == "date" }?["kind"] == "date")
            func checkTree(_ tree: Any?, _ want: StoreInspection.Tree) throws {
                let tree = try #require(tree as? [String: Int])
                #expect(tree["pages"] == want.pages && tree["entries"] == want.entries && tree["bytes"] == want.pages * pageSize)
            }
            let messageTrees = library.entities.first { $0.name == "Message" }!
            try checkTree(message["tree"], messageTrees.tree)
            for index in try #require(message["indexes"] as? [[String: Any]]) {
                let want = try #require(messageTrees.indexes.first { $0.name == index["name"] as? String })
                try checkTree(index["tree"], want.tree)
                try checkTree(index["counts"], want.counts)
            }
            let journal = try #require(report["journal"] as? [String: Any])
            try checkTree(journal["tree"], library.journal.tree)
            #expect(library.journal.tree.pages > 0)

            let readable = try runTool(storectlURL, ["inspect", path])
            #expect(readable.status == 0 && readable.stdout.contains("% written") && readable.stdout.contains("free for reuse"))
            #expect(readable.stdout.contains("counts byFolderDate") && readable.stdout.contains("KiB"))
        }
    }

    @Test func compactCopiesTakeTheStoresModesAndReplaceOnlyWithForce() throws {
        try withTemporaryDirectory { dir in
            for fileMode: mode_t in [0o600, 0o640] {
                let path = dir + "/s\(fileMode)"
                let store = try populatedDemoStore(at: path, seed: 2, messages: 50, contacts: 5,
                                                   options: StoreOptions(durability: .none, fileMode: fileMode))
                try store.sync()
                let copy = path + "-copy"
                // Under a permissive umask the copy still takes the store's modes.
                let result = try runTool(URL(fileURLWithPath: "/bin/sh"), ["-c", "umask 002; exec \"$0\" compact \"$1\" \"$2\"", storectlURL.path, path, copy])
                #expect(result.status == 0, "\(result.stderr)")
                func mode(_ p: String) throws -> Int { try FileManager.default.attributesOfItem(atPath: p)[.posixPermissions] as! Int }
                #expect(try mode(copy + "/data.mdb") == Int(fileMode))
                #expect(try mode(copy) == mode(path))
                #expect(!FileManager.default.fileExists(atPath: copy + "/data.mdb.partial"))

                let again = try runTool(storectlURL, ["compact", path, copy])
                #expect(again.status == 2 && again.stderr.contains("--force"), "\(again.stderr)")
                _ = try store.write { tx in try tx.put(Contact(id: 999, name: "new")) }
                let forced = try runTool(storectlURL, ["compact", path, copy, "--force"])
                #expect(forced.status == 0, "\(forced.stderr)")
                let copied = try Store(path: copy, options: StoreOptions(readOnly: true))
                #expect(try copied.read { try $0.get(Contact.self, id: 999) }?.name == "new")
                #expect(try copied.verify().isEmpty)
                copied.close()
                store.close()
            }
            let itself = try runTool(storectlURL, ["compact", dir + "/s384", dir + "/s384/", "--force"])
            #expect(itself.status == 2 && itself.stderr.contains("the store being copied"), "\(itself.stderr)")
            let other = dir + "/other"
            try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: false)
            try Data("keep".utf8).write(to: URL(fileURLWithPath: other + "/notes.txt"))
            let refused = try runTool(storectlURL, ["compact", dir + "/s384", other, "--force"])
            #expect(refused.status == 2 && refused.stderr.contains("only a store is replaced"), "\(refused.stderr)")
            #expect(try String(contentsOfFile: other + "/notes.txt", encoding: .utf8) == "keep")
        }
    }

    @Test func exitStatusesAreTheDocumentedOnes() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            let store = try Store(path: path, entities: [Item.self, Note.self], options: StoreOptions(durability: .none))
            try store.write { tx in
                try tx.put(Item(id: -7, group: 1, score: 0.5, name: "minus seven", flag: true, tag: nil))
                try tx.put(Note(id: "n1", body: "b", priority: 1, when: Date(timeIntervalSince1970: 0), labels: []))
            }
            try store.sync()
            let negative = try runTool(storectlURL, ["get", path, "--entity", "Item", "-7"])
            #expect(negative.status == 0 && negative.stdout.contains("minus seven"), "\(negative)")
            #expect(try runTool(storectlURL, ["get", path, "--entity", "Item", "--", "-7"]).status == 0)
            let missing = try runTool(storectlURL, ["get", path, "--entity", "Item", "8"])
            #expect(missing.status == 3 && missing.stderr.contains("Item 8 not found"), "\(missing)")
            let wrongKind = try runTool(storectlURL, ["get", path, "--entity", "Item", "\"abc\""])
            #expect(wrongKind.status == 2 && wrongKind.stderr.contains("stored as int"), "\(wrongKind)")
            // Several ids: each record in order; a missing one is named, after the others, with status 3.
            try store.write { tx in try tx.put(Item(id: 9, group: 1, score: 1, name: "nine", flag: false, tag: nil)) }
            try store.sync()
            let several = try runTool(storectlURL, ["get", path, "--entity", "Item", "9", "-7", "8", "--format", "jsonl"])
            #expect(several.status == 3 && several.stderr.contains("Item 8 not found"), "\(several)")
            #expect(lines(several.stdout).map { $0.hasPrefix("{\"id\":9,") || $0.hasPrefix("{\"id\":-7,") } == [true, true], "\(several.stdout)")
            #expect(lines(several.stdout).first?.hasPrefix("{\"id\":9,") == true)
            let array = try runTool(storectlURL, ["get", path, "--entity", "Item", "9", "-7", "--format", "json"])
            let objects = try JSONSerialization.jsonObject(with: Data(array.stdout.utf8)) as? [Any]
            #expect(array.status == 0 && objects?.count == 2, "\(array)")
            let stringKey = try runTool(storectlURL, ["get", path, "--entity", "Note", "n1"])
            #expect(stringKey.status == 0 && stringKey.stdout.contains("\"body\":\"b\""), "\(stringKey)")
            let usage = try runTool(storectlURL, ["dump", path, "--entity", "Item", "--no-such-option"])
            #expect(usage.status == 2 && usage.stderr.contains("--no-such-option"), "\(usage)")
            let badFormat = try runTool(storectlURL, ["dump", path, "--entity", "Item", "--format", "xml"])
            #expect(badFormat.status == 2, "\(badFormat)")
            let followedArray = try runTool(storectlURL, ["journal", path, "--follow", "--format", "json"])
            #expect(followedArray.status == 2 && followedArray.stderr.contains("--follow prints commits as they come"), "\(followedArray)")
            #expect(try runTool(storectlURL, ["count", path, "--entity", "Item"]).status == 0)
            #expect(try runTool(storectlURL, ["verify", path]).status == 0)
            #expect(try runTool(storectlURL, ["--help"]).status == 0)
            // Status 1, verify's findings: ReadCommandTests.verifyFindsACorruptedIndexEntry.
            store.close()
        }
    }

    /// A reader that goes away (`storectl … 2>&1 | head -1`, a log collector that stops) ends
    /// no command with a trap: a closed standard output ends it with status 0, as `head` wanted
    /// no more; a closed standard error loses the messages, and the command ends as it would have.
    @Test func aReaderThatGoesAwayEndsNoCommandWithATrap() throws {
        /// Runs storectl with `closed` (1 or 2) a pipe no one reads; the other goes to /dev/null.
        func run(_ arguments: [String], closing closed: Int32) throws -> (status: Int32, reason: Process.TerminationReason) {
            let process = Process()
            process.executableURL = storectlURL
            process.arguments = arguments
            let pipe = Pipe()
            try pipe.fileHandleForReading.close()
            let discard = FileHandle(forWritingAtPath: "/dev/null")!
            process.standardOutput = closed == 1 ? pipe : discard
            process.standardError = closed == 2 ? pipe : discard
            try process.run()
            try pipe.fileHandleForWriting.close()
            process.waitUntilExit()
            return (process.terminationStatus, process.terminationReason)
        }
        try withTemporaryDirectory { dir in
            let path = dir + "/demo"
            try populatedDemoStore(at: path, seed: 5, messages: 2_000, contacts: 20).close()
            // An error to a closed standard error: status 2 still.
            let missing = try run(["inspect", dir + "/missing"], closing: 2)
            #expect(missing.reason == .exit && missing.status == 2, "\(missing)")
            // Progress lines to a closed standard error: the load goes on to the end.
            let lines = (1...300).map { #"{"id": \#(10_000 + $0), "folder": 1, "date": "2026-01-01T09:30:00Z", "title": "t", "isRead": false, "contactId": 2}"# }
            try (lines.joined(separator: "\n") + "\n").write(toFile: dir + "/more.jsonl", atomically: true, encoding: .utf8)
            let load = try run(["load", path, "--entity", "Message", "--input", dir + "/more.jsonl", "--batch", "10"], closing: 2)
            #expect(load.reason == .exit && load.status == 0, "\(load)")
            let count = try runTool(storectlURL, ["count", path, "--entity", "Message"])
            #expect(count.stdout.contains("2300"), "\(count.stdout)")
            // A dump whose reader went away.
            let dump = try run(["dump", path, "--entity", "Message"], closing: 1)
            #expect(dump.reason == .exit && dump.status == 0, "\(dump)")
        }
    }

    @Test(arguments: testSeeds(1, base: 23)) func loadIsTheInverseOfDumpForEveryFieldKind(seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            let source = dir + "/source", copy = dir + "/copy"
            let store = try Store(path: source, entities: [Everything.self], options: StoreOptions(durability: .none))
            var values = RandomValues(seed: seed)
            let records = (0..<300).map { i in Everything.random(id: i < 5 ? UInt64.max - UInt64(i) : UInt64(i), &values) }
            try store.write { tx in for record in records { try tx.put(record) } }
            try store.sync()
            let dumped = try runTool(storectlURL, ["dump", source, "--entity", "Everything", "--format", "jsonl"])
            #expect(dumped.status == 0 && lines(dumped.stdout).count == records.count, "\(dumped.stderr)")
            let file = dir + "/everything.jsonl"
            try dumped.stdout.write(toFile: file, atomically: true, encoding: .utf8)

            let load = try runTool(storectlURL, ["load", copy, "--entity", "Everything", "--like", source, "--input", file, "--batch", "64"])
            #expect(load.status == 0, "\(load.stderr)")
            #expect(load.stderr.contains("loaded 64 records") && load.stderr.contains("loaded 300 records"))
            for index in [[], ["--index", "byText"], ["--index", "byWhen"]] {
                let again = try runTool(storectlURL, ["dump", copy, "--entity", "Everything", "--format", "jsonl"] + index)
                let original = try runTool(storectlURL, ["dump", source, "--entity", "Everything", "--format", "jsonl"] + index)
                #expect(again.status == 0, "\(again.stderr)")
                if let (got, want) = zip(lines(again.stdout), lines(original.stdout)).first(where: { $0 != $1 }) {
                    Issue.record("seed \(seed), \(index): the reloaded store dumps\n\(got)\nwhere the original dumps\n\(want)")
                }
                #expect(lines(again.stdout).count == lines(original.stdout).count)
            }
            #expect(try runTool(storectlURL, ["verify", copy]).status == 0)
            // The values came back as their kinds: the typed records read back equal.
            let loaded = try Store(path: copy, entities: [Everything.self], options: StoreOptions(readOnly: true))
            let back = try loaded.read { try $0.query(Everything.self, index: "byText") }
            let want = try store.read { try $0.query(Everything.self, index: "byText") }
            #expect(back.count == want.count)
            for (got, expected) in zip(back, want) where got != expected {
                // Doubles compare by bits (0 and -0 differ; NaN is not produced here).
                Issue.record("seed \(seed): record \(expected.id) came back as \(got)")
            }
            loaded.close()
            store.close()

            // A bad line stops the load; the transactions before it stay.
            let bad = dir + "/bad.jsonl"
            try ("{\"id\": 1, \"name\": \"a\"}\n{\"id\": 2, \"name\": \"b\"}\nnot json\n{\"id\": 3}\n").write(toFile: bad, atomically: true, encoding: .utf8)
            let partial = try runTool(storectlURL, ["load", dir + "/fresh", "--entity", "Thing", "--input", bad, "--batch", "1"])
            #expect(partial.status == 2 && partial.stderr.contains("line 3"), "\(partial)")
            let fresh = try Store(path: dir + "/fresh", options: StoreOptions(readOnly: true))
            #expect(try fresh.read { try $0.count(entity: "Thing") } == 2)
            #expect(try fresh.catalog.entities["Thing"]?.primaryKeyKind == "int")
            fresh.close()
            // A record the store refuses (an id of the wrong kind) names its line.
            let refusedFile = dir + "/refused.jsonl"
            try ("{\"id\": 4}\n\n{\"id\": \"five\"}\n").write(toFile: refusedFile, atomically: true, encoding: .utf8)
            let refused = try runTool(storectlURL, ["load", dir + "/fresh", "--entity", "Thing", "--input", refusedFile])
            #expect(refused.status == 2 && refused.stderr.contains("line 3 was refused") && refused.stderr.contains("lines 1–3 were not"),
                    "\(refused.stderr)")
            let after = try Store(path: dir + "/fresh", options: StoreOptions(readOnly: true))
            #expect(try after.read { try $0.count(entity: "Thing") } == 2)
            after.close()
        }
    }

    /// A hundred thousand and a million rows with `Tools/test --long`; 10,000 and 100,000 in
    /// the quick run.
    @Test func dumpMemoryStaysFlatFromAHundredThousandToAMillionRows() async throws {
        try await onOwnThread { try self.dumpMemoryStaysFlatFromAHundredThousandToAMillionRowsOnItsThread() }
    }

    /// The body of ``dumpMemoryStaysFlatFromAHundredThousandToAMillionRows()``, on a thread of its own (``onOwnThread(_:)``).
    func dumpMemoryStaysFlatFromAHundredThousandToAMillionRowsOnItsThread() throws {
        let sizes = TestSize.choose(quick: [10_000, 100_000], long: [100_000, 1_000_000])
        try withTemporaryDirectory { dir in
            var peaks: [Int: Int] = [:], offsetPeaks: [Int: Int] = [:]
            for messages in sizes {
                let path = dir + "/s\(messages)"
                let populate = try runTool(storectlURL, ["demo", "populate", path, "--messages", "\(messages)", "--load-durability", "none"])
                #expect(populate.status == 0, "\(populate.stderr)")
                let output = dir + "/dump\(messages).jsonl"
                let run = try runMeasuringPeakMemory(storectlURL, ["dump", path, "--entity", "Message", "--format", "jsonl"], output: output)
                #expect(run.status == 0)
                let size = try FileManager.default.attributesOfItem(atPath: output)[.size] as! Int
                #expect(size > messages * 80, "the dump holds every record")
                try FileManager.default.removeItem(atPath: output)
                peaks[messages] = run.peakMemory
                // An offset in primary-key order walks the records before it, releasing their pages.
                let skipping = try runMeasuringPeakMemory(storectlURL, ["dump", path, "--entity", "Message", "--offset", "\(messages * 9 / 10)",
                                                                        "--limit", "10", "--format", "jsonl"])
                #expect(skipping.status == 0)
                offsetPeaks[messages] = skipping.peakMemory
            }
            let small = peaks[sizes[0]]!, large = peaks[sizes[1]]!
            print("storectl dump peak memory: \(small / 1_048_576) MiB at \(sizes[0]) rows, \(large / 1_048_576) MiB at \(sizes[1])")
            #expect(large < small + small / 4, "peak memory \(small) bytes at \(sizes[0]) rows, \(large) at \(sizes[1])")
            let skipSmall = offsetPeaks[sizes[0]]!, skipLarge = offsetPeaks[sizes[1]]!
            #expect(skipLarge < skipSmall + skipSmall / 4, "dump --offset peak memory \(skipSmall) bytes at \(sizes[0]) rows, \(skipLarge) at \(sizes[1])")
        }
    }
}

private extension FieldValue {
    var text: String? { if case let .string(s) = self { s } else { nil } }
}
