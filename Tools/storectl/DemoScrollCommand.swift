import ArgumentParser
import DemoConsole
import Feedstore
import FeedstoreDemo
import Foundation

struct DemoScroll: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scroll",
        abstract: "Scroll a lazy list of every message like a user flinging through it, while a writer commits.",
        discussion: """
        A LazyLiveList follows byFolderDate, a section per folder. Each screen is what a frame does: \
        take the batches committed since the last screen, then read the rows on screen. The scroll \
        speeds up from a crawl to thousands of rows a frame, slows down, and jumps to the start of \
        every section, while another thread commits random changes. Prints the time of each screen, \
        the rows decoded and the memory the process holds besides the mapped store.

        Example: storectl demo scroll ./demo-store --screens 100
        """
    )

    @Argument(help: "The store directory (created when missing).")
    var path: String = "demo-store"

    @OptionGroup(title: "Demo feed (written when the store holds fewer messages)")
    var feed: DemoFeedOptions

    @Option(help: "Screens to scroll through.")
    var screens: Int = 600

    @Option(name: .customLong("rows-per-screen"), help: "Rows on one screen.")
    var rowsPerScreen: Int = 20

    @Option(name: .customLong("commit-every"), help: "Milliseconds between the writer's commits.")
    var commitEvery: Int = 5

    func validate() throws {
        guard screens >= 1, rowsPerScreen >= 1, commitEvery >= 1 else {
            throw ValidationError("--screens, --rows-per-screen and --commit-every must be 1 or more")
        }
    }

    func run() throws {
        let stored = try DemoRunOptions.messageCount(path)
        if stored == 0 || stored < feed.messages ?? 0 {
            print("Populating \(path) with \(feed.count.formatted()) messages and \(feed.contacts.formatted()) contacts…")
            try feed.populate(path)
        }
        let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .relaxed))
        defer { store.close() }
        try MainActor.assumeIsolated { try scroll(store) }
    }

    /// Where each screen starts: a fling that speeds up and slows down, then the start of every
    /// section (a tap on a section index), then a fling back up.
    static func starts(count: Int, sections: [LazyLiveList<Message>.Section], screens: Int, rows: Int) -> [Int] {
        guard count > rows else { return Array(repeating: 0, count: screens) }
        var starts: [Int] = []
        var position = 0
        let fling = screens * 2 / 3
        for screen in 0..<fling {
            // Speed rises to its peak halfway through the fling, then falls: rows per frame.
            let phase = Double(screen) / Double(max(1, fling - 1))
            let speed = Double(rows) * (1 + 200 * sin(phase * .pi))
            position = min(count - rows, position + Int(speed))
            starts.append(position)
        }
        for section in sections where starts.count < screens { starts.append(min(count - rows, section.start)) }
        while starts.count < screens {
            position = max(0, position - rows * 50)
            starts.append(position)
        }
        return starts
    }

    @MainActor
    func scroll(_ store: Store) throws {
        let anonymousBefore = ProcessHeap.anonymousBytes
        let opened = DispatchTime.now().uptimeNanoseconds
        let list = LazyLiveList(store: store, query: Query(Message.byFolderDate), options: WatchOptions(sectionBy: \Message.folder))
        defer { list.stop() }
        let openMicros = Double(DispatchTime.now().uptimeNanoseconds - opened) / 1_000
        print(String(format: "Opened a lazy list of %@ messages in %@ sections (%.0f µs)", list.count.formatted(),
                     list.sections.count.formatted(), openMicros))
        guard list.count > 0 else { return }

        let writer = DemoWriter(store: store, seed: feed.seed, contacts: UInt64(feed.contacts), every: commitEvery)
        defer { writer.stop() }
        var times: [Double] = []
        var batches = 0
        let starts = Self.starts(count: list.count, sections: list.sections, screens: screens, rows: rowsPerScreen)
        for (screen, wanted) in starts.enumerated() {
            let begin = DispatchTime.now().uptimeNanoseconds
            if try list.update() { batches += 1 }
            let first = min(wanted, max(0, list.count - rowsPerScreen))
            var titles: [String] = []
            for position in first..<min(first + rowsPerScreen, list.count) { titles.append(list[position].title) }
            let micros = Double(DispatchTime.now().uptimeNanoseconds - begin) / 1_000
            times.append(micros)
            if screen % 50 == 0 || screen == starts.count - 1 {
                let path = list.path(of: first)
                print(String(format: "screen %4d at row %@ (section %d, row %@): %7.0f µs, %@ rows decoded, heap %@  \"%@\"",
                             screen, first.formatted(), path.section, path.row.formatted(), micros, list.cachedCount.formatted(),
                             ProcessHeap.describe(ProcessHeap.anonymousBytes.map { $0 - (anonymousBefore ?? 0) }), titles.first ?? ""))
            }
        }
        let commits = writer.stop()
        let sorted = times.sorted()
        func percentile(_ q: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))] }
        print(String(format: "%d screens of %d rows over %@ messages: p50 %.0f µs, p99 %.0f µs, max %.0f µs per screen; "
                     + "%d commits by the writer, taken in %d updates; at most %@ rows decoded at once",
                     times.count, rowsPerScreen, list.count.formatted(), percentile(0.5), percentile(0.99), sorted.last ?? 0,
                     commits, batches, list.cachedCount.formatted()))
    }
}

/// A thread committing random changes to the demo feed until stopped.
final class DemoWriter: @unchecked Sendable {
    private let lock = NSLock()
    private var stopped = false
    private var commits = 0
    private let done = DispatchSemaphore(value: 0)
    private var finished = false

    init(store: Store, seed: UInt64, contacts: UInt64, every milliseconds: Int) {
        Thread.detachNewThread { [self] in
            var generator = DemoFeed(seed: seed &+ 7)
            while !lock.withLock({ stopped }) {
                _ = try? store.write { tx in try generator.mutate(tx, count: 2, contacts: contacts) }
                lock.withLock { commits += 1 }
                usleep(UInt32(milliseconds * 1_000))
            }
            done.signal()
        }
    }

    /// Stops the writer; returns its commits. Later calls return the same.
    @discardableResult
    func stop() -> Int {
        let wait = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        if wait { done.wait() }
        return lock.withLock { commits }
    }
}

/// The anonymous memory (heap and stacks, not mapped files) of this process, where the system
/// tells it (Linux).
enum ProcessHeap {
    static var anonymousBytes: Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/smaps_rollup", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Anonymous:") }),
              let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "") else { return nil }
        return kilobytes * 1_024
    }

    static func describe(_ bytes: Int?) -> String {
        guard let bytes else { return "unknown" }
        return "+" + readableSize(max(0, bytes))
    }
}
