import Benchmark
import Feedstore
import DemoFeed
import Foundation

/// Micro-benchmarks of the operations the complexity budget names, on a demo feed of 100,000
/// messages built once per process. Thresholds (Benchmarks/Thresholds) are checked with
/// `swift package --package-path Benchmarks benchmark thresholds check`.
let benchmarks: @Sendable () -> Void = {
    let messages = 100_000
    let directory = NSTemporaryDirectory() + "feedstore-micro-\(getpid())"
    let store: Store = {
        try? FileManager.default.removeItem(atPath: directory)
        let store = try! Store(path: directory, entities: DemoFeed.entities, options: StoreOptions(durability: .none))
        var feed = DemoFeed(seed: 1)
        try! feed.populate(store, messages: messages, contacts: 1_000, batch: 5_000)
        return store
    }()
    let everything = Query(Message.self, index: "byFolderDate")
    // A run fails when it passes either bound of a threshold. Wall clock: relative bounds only,
    // wide for a shared, noisy 2-core machine. Allocations move with the random rows read (a
    // 100-row window varies by about 30), so they may drift by 15% or 64, whichever is smaller.
    let tolerance = BenchmarkThresholds(relative: [.p50: 50, .p90: 75])
    let allocations = BenchmarkThresholds(relative: [.p50: 15, .p90: 15], absolute: [.p50: 64, .p90: 64])
    let configuration = Benchmark.Configuration(metrics: [.wallClock, .mallocCountTotal], timeUnits: .microseconds,
                                                maxDuration: .seconds(2), maxIterations: 20_000,
                                                thresholds: [.wallClock: tolerance, .mallocCountTotal: allocations])

    Benchmark("objectAtRandomPosition", configuration: configuration) { benchmark in
        var rng = SystemRandomNumberGenerator()
        for _ in benchmark.scaledIterations {
            let m = try store.read { try $0.object(at: Int.random(in: 0..<messages, using: &rng), in: everything) }
            blackHole(m)
        }
    }

    Benchmark("countOfAFolder", configuration: configuration) { benchmark in
        for i in benchmark.scaledIterations {
            blackHole(try store.read { try $0.count(everything.narrowed(to: [.int(Int64(i % 8))])) })
        }
    }

    Benchmark("positionOfRandomRecord", configuration: configuration) { benchmark in
        var rng = SystemRandomNumberGenerator()
        for _ in benchmark.scaledIterations {
            blackHole(try store.read { try $0.position(of: UInt64.random(in: 1...UInt64(messages), using: &rng), in: everything) })
        }
    }

    Benchmark("windowOf100Rows", configuration: configuration) { benchmark in
        var rng = SystemRandomNumberGenerator()
        for _ in benchmark.scaledIterations {
            blackHole(try store.read { try $0.objects(in: everything, offset: Int.random(in: 0..<(messages - 100), using: &rng), limit: 100) })
        }
    }

    // Opened once: its initial batch (every row) is not what is measured.
    let watcher = store.watch(everything, options: WatchOptions(sectionBy: 1))
    _ = try! watcher.poll()
    Benchmark("oneRowCommitToBatch", configuration: configuration) { benchmark in
        var rng = SystemRandomNumberGenerator()
        for _ in benchmark.scaledIterations {
            let id = UInt64.random(in: 1...UInt64(messages), using: &rng)
            try store.write { tx in
                guard var m = try tx.get(Message.self, id: id) else { return }
                m.date = m.date.addingTimeInterval(Double(Int.random(in: -3_600...3_600, using: &rng)))
                try tx.put(m)
            }
            blackHole(try watcher.poll())
        }
    }
}
