import ArgumentParser
import Feedstore
import Foundation

/// How commands that print records or journal entries write them.
enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    /// The command's readable lines (the default).
    case text
    /// Aligned columns, sized from the first rows.
    case table
    /// RFC 4180 comma-separated values with a header row.
    case csv
    /// One JSON object per line.
    case jsonl
    /// One JSON array of objects.
    case json
}

/// One cell: its JSON text, and the plain text that tables and CSV show (strings and dates
/// without quotes, null as nothing), each made only when asked for.
struct Cell {
    private let value: FieldValue?
    /// JSON text written elsewhere (a record read straight from its bytes).
    private let text: String?

    init(_ value: FieldValue) {
        self.value = value
        text = nil
    }

    init(json: String) {
        value = nil
        text = json
    }

    var json: String { text ?? value!.jsonText }

    /// Whether a table may cut the cell to its column: text may, while a cut number, date or
    /// id would show something else, so those overflow their column instead.
    var mayBeCut: Bool {
        switch value {
        case .string?, .array?, .object?, .bytes?: true
        case nil: true
        default: false
        }
    }

    var plain: String {
        guard let value else { return text! }
        switch value {
        case let .string(s): return s
        case .null: return ""
        case .date, .uuid, .bytes:
            // The JSON string without its quotes (these never need escapes).
            let json = value.jsonText.utf8
            return String(decoding: json.dropFirst().dropLast(), as: UTF8.self)
        default: return value.jsonText
        }
    }
}

/// Streams rows of named cells in one of the structured ``OutputFormat``s, holding at most
/// ``tableSample`` rows (a table's column widths come from its first rows).
final class RowPrinter {
    let format: OutputFormat
    let columns: [String]
    /// Each column's name as a JSON object key with its colon.
    private let keys: [String]
    private var rows = 0
    private var sample: [(cells: [String], cuttable: [Bool])] = []
    private var widths: [Int]?

    /// Rows a table sizes its columns from; later cells longer than their column are cut.
    static let tableSample = 200
    /// The widest a table column grows.
    static let widestColumn = 48

    init(format: OutputFormat, columns: [String]) {
        precondition(format != .text, "text output is each command's own")
        self.format = format
        self.columns = columns
        keys = columns.map { FieldValue.string($0).jsonText + ":" }
        if format == .csv { Output.line(columns.map(Self.csvField).joined(separator: ",")) }
    }

    func row(_ cells: [Cell]) {
        switch format {
        case .text: break
        case .jsonl: Output.line(object(cells))
        case .json: Output.text((rows == 0 ? "[\n" : ",\n") + object(cells))
        case .csv: Output.line(cells.map { Self.csvField($0.plain) }.joined(separator: ","))
        case .table:
            let plain = cells.map { cell in
                let text = cell.plain
                // A line break would break the row; ASCII-only text is checked byte-wise.
                let breaks = text.utf8.withContiguousStorageIfAvailable { $0.contains(0x0A) } ?? text.utf8.contains(0x0A)
                return breaks ? text.replacingOccurrences(of: "\n", with: " ") : text
            }
            let cuttable = cells.map(\.mayBeCut)
            if let widths {
                Output.line(Self.tableLine(plain, widths, cuttable: cuttable))
            } else {
                sample.append((plain, cuttable))
                if sample.count == Self.tableSample { printSample() }
            }
        }
        rows += 1
    }

    /// Ends the output: closes a JSON array, prints a table shorter than its sample.
    func finish() {
        switch format {
        case .json: Output.line(rows == 0 ? "[]" : "\n]")
        case .table: if widths == nil { printSample() }
        default: break
        }
    }

    private func object(_ cells: [Cell]) -> String {
        var out = "{"
        for (i, cell) in cells.enumerated() {
            if i > 0 { out += "," }
            out += keys[i]
            out += cell.json
        }
        return out + "}"
    }

    private func printSample() {
        let widths = columns.indices.map { c in
            min(Self.widestColumn, ([columns[c]] + sample.map { $0.cells[c] }).map(DisplayWidth.of).max() ?? 0)
        }
        self.widths = widths
        let cutNothing = [Bool](repeating: false, count: widths.count)
        Output.line(Self.tableLine(columns, widths, cuttable: cutNothing))
        Output.line(Self.tableLine(widths.map { String(repeating: "-", count: $0) }, widths, cuttable: cutNothing))
        for row in sample { Output.line(Self.tableLine(row.cells, widths, cuttable: row.cuttable)) }
        sample = []
    }

    /// A row's cells, each padded to its column's display width, or cut to it where
    /// `cuttable` allows (else it overflows); the last is not padded.
    private static func tableLine(_ cells: [String], _ widths: [Int], cuttable: [Bool]) -> String {
        var line = ""
        line.reserveCapacity(widths.reduce(0, +) + 2 * widths.count)
        for (i, (text, width)) in zip(cells, widths).enumerated() {
            if i > 0 { appendSpaces(2, to: &line) }
            let columns = DisplayWidth.of(text)
            if columns > width && cuttable[i] {
                let cut = DisplayWidth.truncated(text, to: width)
                line += cut.text
                if i < widths.count - 1 { appendSpaces(width - cut.columns, to: &line) }
            } else {
                line += text
                if i < widths.count - 1 { appendSpaces(width - columns, to: &line) }
            }
        }
        return line.utf8.last == UInt8(ascii: " ") ? line.trimmingTrailingSpaces() : line
    }

    private static let spaces = String(repeating: " ", count: widestColumn + 2)

    private static func appendSpaces(_ count: Int, to line: inout String) {
        if count > 0 { line += spaces.prefix(count) }
    }

    /// A CSV field, quoted when it holds a comma, a quote or a line break.
    static func csvField(_ text: String) -> String {
        func special(_ byte: UInt8) -> Bool { byte == 0x2C || byte == 0x22 || byte == 0x0A || byte == 0x0D }
        let quoted = text.utf8.withContiguousStorageIfAvailable { $0.contains(where: special) } ?? text.utf8.contains(where: special)
        guard quoted else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

private extension String {
    func trimmingTrailingSpaces() -> String {
        var end = endIndex
        while end > startIndex, self[index(before: end)] == " " { end = index(before: end) }
        return String(self[..<end])
    }
}

/// `--format`, with `--jsonl` kept as its shorthand.
struct FormatOption: ParsableArguments {
    @Option(help: "Output format: text (readable lines), table, csv, jsonl or json.")
    var format: OutputFormat = .text

    @Flag(help: "The same as --format json.")
    var json = false

    @Flag(help: "The same as --format jsonl.")
    var jsonl = false

    /// The format asked for.
    var chosen: OutputFormat { json ? .json : jsonl ? .jsonl : format }

    func validate() throws {
        if json && jsonl { throw ValidationError("--json and --jsonl each choose a format; give one") }
    }

    /// Refuses a format the command cannot print, saying which it can and why.
    func require(_ allowed: [OutputFormat], because reason: String) throws {
        guard allowed.contains(chosen) else {
            throw ValidationError("--format \(chosen.rawValue): \(reason); use \(allowed.map(\.rawValue).joined(separator: ", "))")
        }
    }
}
