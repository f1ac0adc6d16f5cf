import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// `--format table` lines up columns by display width: wide characters take two columns,
/// combining marks none; text longer than its column is cut, numbers and dates never are.
@Suite(.blocking) struct TableFormatTests {
    /// Columns a terminal gives `text` (the test's own count: CJK wide, combining marks zero).
    static func columns(_ text: Substring) -> Int {
        text.unicodeScalars.reduce(0) { width, scalar in
            switch scalar.value {
            case 0x0300...0x036F: width
            case 0x1100...0x115F, 0x2E80...0xA4CF, 0xAC00...0xD7A3, 0xFF00...0xFF60: width + 2
            default: width + 1
            }
        }
    }

    @Test func columnsLineUpByDisplayWidth() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            let store = try Store(path: path, entities: [Note.self], options: StoreOptions(durability: .none))
            let bodies = ["日本語のテキスト", "cafe\u{301} au lait", "plain", String(repeating: "長", count: 40)]
            try store.write { tx in
                for (i, body) in bodies.enumerated() {
                    try tx.put(Note(id: "n\(i)", body: body, priority: Int8(i), when: Date(timeIntervalSince1970: 0), labels: []))
                }
            }
            try store.sync()
            store.close()
            let table = try runTool(storectlURL, ["dump", path, "--entity", "Note", "--format", "table"])
            #expect(table.status == 0, "\(table.stderr)")
            let lines = table.stdout.split(separator: "\n")
            #expect(lines.count == bodies.count + 2)
            // Every row's cells start at the columns of the header's.
            let header = lines[0]
            func starts(_ line: Substring, names: Int) -> [Int] {
                var found: [Int] = [], column = 0, spaces = 0
                for character in line {
                    if character != " " && (found.isEmpty ? column == 0 : spaces >= 2) { found.append(column) }
                    spaces = character == " " ? spaces + 1 : 0
                    column += Self.columns(Substring(String(character)))
                }
                return Array(found.prefix(names))
            }
            let wanted = starts(header, names: 5)
            #expect(wanted.count == 5, "\(header)")
            for line in lines.dropFirst(2) {
                #expect(starts(line, names: 5) == wanted, "\(line) against \(header)")
            }
            // The 40-character body is cut to the widest column with "…".
            #expect(lines.last?.contains("…") == true)
        }
    }
}
