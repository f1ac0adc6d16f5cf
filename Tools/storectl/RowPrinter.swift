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

    var plain: String {
        guard let value else { return text! }
        switch value {
        case let .string(s): return s
        case .null: return ""
        case .date, .uuid, .bytes:
            let json = value.jsonText
            return String(json.dropFirst().dropLast())
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
    private var sample: [[String]] = []
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
                return text.utf8.contains(0x0A) ? text.replacingOccurrences(of: "\n", with: " ") : text
            }
            if let widths {
                Output.line(Self.tableLine(plain, widths))
            } else {
                sample.append(plain)
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
            min(Self.widestColumn, ([columns[c]] + sample.map { $0[c] }).map(DisplayWidth.of).max() ?? 0)
        }
        self.widths = widths
        Output.line(Self.tableLine(columns, widths))
        Output.line(Self.tableLine(widths.map { String(repeating: "-", count: $0) }, widths))
        for row in sample { Output.line(Self.tableLine(row, widths)) }
        sample = []
    }

    /// A row's cells, each padded or cut to its column's display width; the last is not padded.
    private static func tableLine(_ cells: [String], _ widths: [Int]) -> String {
        var line = ""
        line.reserveCapacity(widths.reduce(0, +) + 2 * widths.count)
        for (i, (text, width)) in zip(cells, widths).enumerated() {
            if i > 0 { line += "  " }
            var shown = text, columns = DisplayWidth.of(text)
            if columns > width { (shown, columns) = DisplayWidth.truncated(text, to: width) }
            line += shown
            if i < widths.count - 1 && columns < width { line += String(repeating: " ", count: width - columns) }
        }
        return line.trimmingTrailingSpaces()
    }

    /// A CSV field, quoted when it holds a comma, a quote or a line break.
    static func csvField(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
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
