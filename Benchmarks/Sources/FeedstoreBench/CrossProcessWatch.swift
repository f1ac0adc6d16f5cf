@_spi(Benchmarking) import Feedstore
import DemoFeed
import Foundation

/// What waiting costs and how fast another process's commit arrives. First, 100 watchers wait
/// (each blocked in `next(timeout:)` on a thread of its own) on a quiet store for 10 seconds:
/// the context switches of the library's threads (named `fs …`) and of the whole process, from
/// `/proc/self/task/*/status`. Then one-row commits, in turns of 50, made by another process
/// (`feedstore-bench commit-child`) and by this one, each from the start of its writing
/// transaction to this process's watcher holding the batch (CLOCK_MONOTONIC, which both
/// processes share).
struct CrossProcessWatch {
    let size: Int
    let directory: String
    let commits: Int
    let executable: String
    static let idleWatchers = 100
    static let idleSeconds = 10.0
    static let round = 50

    struct Result {
        var libraryWakeUps: Int
        var processWakeUps: Int
        var seconds: Double
        var otherProcess: (p50: Double, p99: Double)
        var sameProcess: (p50: Double, p99: Double)
    }

    /// Context switches (voluntary and not) of this process's threads, those whose names start
    /// with `prefix` when given.
    static func contextSwitches(prefix: String?) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        var total = 0
        for task in tasks {
            guard let status = try? String(contentsOfFile: "/proc/self/task/\(task)/status", encoding: .utf8) else { continue }
            let lines = status.split(separator: "\n")
            let name = lines.first { $0.hasPrefix("Name:") }.map { $0.dropFirst(5).trimmingCharacters(in: .whitespaces) } ?? ""
            if let prefix, !name.hasPrefix(prefix) { continue }
            for line in lines where line.hasPrefix("voluntary_ctxt_switches:") || line.hasPrefix("nonvoluntary_ctxt_switches:") {
                total += Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
        return total
    }

    func run() throws -> Result {
        let path = directory + "/cross-\(size)"
        let store = try WatcherBench.populatedStore(at: path, size: size)
        defer {
            store.close()
            try? FileManager.default.removeItem(atPath: path)
        }
        let query = Query(Message.self, index: "byFolderDate")

        // Idle: watchers blocked on a store nobody writes.
        let idle = (0..<Self.idleWatchers).map { _ in store.watch(query) }
        let parked = DispatchGroup()
        for watcher in idle {
            _ = try watcher.poll()
            parked.enter()
            Thread {
                nameCurrentThread("bench idle")
                parked.leave()
                while !watcher.isCancelled { _ = try? watcher.next(timeout: 3_600) }
            }.start()
        }
        parked.wait()
        Thread.sleep(forTimeInterval: 1)  // every thread reaches its wait
        let library0 = Self.contextSwitches(prefix: "fs "), process0 = Self.contextSwitches(prefix: nil)
        let started = Timing.now
        Thread.sleep(forTimeInterval: Self.idleSeconds)
        let seconds = Double(Timing.now - started) / 1e9
        let library = Self.contextSwitches(prefix: "fs ") - library0
        // Less this thread's own sleep and the measurement's reads.
        let process = Self.contextSwitches(prefix: nil) - process0
        for watcher in idle { watcher.cancel() }

        // Latency: the other process commits when told, and prints when its commit started.
        let child = Process()
        child.executableURL = URL(fileURLWithPath: executable)
        child.arguments = ["commit-child", path]
        let toChild = Pipe(), fromChild = Pipe()
        child.standardInput = toChild
        child.standardOutput = fromChild
        try child.run()
        var lines = LineReader(fromChild.fileHandleForReading)
        guard lines.next() == "ready" else { fatalError("commit-child did not start") }

        let watcher = store.watch(query)
        let receiver = WatchShapes.Receiver.blocking(watcher)
        receiver.gate()
        _ = receiver.take()
        var rng = SplitMix(state: 41)
        var other: [Double] = [], same: [Double] = []
        for turn in 0..<(commits / Self.round) {
            let fromOther = turn % 2 == 0
            for _ in 0..<Self.round {
                receiver.gate()
                let start: UInt64
                if fromOther {
                    toChild.fileHandleForWriting.write(Data("commit\n".utf8))
                    guard let line = lines.next(), let at = UInt64(line) else { fatalError("commit-child stopped") }
                    start = at
                } else {
                    let position = Int.random(in: 0..<size, using: &rng)
                    guard let id = try store.read({ try $0.object(at: position, in: query) })?.id else { fatalError("no row") }
                    start = Timing.now
                    try WatcherBench.moveDate(of: id, in: store, using: &rng)
                }
                let end = receiver.take()
                (fromOther ? { other.append($0) } : { same.append($0) })(Double(end - start) / 1_000)
            }
        }
        toChild.fileHandleForWriting.closeFile()
        child.waitUntilExit()
        watcher.cancel()
        receiver.gate()
        return Result(libraryWakeUps: library, processWakeUps: process, seconds: seconds,
                      otherProcess: WatcherBench.percentiles(other), sameProcess: WatcherBench.percentiles(same))
    }

    /// The other process: opens the store at `path`, prints `ready`, then for each `commit` line
    /// moves one message's date in a commit of its own and prints when the commit started.
    static func child(path: String) throws {
        let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .none))
        let query = Query(Message.self, index: "byFolderDate")
        let size = try store.read { try $0.count(query) }
        var rng = SplitMix(state: 43)
        print("ready")
        fflush(nil)
        while let line = readLine() {
            guard line == "commit" else { continue }
            let position = Int.random(in: 0..<size, using: &rng)
            guard let id = try store.read({ try $0.object(at: position, in: query) })?.id else { fatalError("no row") }
            let start = Timing.now
            try WatcherBench.moveDate(of: id, in: store, using: &rng)
            print(start)
            fflush(nil)
        }
        store.close()
    }

    static func format(_ r: Result, size: Int) -> [String] {
        let us = { (x: Double) in String(format: "%.0f", x) }
        return [
            "Waiting: \(idleWatchers) watchers blocked in next(timeout:) on a quiet store of \(size.formatted()) messages, \(Int(r.seconds)) s",
            "",
            "| threads | context switches | per second |",
            "|---|---:|---:|",
            "| the library's (fs …) | \(r.libraryWakeUps) | " + String(format: "%.1f", Double(r.libraryWakeUps) / r.seconds) + " |",
            "| the whole process | \(r.processWakeUps) | " + String(format: "%.1f", Double(r.processWakeUps) / r.seconds) + " |",
            "",
            "One-row commits at \(size.formatted()) messages, start of the commit → the watcher's batch, in turns of \(round)",
            "",
            "| committed by | p50 µs | p99 µs | p50 ÷ same process |",
            "|---|---:|---:|---:|",
            "| this process | \(us(r.sameProcess.p50)) | \(us(r.sameProcess.p99)) | 1.00 |",
            "| another process | \(us(r.otherProcess.p50)) | \(us(r.otherProcess.p99)) | " + String(format: "%.2f", r.otherProcess.p50 / r.sameProcess.p50) + " |",
            "",
            "- No wake-up of the library's threads while watchers wait on a quiet store: " + (r.libraryWakeUps == 0 ? "met" : "not met")
                + " (\(r.libraryWakeUps) in \(Int(r.seconds)) s)",
            "- Another process's commit → batch p50 ≤ 0.3 ms, p99 ≤ 2 ms: "
                + (r.otherProcess.p50 <= 300 && r.otherProcess.p99 <= 2_000 ? "met" : "not met")
                + String(format: " (%.2f ms, %.2f ms)", r.otherProcess.p50 / 1_000, r.otherProcess.p99 / 1_000),
        ]
    }
}

/// Lines of a pipe, read as they come.
struct LineReader {
    let handle: FileHandle
    var pending = Data()

    init(_ handle: FileHandle) { self.handle = handle }

    mutating func next() -> String? {
        while true {
            if let newline = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending = Data(pending[pending.index(after: newline)...])
                return line
            }
            let more = handle.availableData
            if more.isEmpty { return nil }
            pending.append(more)
        }
    }
}
