import Foundation

/// What a process wrote to the data files of stores, when it synced them, and what it printed, in
/// order, as the write recorder (`Tools/write-recorder/recorder.c`) logged it.
public struct WriteLog {
    public enum Operation: Equatable {
        /// Bytes written at an offset (not durable until a sync follows).
        case write(offset: Int, bytes: [UInt8])
        /// A completed fsync or fdatasync, or a write through a synchronous descriptor: every
        /// write before it is durable.
        case sync
        /// The file cut or extended to a size.
        case truncate(size: Int)
        /// Bytes the process wrote to its standard output.
        case output([UInt8])
        /// A data file renamed (a copy moved into place).
        case rename(from: String, to: String)
        /// A completed fsync of a directory: its entries (renames in it) are durable.
        case directorySync(String)
        /// The data file (by the path it was opened with) that the writes, syncs and truncates
        /// after it are on, until the next.
        case file(String)
        /// A call the crash states do not model (fallocate, msync), by name.
        case unmodelled(String)
        /// A directory made: its entry in its parent is durable once the parent is synced.
        case directoryMade(String)
        /// A data file made: its entry in its directory is durable once the directory is synced.
        case fileMade(String)
    }

    public var operations: [Operation]

    /// Reads the log at `path`.
    public init(contentsOf path: String) throws {
        let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        var operations: [Operation] = []
        var at = 0
        func word(_ from: Int) -> Int { (0..<8).reduce(0) { $0 | Int(data[from + $1]) << (8 * $1) } }
        while at + 17 <= data.count {
            let kind = data[at], offset = word(at + 1), length = word(at + 9)
            at += 17
            let carriesBytes = kind == 1 || kind >= 4
            guard !carriesBytes || at + length <= data.count else { break }  // a record cut short by a kill
            switch kind {
            case 1: operations.append(.write(offset: offset, bytes: Array(data[at..<at + length])))
            case 2: operations.append(.sync)
            case 3: operations.append(.truncate(size: offset))
            case 4: operations.append(.output(Array(data[at..<at + length])))
            case 5:
                let paths = data[at..<at + length].split(separator: 0, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
                operations.append(.rename(from: paths[0], to: paths.count > 1 ? paths[1] : ""))
            case 6: operations.append(.directorySync(String(decoding: data[at..<at + length], as: UTF8.self)))
            case 7: operations.append(.file(String(decoding: data[at..<at + length], as: UTF8.self)))
            case 8: operations.append(.unmodelled(String(decoding: data[at..<at + length], as: UTF8.self)))
            case 9: operations.append(.directoryMade(String(decoding: data[at..<at + length], as: UTF8.self)))
            case 10: operations.append(.fileMade(String(decoding: data[at..<at + length], as: UTF8.self)))
            default: throw PowerLoss.Failure(description: "write log \(path): unknown record kind \(kind) at byte \(at - 17)")
            }
            if carriesBytes { at += length }
        }
        self.operations = operations
    }

    /// The operation index of each `committed <sequence>` line printed, with its sequence: the
    /// commits the process acknowledged, and when.
    public var acknowledgments: [(operation: Int, sequence: UInt64)] { printed("committed ") }

    /// The same for `cursor <sequence>` lines: a durable cursor moved past a commit.
    public var cursorAcknowledgments: [(operation: Int, sequence: UInt64)] { printed("cursor ") }

    /// The operation index and number of each printed line made of `prefix` and a number.
    func printed(_ prefix: String) -> [(operation: Int, sequence: UInt64)] {
        lines.compactMap { line in
            guard line.text.hasPrefix(prefix), let sequence = UInt64(line.text.dropFirst(prefix.count)) else { return nil }
            return (line.operation, sequence)
        }
    }

    /// The operation index of the first printed line that starts with `prefix`.
    public func firstLine(startingWith prefix: String) -> Int? {
        lines.first { $0.text.hasPrefix(prefix) }?.operation
    }

    /// The lines the process printed, each with the index of the output operation that ended it.
    var lines: [(operation: Int, text: String)] {
        var found: [(Int, String)] = []
        var line: [UInt8] = []
        for (index, operation) in operations.enumerated() {
            guard case let .output(bytes) = operation else { continue }
            for byte in bytes {
                if byte == UInt8(ascii: "\n") {
                    found.append((index, String(decoding: line, as: UTF8.self)))
                    line = []
                } else {
                    line.append(byte)
                }
            }
        }
        return found
    }
}
