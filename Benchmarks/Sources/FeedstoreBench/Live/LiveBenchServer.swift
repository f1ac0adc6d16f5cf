import DemoFeed
import Feedstore
import FeedstoreHummingbird
import FeedstoreLive
import Foundation
import GRDB
import Hummingbird
import HummingbirdWebSocket
import Logging

/// `feedstore-bench live-server --kind K --store PATH --sqlite PATH`: one server of the live
/// benchmark, in a process of its own so that its memory and CPU are its own. It listens on a
/// free loopback port, prints `port N`, then takes commands on its standard input:
/// `write COMMITS RATE CONTACTS FIRSTID` makes one-row commits at RATE a second, each a new
/// message of a contact in 1...CONTACTS (one client watches each), and prints
/// `commit ID START END` (uptime nanoseconds around the write call) for each, then `written`.
///
/// Kinds: `feedstore` (the Hummingbird adapter over a `LiveService`), `grdb` (the same route as
/// a GRDB user builds it: a `ValueObservation` a connection, diffed and sent), `echo` (a bare
/// Hummingbird WebSocket echo, the cost of a connection alone).
enum LiveBenchServer {
    static func run(kind: String, store path: String, sqlite: String) async throws {
        let router = Router(context: BasicLiveRequestContext.self)
        var writer: (@Sendable (Message) throws -> Void)?
        var close: (@Sendable () async -> Void)?
        switch kind {
        case "feedstore":
            let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .none))
            let service = LiveService<Int>(store: store)
            router.addLiveQueries("/live", service: service) { _, _ in 0 }
            writer = { message in try store.write { try $0.insert(message) } }
            close = { await service.close(); store.close() }
        case "grdb":
            let pool = try GRDBPeer.open(sqlite, durable: false)
            GRDBLiveRoute.add(to: router, pool: pool)
            writer = { message in try pool.write { try message.insert($0) } }
        default:
            router.ws("/live") { _, _ in .upgrade() } onUpgrade: { inbound, outbound, _ in
                for try await message in inbound.messages(maxSize: 1 << 16) {
                    if case let .text(text) = message { try await outbound.writeTextMessage(text) }
                }
            }
        }
        var logger = Logger(label: "live-bench-server")
        logger.logLevel = .critical
        let (ports, announce) = AsyncStream<Int>.makeStream()
        let app = Application(router: Router(), server: .http1WebSocketUpgrade(webSocketRouter: router),
                              configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0), backlog: 4_096),
                              onServerRunning: { channel in
                                  announce.yield(channel.localAddress?.port ?? 0)
                                  announce.finish()
                              }, logger: logger)
        let serving = Task { try await app.run() }
        for await port in ports { say("port \(port)") }
        let commands = readCommands { [writer] line in
            let words = line.split(separator: " ")
            if words.first == "write", words.count == 5, let writer, let commits = Int(words[1]), let rate = Double(words[2]),
               let contacts = UInt64(words[3]), let firstID = UInt64(words[4])
            {
                do {
                    try write(commits: commits, rate: rate, contacts: contacts, firstID: firstID, writer)
                } catch {
                    say("failed: \(error)")
                }
            }
            return words.first != "quit"
        }
        _ = await commands.result
        await close?()
        serving.cancel()
        _ = await serving.result
    }

    /// One-row commits at `rate` a second, on this thread; each a message for a random
    /// contact, timed around the write call.
    static func write(commits: Int, rate: Double, contacts: UInt64, firstID: UInt64, _ writer: (Message) throws -> Void) throws {
        var feed = DemoFeed(seed: firstID)
        var lines: [String] = []
        let start = DispatchTime.now().uptimeNanoseconds
        for k in 0..<commits {
            let due = start + UInt64(Double(k) / rate * 1e9)
            let now = DispatchTime.now().uptimeNanoseconds
            if due > now { usleep(UInt32((due - now) / 1_000)) }
            var message = feed.message(id: firstID + UInt64(k), contacts: contacts)
            message.date = Date()
            let before = DispatchTime.now().uptimeNanoseconds
            try writer(message)
            let after = DispatchTime.now().uptimeNanoseconds
            lines.append("commit \(message.id) \(before) \(after)")
        }
        say(lines.joined(separator: "\n"))
        say("written")
    }
}
