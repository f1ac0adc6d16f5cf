import Feedstore
import DemoFeed
import Foundation

/// The instructions of one one-row commit → batch, per watcher shape, for callgrind: a run
/// opens a copy of a demo store, opens one watcher, takes its first batch, then makes `commits`
/// one-row updates of a row the window shows (its date moves), polling the batch after each.
/// Two runs of different lengths, subtracted, leave out opening the store and the first batch.
struct BatchInstructions {
    enum Shape: String, CaseIterable {
        case plain, windowedSectioned = "windowed-sectioned", indexesWindowed = "indexes-windowed"
    }

    let path: String
    let size: Int

    func build() throws {
        try? FileManager.default.removeItem(atPath: path)
        try WatcherBench.populatedStore(at: path, size: size).close()
    }

    func run(_ shape: Shape, commits: Int) throws {
        let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .none))
        defer { store.close() }
        let query = Query(Message.self, index: "byFolderDate")
        let middle = size / 2
        let window = WatchWindow(offset: middle, limit: 100)
        let poll: () throws -> Bool
        switch shape {
        case .plain:
            let watcher = store.watch(query)
            poll = { try watcher.poll() != nil }
        case .windowedSectioned:
            let watcher = store.watch(query, options: WatchOptions(sectionBy: 1, window: window))
            poll = { try watcher.poll() != nil }
        case .indexesWindowed:
            let watcher = store.watchIndexes(query, options: WatchOptions(window: window))
            poll = { try watcher.poll() != nil }
        }
        guard try poll() else { fatalError("no first batch") }
        var rng = SplitMix(state: 11)
        for _ in 0..<commits {
            // A row the window shows, so that every shape has a batch to make.
            let position = middle + Int.random(in: 0..<100, using: &rng)
            guard let id = try store.read({ try $0.object(at: position, in: query) })?.id else { fatalError("no row at \(position)") }
            try WatcherBench.moveDate(of: id, in: store, using: &rng)
            guard try poll() else { fatalError("\(shape.rawValue): no batch") }
        }
        print("\(shape.rawValue): \(commits) commits and batches")
    }
}
