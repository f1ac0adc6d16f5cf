import Feedstore
import Foundation

/// A client's copy of one subscription, built from the server's JSON frames by the contract's
/// rules alone (as a browser's or another language's client applies them): remove rows at
/// deletes and move sources (old paths, from the last), remove deleted sections, insert new
/// sections, insert rows at inserts and move destinations (new paths, from the first), replace
/// updated rows. In indexes mode rows are unknown (nil) until a `rows` frame fills them.
struct JSONMirror {
    struct Section: Equatable {
        var key: [FieldValue]
        var rows: [[String: FieldValue]?]
    }

    struct Violation: Error, CustomStringConvertible {
        var description: String
    }

    var sections: [Section] = []
    var toSequence: UInt64 = 0
    var batches = 0
    /// Batches that replaced the copy (`reset`).
    var resets = 0

    /// Every row, section after section.
    var rows: [[String: FieldValue]?] { sections.flatMap(\.rows) }

    /// A `rows` frame for the rows not known yet, from the first of them, at most 500 (the
    /// default limit of a request).
    func rowsRequest(id: String) -> String {
        let rows = rows
        let first = rows.firstIndex { $0 == nil } ?? 0
        return #"{"type":"rows","id":"\#(id)","offset":\#(first),"limit":\#(min(500, rows.count - first))}"#
    }

    mutating func apply(_ frame: [String: FieldValue]) throws {
        guard case .string("batch") = frame["type"] else { throw Violation(description: "not a batch: \(FieldValue.object(frame).jsonText)") }
        batches += 1
        if frame["reset"] == .bool(true) { resets += 1 }
        if frame["initial"] == .bool(true) || frame["reset"] == .bool(true) { sections = [] }
        func path(_ value: FieldValue?) throws -> (Int, Int) {
            guard case let .array(parts) = value, parts.count == 2, case let .int(s) = parts[0], case let .int(r) = parts[1] else {
                throw Violation(description: "bad path \(value?.jsonText ?? "nil")")
            }
            return (Int(s), Int(r))
        }
        func list(_ name: String) -> [[String: FieldValue]] {
            guard case let .array(items) = frame[name] else { return [] }
            return items.compactMap { if case let .object(o) = $0 { o } else { nil } }
        }
        // Removals at old paths: single rows (objects mode) or runs (indexes mode), and move sources.
        var removals: [(Int, Int)] = []
        for delete in list("deletes") {
            let (s, r) = try path(delete["at"])
            let count = delete["count"].flatMap { if case let .int(c) = $0 { Int(c) } else { nil } } ?? 1
            removals += (0..<count).map { (s, r + $0) }
        }
        let moves = list("moves")
        for move in moves { removals.append(try path(move["from"])) }
        var moved: [(to: (Int, Int), row: [String: FieldValue]?)] = []
        let removedRows = try removals.map { (s, r) -> ((Int, Int), [String: FieldValue]?) in
            guard sections.indices.contains(s), sections[s].rows.indices.contains(r) else { throw Violation(description: "no row at [\(s), \(r)]") }
            return ((s, r), sections[s].rows[r])
        }
        guard Set(removals.map { "\($0.0),\($0.1)" }).count == removals.count else { throw Violation(description: "a row removed twice") }
        for ((s, r), _) in removedRows.sorted(by: { $0.0 > $1.0 }) { sections[s].rows.remove(at: r) }
        for move in moves {
            // Objects mode carries the moved row's record; in indexes mode its content may have
            // changed too, so it is read again.
            let row: [String: FieldValue]? = if case let .object(record) = move["record"] { record } else { nil }
            moved.append((try path(move["to"]), row))
        }
        let sectionDeletes = list("sectionDeletes").compactMap { if case let .int(i) = $0["at"] { Int(i) } else { nil } }
        for s in sectionDeletes.sorted(by: >) {
            guard sections.indices.contains(s), sections[s].rows.isEmpty else { throw Violation(description: "section \(s) deleted while not empty") }
            sections.remove(at: s)
        }
        for insert in list("sectionInserts") {
            guard case let .int(at) = insert["at"], case let .array(key) = insert["key"], Int(at) <= sections.count else {
                throw Violation(description: "bad section insert")
            }
            sections.insert(Section(key: key, rows: []), at: Int(at))
        }
        var additions: [((Int, Int), [String: FieldValue]?)] = moved.map { ($0.to, $0.row) }
        for insert in list("inserts") {
            let (s, r) = try path(insert["at"])
            if let count = insert["count"], case let .int(c) = count {
                additions += (0..<Int(c)).map { ((s, r + $0), nil) }
            } else if case let .object(record) = insert["record"] {
                additions.append(((s, r), record))
            } else {
                additions.append(((s, r), nil))
            }
        }
        for ((s, r), row) in additions.sorted(by: { $0.0 < $1.0 }) {
            guard sections.indices.contains(s), r <= sections[s].rows.count else { throw Violation(description: "no place [\(s), \(r)]") }
            sections[s].rows.insert(row, at: r)
        }
        for update in list("updates") {
            let (s, r) = try path(update["to"])
            guard sections.indices.contains(s), sections[s].rows.indices.contains(r) else { throw Violation(description: "no row to update at [\(s), \(r)]") }
            sections[s].rows[r] = if case let .object(record) = update["record"] { record } else { nil }
        }
        if case let .uint(to) = frame["toSequence"] { toSequence = to } else if case let .int(to) = frame["toSequence"] { toSequence = UInt64(to) }
    }

    /// Fills rows from a `rows` frame.
    mutating func fill(_ frame: [String: FieldValue]) throws {
        guard case let .array(rows) = frame["rows"] else { throw Violation(description: "not a rows frame") }
        for case let .object(row) in rows {
            guard case let .array(at) = row["at"], at.count == 2, case let .int(s) = at[0], case let .int(r) = at[1],
                  sections.indices.contains(Int(s)), sections[Int(s)].rows.indices.contains(Int(r)), case let .object(record) = row["record"]
            else { throw Violation(description: "a row outside the mirror") }
            sections[Int(s)].rows[Int(r)] = record
        }
    }

    /// Where two copies differ, briefly: section keys and counts, then the first rows that differ.
    static func differences(_ got: [Section], _ want: [Section]) -> String {
        var lines: [String] = []
        if got.map(\.key) != want.map(\.key) || got.map(\.rows.count) != want.map(\.rows.count) {
            lines.append("sections \(got.map { "\($0.key)×\($0.rows.count)" }) ≠ \(want.map { "\($0.key)×\($0.rows.count)" })")
        }
        for (s, (a, b)) in zip(got, want).enumerated() {
            for (r, (x, y)) in zip(a.rows, b.rows).enumerated() where x != y {
                lines.append("[\(s), \(r)]: \(x.map { FieldValue.object($0).jsonText } ?? "nil") ≠ \(y.map { FieldValue.object($0).jsonText } ?? "nil")")
                if lines.count > 8 { return lines.joined(separator: "; ") }
            }
        }
        return lines.joined(separator: "; ")
    }
}
