@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// `storectl watch` end to end: the watching process prints JSONL batches while another process
/// writes; the batches, applied to a mirror by the contract's rules, must give what `dump`
/// prints at the end.
@Suite(.blocking) struct WatchCommandTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var index: String
        var watchArguments: [String]
        /// The `dump` arguments giving the same rows (a window as offset and limit).
        var dumpArguments: [String]
        var sectionBy: Int
        var indexesOnly = false
        var seed: UInt64
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "sectioned folders", index: "byFolderDate", watchArguments: ["--section-by", "1"], dumpArguments: [],
             sectionBy: 1, seed: 11),
        Case(name: "window of one folder", index: "byFolderDate",
             watchArguments: ["--prefix", "[2]", "--offset", "5", "--limit", "25"],
             dumpArguments: ["--prefix", "[2]", "--offset", "5", "--limit", "25"], sectionBy: 0, seed: 12),
        Case(name: "unread, reversed, from a date", index: "unreadByDate",
             watchArguments: ["--reverse", "--to", "[\"2026-06-01T00:00:00Z\"]"],
             dumpArguments: ["--reverse", "--to", "[\"2026-06-01T00:00:00Z\"]"], sectionBy: 0, seed: 13),
        Case(name: "indexes only, sectioned", index: "byFolderDate", watchArguments: ["--section-by", "1", "--mode", "indexes"],
             dumpArguments: [], sectionBy: 1, indexesOnly: true, seed: 14),
        // Filtered: the writer's read flips make messages enter and leave the list.
        Case(name: "unread in a folder, windowed", index: "byFolderDate",
             watchArguments: ["--prefix", "[2]", "--filter", #"{"field": "isRead", "==": false}"#, "--offset", "2", "--limit", "10"],
             dumpArguments: ["--prefix", "[2]", "--filter", #"{"field": "isRead", "==": false}"#, "--offset", "2", "--limit", "10"],
             sectionBy: 0, seed: 15),
        Case(name: "search, indexes only, sectioned", index: "byFolderDate",
             watchArguments: ["--section-by", "1", "--mode", "indexes", "--filter", Self.search],
             dumpArguments: ["--filter", Self.search], sectionBy: 1, indexesOnly: true, seed: 16),
    ]
    static let search = #"{"and": [{"field": "title", "contains": "RE", "caseInsensitive": true}, {"not": {"field": "isRead", "==": true}}]}"#

    func withDemoStore(_ body: (String, UInt64) throws -> Void) throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            let head: UInt64
            do {
                let store = try populatedDemoStore(at: path, seed: 5, messages: 1_500, contacts: 30)
                defer { store.close() }
                try store.sync()
                head = try store.read { try $0.journalBounds().last }
            }
            try body(path, head)
        }
    }

    @Test(arguments: cases) func batchesFromALiveWriterRebuildTheDump(_ c: Case) throws {
        try withDemoStore { path, head in
            let commits = 40
            let last = head + UInt64(commits)
            let watch = try RunningTool(storectlURL, ["watch", path, "--entity", "Message", "--index", c.index, "--jsonl",
                                                      "--until-sequence", String(last)] + c.watchArguments)
            #expect(watch.waitForLines(1, timeout: 60), "the initial batch was not printed")
            let writer = try runTool(storectlURL, ["demo", "mutate", path, "--commits", String(commits), "--per-commit", "5",
                                                   "--seed", String(c.seed), "--durability", "none"])
            #expect(writer.status == 0, "\(writer.stderr)")
            #expect(writer.stdout.split(separator: "\n").last == "committed \(last)")
            let result = watch.finish(timeout: 60)
            #expect(result.status == 0, "\(result.stderr)")

            // The library's one mirror applies the printed batches.
            var mirror = SectionedMirror<String?>()
            let batches = try result.stdout.split(separator: "\n").map { line in try #require(try JSONMirror.object(String(line))) }
            for batch in batches {
                do { try mirror.apply(try JSONMirror.PrintedBatch(batch)) } catch { Issue.record("seed \(c.seed): \(error)") }
            }
            #expect(batches.first?["initial"] as? Bool == true)
            // The watcher may coalesce the writer's commits into any number of batches; what it
            // promises is that they all arrive. A whole-index watcher sees every commit of the
            // writer (each changes messages), so its last batch ends at the writer's last commit.
            let reached = batches.last?["toSequence"] as? Int
            if c.sectionBy == 1 && !c.watchArguments.contains("--filter") {
                #expect(batches.count >= 2, "the writer's commits produced no batch")
                #expect(reached == Int(last), "seed \(c.seed): the last batch ends at \(reached ?? -1), the writer's last commit is \(last)")
            } else {
                #expect(reached.map { $0 <= Int(last) } == true)
            }

            let dump = try runTool(storectlURL, ["dump", path, "--entity", "Message", "--index", c.index, "--jsonl"] + c.dumpArguments)
            #expect(dump.status == 0, "\(dump.stderr)")
            let expected = try JSONMirror.sections(fromDump: dump.stdout, sectionBy: c.sectionBy)
            #expect(mirror.sections.map(\.key) == expected.map { [FieldValue.string($0.key)] }, "seed \(c.seed)")
            if c.indexesOnly {
                #expect(mirror.sections.map(\.rows.count) == expected.map(\.rows.count), "seed \(c.seed)")
            } else {
                #expect(mirror.sections.map(\.rows) == expected.map { $0.rows.map(\.record) }, "seed \(c.seed)")
            }
        }
    }

    @Test func readableOutputStopsAndInterrupts() throws {
        try withDemoStore { path, _ in
            let once = try runTool(storectlURL, ["watch", path, "--entity", "Message", "--index", "byFolderDate", "--section-by", "1",
                                                 "--max-batches", "1"])
            #expect(once.status == 0, "\(once.stderr)")
            #expect(once.stdout.contains("(initial)") && once.stdout.contains("section 0 [0]:") && once.stdout.contains("1,500 rows"))
            // Counts only: the same summary whether the rows are read (objects) or not (the default).
            let objects = try runTool(storectlURL, ["watch", path, "--entity", "Message", "--index", "byFolderDate", "--section-by", "1",
                                                    "--max-batches", "1", "--mode", "objects"])
            #expect(objects.stdout == once.stdout)

            // A small window prints its rows: the query's rows at those positions.
            let window = try runTool(storectlURL, ["watch", path, "--entity", "Message", "--index", "byFolderDate", "--offset", "10",
                                                   "--limit", "3", "--max-batches", "1"])
            #expect(window.status == 0, "\(window.stderr)")
            let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(readOnly: true))
            let shown = try store.read { try $0.objects(in: Query(Message.self, index: "byFolderDate"), offset: 10, limit: 3) }
            store.close()
            let rowLines = window.stdout.split(separator: "\n").filter { $0.hasPrefix("  row ") }
            #expect(rowLines.count == 3, "\(window.stdout)")
            for (line, message) in zip(rowLines, shown) { #expect(line.contains("#\(message.id) ") && line.contains(message.title), "\(line)") }

            // Without a stop condition, Ctrl-C ends the watch cleanly.
            let live = try RunningTool(storectlURL, ["watch", path, "--entity", "Message", "--index", "unreadByDate"])
            #expect(live.waitForLines(1, timeout: 60))
            live.interrupt()
            let stopped = live.finish(timeout: 30)
            #expect(stopped.status == 0, "\(stopped.stderr)")
        }
    }

    /// Ctrl-C stops a watch every time, not most times: the interrupt once raced the start of
    /// the signal's delivery and was dropped about one time in four.
    @Test func ctrlCStopsAWatchEveryTime() throws {
        try withDemoStore { path, _ in
            for attempt in 1...12 {
                let live = try RunningTool(storectlURL, ["watch", path, "--entity", "Message", "--index", "byFolderDate"])
                #expect(live.waitForLines(1, timeout: 60))
                live.interrupt()
                let stopped = live.finish(timeout: 30)
                #expect(stopped.status == 0, "attempt \(attempt): \(stopped.stderr)")
            }
        }
    }

    @Test func badArgumentsAreClearErrors() throws {
        try withDemoStore { path, _ in
            let base = ["watch", path, "--entity", "Message", "--max-batches", "1"]
            let cases: [([String], String)] = [
                (["watch", path + "-missing", "--entity", "Message", "--index", "byFolderDate"], "does not exist"),
                (["watch", path, "--entity", "Nope", "--index", "byFolderDate"], "no entity named Nope"),
                (base + ["--index", "nope"], "no index named nope"),
                (base + ["--index", "byFolderDate", "--section-by", "3"], "more than index byFolderDate's 2 components"),
                (base + ["--index", "byFolderDate", "--prefix", "[1"], "JSON array"),
                (base + ["--index", "byFolderDate", "--prefix", "[\"one\"]"], "field folder, stored as int"),
                (base + ["--index", "byFolderDate", "--prefix", "[1]", "--from", "[\"2026-01-01\"]"],
                 #"field date, stored as date (ISO 8601 text with a time and a zone, such as "2026-01-01T09:30:00Z"); got "2026-01-01""#),
                (base + ["--index", "byFolderDate", "--offset", "3"], "--offset needs --limit"),
                (base + ["--index", "byFolderDate", "--from", "[3]", "--to", "[1]"], "invalid range"),
            ]
            for (arguments, message) in cases {
                let result = try runTool(storectlURL, arguments)
                #expect(result.status != 0 && result.stderr.contains(message), "\(arguments): \(result.stderr)")
            }
        }
    }
}

/// Reading `storectl`'s JSON lines: watch batches, for the library's mirror to apply, and the
/// sections a dump forms, to compare with it.
enum JSONMirror {
    struct Row: Equatable {
        var id: String
        var record: String?
    }

    struct Section {
        var key: String
        var rows: [Row]
    }

    struct InvalidBatch: Error, CustomStringConvertible {
        var description: String
    }

    static func object(_ line: String) throws -> [String: Any]? {
        try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    }

    /// A JSON value's text with sorted keys, to compare values parsed from different lines.
    static func text(_ value: Any?) -> String? {
        guard let value else { return nil }
        let data = try? JSONSerialization.data(withJSONObject: [value], options: [.sortedKeys, .fragmentsAllowed])
        return data.map { String(decoding: $0, as: UTF8.self) }
    }

    static func path(_ value: Any?) throws -> RowPath {
        guard let pair = value as? [Int], pair.count == 2 else { throw InvalidBatch(description: "bad path \(String(describing: value))") }
        return RowPath(section: pair[0], row: pair[1])
    }

    /// A batch as `storectl watch --jsonl` prints it, read back: rows are their records' JSON
    /// text, ids and section keys their JSON text as strings. Indexes-only ranges (`count`) are
    /// rows whose records are unknown (nil).
    struct PrintedBatch: RowChangeBatch {
        var header: BatchHeader
        var rowChanges: [RowChange<String?>] = []

        init(_ batch: [String: Any]) throws {
            func list(_ name: String) -> [[String: Any]] { batch[name] as? [[String: Any]] ?? [] }
            func id(_ entry: [String: Any]) -> FieldValue? { text(entry["id"]).map { .string($0) } }
            header = BatchHeader(
                fromSequence: UInt64(batch["fromSequence"] as? Int ?? 0), toSequence: UInt64(batch["toSequence"] as? Int ?? 0),
                isInitial: batch["initial"] as? Bool == true, isReset: batch["reset"] as? Bool == true,
                sectionDeletes: list("sectionDeletes").compactMap { $0["at"] as? Int },
                sectionInserts: list("sectionInserts").map { SectionInsert(index: $0["at"] as? Int ?? -1, key: [.string(text($0["key"]) ?? "")]) })
            for entry in list("deletes") {
                let start = try path(entry["at"])
                for i in 0..<(entry["count"] as? Int ?? 1) {
                    rowChanges.append(RowChange(.delete, from: RowPath(section: start.section, row: start.row + i), id: id(entry)))
                }
            }
            for entry in list("inserts") {
                let start = try path(entry["at"])
                for i in 0..<(entry["count"] as? Int ?? 1) {
                    rowChanges.append(RowChange(.insert, to: RowPath(section: start.section, row: start.row + i), id: id(entry),
                                                row: .some(text(entry["record"]))))
                }
            }
            for (kind, name) in [(RowChangeKind.move, "moves"), (.update, "updates")] {
                for entry in list(name) {
                    rowChanges.append(RowChange(kind, from: try path(entry["from"]), to: try path(entry["to"]), id: id(entry),
                                                row: .some(text(entry["record"]))))
                }
            }
        }
    }

    /// The sections `storectl dump --index … --jsonl` output forms, grouped by the first
    /// `sectionBy` key components (one section, even when empty, when 0).
    static func sections(fromDump output: String, sectionBy: Int) throws -> [Section] {
        var sections: [Section] = sectionBy == 0 ? [Section(key: text([Any]()) ?? "", rows: [])] : []
        for line in output.split(separator: "\n") {
            let entry = try #require(try object(String(line)))
            let key = try #require(entry["key"] as? [Any])
            let row = Row(id: text(entry["id"]) ?? "?", record: text(entry["record"]))
            let sectionKey = text(Array(key.prefix(sectionBy))) ?? ""
            if sections.last?.key != sectionKey { sections.append(Section(key: sectionKey, rows: [])) }
            sections[sections.count - 1].rows.append(row)
        }
        return sections
    }
}

extension WatchCommandTests {
    /// `--fields` names fields of the entity; a wrong one is an error listing them.
    @Test func storectlRefusesUnknownFieldNames() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            do {
                let store = try Store(path: path, entities: DemoFeed.entities)
                defer { store.close() }
                var feed = DemoFeed(seed: 4)
                try feed.populate(store, messages: 20, contacts: 3)
            }
            let result = try runTool(storectlURL, ["watch", path, "--entity", "Message", "--index", "byFolderDate",
                                                   "--fields", "isRead,nope", "--max-batches", "1"])
            #expect(result.status != 0)
            #expect(result.stderr.contains("\"nope\"") && result.stderr.contains("contactId, date, folder, id, isRead, title"))
            let fine = try runTool(storectlURL, ["watch", path, "--entity", "Message", "--index", "byFolderDate",
                                                 "--fields", "isRead", "--max-batches", "1"])
            #expect(fine.status == 0)
        }
    }
}
