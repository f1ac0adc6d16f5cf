import Foundation

/// A process of the live benchmark (this binary, another command), driven line by line through
/// its standard input and output; its memory and CPU read from `/proc`.
final class ChildProcess {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffer = Data()

    init(_ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }

    func send(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// The next line it prints; nil once it ended.
    func line() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                buffer = Data(buffer[buffer.index(after: newline)...])
                return line
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { return nil }
            buffer.append(chunk)
        }
    }

    /// Lines up to the one that starts with `marker` (which is returned last); fails if the
    /// process ends first, or prints a line that starts with `failed`.
    func lines(until marker: String) throws -> [String] {
        var lines: [String] = []
        while let line = line() {
            lines.append(line)
            if line.hasPrefix(marker) { return lines }
            if line.hasPrefix("failed") { throw BenchError("process \(pid): \(line)") }
        }
        throw BenchError("process \(pid) ended before printing \(marker): \(lines.suffix(3))")
    }

    /// Anonymous resident memory (heap, stacks) and resident memory in all, in bytes.
    var memory: (anonymous: Int, resident: Int) {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        func field(_ name: String) -> Int {
            let line = status.split(separator: "\n").first { $0.hasPrefix(name) } ?? ""
            return (Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "0") ?? 0) * 1024
        }
        return (field("RssAnon:"), field("VmRSS:"))
    }

    /// CPU seconds its threads have run, to the nanosecond (`/proc/PID/task/*/schedstat`).
    var cpuSeconds: Double {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.reduce(0) { sum, task in
            let text = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8)) ?? "0"
            return sum + (Double(text.split(separator: " ").first ?? "0") ?? 0) / 1e9
        }
    }

    func stop() {
        send("quit")
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        if process.isRunning { kill(pid, SIGKILL) }
        process.waitUntilExit()
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
