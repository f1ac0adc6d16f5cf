import Foundation
import HummingbirdWSClient
import Logging

/// `feedstore-bench live-load --port P --connections N --kind K`: the clients of the live
/// benchmark, in a process of their own. Client `i` opens a WebSocket and subscribes to the
/// newest 50 messages of contact `i + 1` (`byContact`, prefix `[i + 1]`, reversed), or for the
/// echo server sends one message. It prints `ready SECONDS` once every client holds its first
/// batch (or its echo), then takes commands on its standard input: `await C` waits until the
/// clients have received C inserted rows and prints `got ID NANOSECONDS` for each (uptime when
/// the frame was read), then `received`; `quit` ends the process.
enum LiveLoad {
    static func run(port: Int, connections: Int, kind: String) async throws {
        let receipts = Receipts()
        let gate = Gate(permits: 200)
        let started = DispatchTime.now().uptimeNanoseconds
        let url = "ws://127.0.0.1:\(port)/live"
        var logger = Logger(label: "live-load")
        logger.logLevel = .critical
        for index in 0..<connections {
            Task {
                await gate.enter()
                do {
                    try await WebSocketClient.connect(url: url, configuration: WebSocketClientConfiguration(maxFrameSize: 1 << 20), logger: logger) {
                        inbound, outbound, _ in
                        let first = kind == "echo" ? "hello"
                            : #"{"type":"subscribe","id":"s","entity":"Message","index":"byContact","prefix":[\#(index + 1)],"reverse":true,"limit":50}"#
                        try await outbound.writeTextMessage(first)
                        var ready = false
                        for try await message in inbound.messages(maxSize: 1 << 24) {
                            guard case let .text(text) = message else { continue }
                            if kind == "echo" || text.contains(#""type":"batch""#) {
                                if ready { receipts.record(batch: text) } else {
                                    ready = true
                                    receipts.connected()
                                    await gate.leave()
                                }
                            }
                        }
                    }
                } catch {
                    receipts.failed("\(error)")
                }
            }
        }
        while receipts.ready + receipts.failures < connections { try await Task.sleep(for: .milliseconds(20)) }
        if let failure = receipts.firstFailure {
            say("failed \(receipts.failures) connections: \(failure)")
        }
        say("ready " + String(format: "%.2f", Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9))
        let commands = readCommands { line in
            let words = line.split(separator: " ")
            if words.first == "await", words.count == 2, let count = Int(words[1]) {
                let deadline = DispatchTime.now().uptimeNanoseconds + 600_000_000_000
                while receipts.count < count, DispatchTime.now().uptimeNanoseconds < deadline { usleep(5_000) }
                say(receipts.lines().joined(separator: "\n"))
                say("received")
            }
            return words.first != "quit"
        }
        _ = await commands.result
        exit(0)
    }
}

/// Admits a bounded number of connections in setup at once.
private actor Gate {
    private var permits: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(permits: Int) { self.permits = permits }

    func enter() async {
        if permits > 0 {
            permits -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func leave() {
        if waiting.isEmpty { permits += 1 } else { waiting.removeFirst().resume() }
    }
}

/// When each inserted row reached its client.
private final class Receipts: @unchecked Sendable {
    private let lock = NSLock()
    private var got: [(id: UInt64, at: UInt64)] = []
    private var connections = 0
    private var failed: [String] = []

    var count: Int { lock.withLock { got.count } }
    var ready: Int { lock.withLock { connections } }
    var failures: Int { lock.withLock { failed.count } }
    var firstFailure: String? { lock.withLock { failed.first } }

    func connected() { lock.withLock { connections += 1 } }

    func failed(_ description: String) { lock.withLock { failed.append(description) } }

    /// The ids of the rows a batch inserts, read when the frame was.
    func record(batch text: String) {
        let at = DispatchTime.now().uptimeNanoseconds
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
              let inserts = object["inserts"] as? [[String: Any]] else { return }
        let ids = inserts.compactMap { ($0["id"] as? NSNumber)?.uint64Value }
        lock.withLock { got.append(contentsOf: ids.map { ($0, at) }) }
    }

    func lines() -> [String] { lock.withLock { got.map { "got \($0.id) \($0.at)" } } }
}
