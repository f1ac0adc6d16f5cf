@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import Foundation
import Testing

/// `storectl watch` end to end: the watching process prints JSONL batches while another process
/// writes; the batches, applied to a mirror by the contract's rules, must give what `dump`
/// prints at the end.
@Suite struct WatchCommandTests {
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
    ]

    func withDemoStore(_ body: (String, UInt64) throws -> Void) throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            let head: UInt64
            do {
                let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .none))
                defer { store.close() }
                var feed = DemoFeed(seed: 5)
                try feed.populate(store, messages: 1_500, contacts: 30)
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

            var mirror = JSONMirror()
            let batches = try result.stdout.split(separator: "\n").map { line in try #require(try JSONMirror.object(String(line))) }
            for batch in batches { try mirror.apply(batch, seed: c.seed) }
            #expect(batches.first?["initial"] as? Bool == true)
            if c.sectionBy == 1 { #expect(batches.count > 2, "the writer's commits produced no batches") }
            #expect((batches.last?["toSequence"] as? Int).map { $0 <= Int(last) } == true)

            let dump = try runTool(storectlURL, ["dump", path, "--entity", "Message", "--index", c.index, "--jsonl"] + c.dumpArguments)
            #expect(dump.status == 0, "\(dump.stderr)")
            let expected = try JSONMirror.sections(fromDump: dump.stdout, sectionBy: c.sectionBy)
            #expect(mirror.sections.map(\.key) == expected.map(\.key), "seed \(c.seed)")
            if c.indexesOnly {
                #expect(mirror.sections.map(\.rows.count) == expected.map(\.rows.count), "seed \(c.seed)")
            } else {
                #expect(mirror.sections.map { $0.rows.map(\.id) } == expected.map { $0.rows.map(\.id) }, "seed \(c.seed)")
                #expect(mirror.sections.map { $0.rows.map(\.record) } == expected.map { $0.rows.map(\.record) }, "seed \(c.seed)")
            }
        }
    }

    @Test func readableOutputStopsAndInterrupts() throws {
        try withDemoStore { path, _ in
            let once = try runTool(storectlURL, ["watch", path, "--entity", "Message", "--index", "byFolderDate", "--section-by", "1",
                                                 "--max-batches", "1"])
            #expect(once.status == 0, "\(once.stderr)")
            #expect(once.stdout.contains("(initial)") && once.stdout.contains("section 0 [0]:") && once.stdout.contains("1,500 rows"))

            // Without a stop condition, Ctrl-C ends the watch cleanly.
            let live = try RunningTool(storectlURL, ["watch", path, "--entity", "Message", "--index", "unreadByDate"])
            #expect(live.waitForLines(1, timeout: 60))
            live.interrupt()
            let stopped = live.finish(timeout: 30)
            #expect(stopped.status == 0, "\(stopped.stderr)")
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

/// Sections of rows rebuilt from `storectl watch --jsonl` batches by the contract's rules
/// (rows without ids in indexes-only mode), failing on any batch that breaks them.
struct JSONMirror {
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

    var sections: [Section] = []

    static func object(_ line: String) throws -> [String: Any]? {
        try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    }

    /// A JSON value's text with sorted keys, to compare values parsed from different lines.
    static func text(_ value: Any?) -> String? {
        guard let value else { return nil }
        let data = try? JSONSerialization.data(withJSONObject: [value], options: [.sortedKeys, .fragmentsAllowed])
        return data.map { String(decoding: $0, as: UTF8.self) }
    }

    static func path(_ value: Any?) throws -> (section: Int, row: Int) {
        guard let pair = value as? [Int], pair.count == 2 else { throw InvalidBatch(description: "bad path \(String(describing: value))") }
        return (pair[0], pair[1])
    }

    /// Rows an entry covers: one, or `count` consecutive ones in indexes-only mode.
    static func paths(_ entry: [String: Any], key: String) throws -> [(section: Int, row: Int)] {
        let start = try path(entry[key])
        let count = entry["count"] as? Int ?? 1
        return (0..<count).map { (start.section, start.row + $0) }
    }

    mutating func apply(_ batch: [String: Any], seed: UInt64) throws {
        func fail(_ reason: String) -> InvalidBatch { InvalidBatch(description: "seed \(seed), batch \(batch["toSequence"] ?? "?"): \(reason)") }
        func list(_ name: String) -> [[String: Any]] { batch[name] as? [[String: Any]] ?? [] }
        if batch["initial"] as? Bool == true || batch["reset"] as? Bool == true { sections = [] }
        // Old paths: deletes and move sources, removed from the end backwards.
        var removals = try list("deletes").flatMap { try Self.paths($0, key: "at") } + list("moves").map { try Self.path($0["from"]) }
        removals.sort { ($0.section, $0.row) > ($1.section, $1.row) }
        if Set(removals.map { "\($0)" }).count != removals.count { throw fail("a row is removed twice") }
        for p in removals {
            guard sections.indices.contains(p.section), sections[p.section].rows.indices.contains(p.row) else { throw fail("no row at \(p)") }
            sections[p.section].rows.remove(at: p.row)
        }
        for at in list("sectionDeletes").compactMap({ $0["at"] as? Int }).sorted(by: >) {
            guard sections.indices.contains(at), sections[at].rows.isEmpty else { throw fail("section \(at) is missing or not empty") }
            sections.remove(at: at)
        }
        for section in list("sectionInserts").sorted(by: { ($0["at"] as? Int ?? 0) < ($1["at"] as? Int ?? 0) }) {
            let at = section["at"] as? Int ?? -1
            guard at >= 0, at <= sections.count else { throw fail("section insert at \(at)") }
            sections.insert(Section(key: Self.text(section["key"]) ?? "", rows: []), at: at)
        }
        // New paths: inserts and move destinations, ascending.
        var additions: [(section: Int, row: Int, value: Row)] = []
        for entry in list("inserts") {
            let row = Row(id: Self.text(entry["id"]) ?? "?", record: Self.text(entry["record"]))
            additions += try Self.paths(entry, key: "at").map { ($0.section, $0.row, row) }
        }
        for entry in list("moves") {
            let to = try Self.path(entry["to"])
            additions.append((to.section, to.row, Row(id: Self.text(entry["id"]) ?? "?", record: Self.text(entry["record"]))))
        }
        additions.sort { ($0.section, $0.row) < ($1.section, $1.row) }
        for a in additions {
            guard sections.indices.contains(a.section), a.row <= sections[a.section].rows.count else { throw fail("no place for a row at \(a)") }
            sections[a.section].rows.insert(a.value, at: a.row)
        }
        for update in list("updates") {
            let to = try Self.path(update["to"])
            guard sections.indices.contains(to.section), sections[to.section].rows.indices.contains(to.row) else { throw fail("update at \(to)") }
            if let id = Self.text(update["id"]) {
                guard sections[to.section].rows[to.row].id == id else { throw fail("update \(id) does not point at its row") }
                sections[to.section].rows[to.row].record = Self.text(update["record"])
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
