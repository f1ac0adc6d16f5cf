import DemoFeed
import Feedstore
import FeedstoreLive
import Foundation

/// Where the time of a live list's update goes before the socket: the same subscriptions as
/// the WebSocket run, held in this process (no transport), and one-row commits made one at a
/// time. First by bare watchers (one `DynamicWatcher` a contact): the write call, the time until
/// the affected watcher gives its batch, and its JSON text; then by `LiveConnection`s: the time
/// until the affected connection gives its batch frame.
enum LiveLegs {
    struct Result {
        var writeCall: Timing
        var watcherBatch: Timing
        var json: Timing
        var frameReady: Timing
        var frameBytes: Int
    }

    static func run(store path: String, connections: Int, commits: Int, firstID: UInt64) async throws -> Result {
        let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .none))
        var feed = DemoFeed(seed: firstID)
        func nextMessage(_ k: Int) -> Message {
            var message = feed.message(id: firstID + UInt64(k), contacts: UInt64(connections))
            message.date = Date()
            return message
        }
        // Bare watchers.
        var watchers: [DynamicWatcher] = []
        for index in 0..<connections {
            let watcher = store.watch(entity: "Message", index: "byContact", range: IndexRange(prefix: [.uint(UInt64(index + 1))]), reverse: true,
                                      options: WatchOptions(window: WatchWindow(offset: 0, limit: 50)))
            _ = try watcher.poll()
            watchers.append(watcher)
        }
        var write: [Double] = [], batch: [Double] = [], json: [Double] = []
        for k in 0..<commits {
            let row = nextMessage(k)
            let start = DispatchTime.now().uptimeNanoseconds
            try await store.write { try $0.insert(row) }
            let written = DispatchTime.now().uptimeNanoseconds
            let watcher = watchers[Int(row.contactId) - 1]
            var taken = try watcher.poll()
            while taken == nil {
                await watcher.waitForChanges()
                taken = try watcher.poll()
            }
            let batched = DispatchTime.now().uptimeNanoseconds
            blackHole(FieldValue.object(taken!.jsonMembers).jsonText)
            let encoded = DispatchTime.now().uptimeNanoseconds
            write.append(Double(written - start) / 1_000)
            batch.append(Double(batched - start) / 1_000)
            json.append(Double(encoded - batched) / 1_000)
        }
        for watcher in watchers { watcher.cancel() }
        // Live connections.
        let service = LiveService<Int>(store: store)
        var clients: [LiveConnection] = []
        for index in 0..<connections {
            let connection = await service.connect(index)
            await connection.receive(#"{"type":"subscribe","id":"s","entity":"Message","index":"byContact","prefix":[\#(index + 1)],"reverse":true,"limit":50}"#)
            _ = await connection.nextFrame()  // welcome
            _ = await connection.nextFrame()  // the first batch
            clients.append(connection)
        }
        var ready: [Double] = [], bytes = 0
        for k in commits..<2 * commits {
            let row = nextMessage(k)
            let start = DispatchTime.now().uptimeNanoseconds
            try await store.write { try $0.insert(row) }
            guard let frame = await clients[Int(row.contactId) - 1].nextFrame() else { throw BenchError("no frame") }
            ready.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000)
            bytes += frame.utf8.count
        }
        for client in clients { await client.close() }
        await service.close()
        store.close()
        return Result(writeCall: Timing(samples: write), watcherBatch: Timing(samples: batch), json: Timing(samples: json),
                      frameReady: Timing(samples: ready), frameBytes: bytes / max(1, commits))
    }
}
