@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Many watchers in every mode while writer threads and a writer process commit at once. At the
/// end every watcher must show exactly what a fresh query does, the store must verify clean, and
/// memory must stay bounded. Prints throughput and the worst delay from a commit to the batch
/// that first shows it.
@Suite(.blocking) struct LoadTests {
    @Test func sixtyWatchersStayExactUnderThreadAndProcessWriters() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            let store = try populatedDemoStore(at: path, seed: 31, messages: 3_000, contacts: 30)
            // Other processes write with the demo feed's entities, which declare no text index.
            let configurations = WatcherContractTests.configurations.filter { !$0.searchable }
            let memoryBefore = anonymousMemory()

            // 30 objects-mode watchers, 25 indexes-only watchers (windows among both), 5 single records.
            let objects = (0..<30).map { i in
                (configurations[i % configurations.count], store.watch(configurations[i % configurations.count].query,
                                                                      options: configurations[i % configurations.count].options))
            }
            let indexes = (0..<25).map { i in
                (configurations[i % configurations.count], store.watchIndexes(configurations[i % configurations.count].query,
                                                                             options: configurations[i % configurations.count].options))
            }
            let records = (1...5).map { store.observe(Message.self, id: UInt64($0 * 100)) }
            nonisolated(unsafe) var mirrors = [SectionedMirror<Message>](repeating: SectionedMirror(), count: objects.count)
            nonisolated(unsafe) var latest = [RecordChange<Message>?](repeating: nil, count: records.count)
            let latencies = Protected<[Double]>([])
            let stop = Protected(false)
            let failures = Protected<[String]>([])

            /// How long ago the oldest commit a batch covers was made.
            @Sendable func delay(from sequence: UInt64) throws -> Double? {
                guard let commit = try store.read({ try $0.journal(after: sequence, limit: 1) }).first else { return nil }
                return Date().timeIntervalSince(commit.timestamp)
            }
            // Four consumer threads, each polling its share of the watchers.
            let consumers = (0..<4).map { c in
                Thread {
                    do {
                        while !stop.current {
                            var idle = true
                            for i in stride(from: c, to: objects.count, by: 4) {
                                guard let batch = try objects[i].1.poll() else { continue }
                                idle = false
                                if !batch.isInitial, let d = try delay(from: batch.fromSequence) { latencies.withLock { $0.append(d) } }
                                try mirrors[i].apply(batch)
                            }
                            for i in stride(from: c, to: indexes.count, by: 4) {
                                guard let batch = try indexes[i].1.poll() else { continue }
                                idle = false
                                if !batch.isInitial, let d = try delay(from: batch.fromSequence) { latencies.withLock { $0.append(d) } }
                            }
                            for i in stride(from: c, to: records.count, by: 4) {
                                if let change = try records[i].poll() { latest[i] = change; idle = false }
                            }
                            if idle { usleep(1_000) }
                        }
                    } catch {
                        failures.withLock { $0.append("consumer \(c): \(error)") }
                    }
                }
            }
            consumers.forEach { $0.start() }
            // Writers start once every watcher holds its initial snapshot.
            let initialHead = try store.read { try $0.journalBounds().last }
            while objects.contains(where: { $0.1.sequence < initialHead }) || indexes.contains(where: { $0.1.sequence < initialHead }) {
                usleep(5_000)
            }

            // Three writer threads and one writer process.
            let started = Date()
            let child = try RunningTool(storectlURL, ["demo", "mutate", path, "--commits", "300", "--per-commit", "3", "--seed", "32",
                                                      "--durability", "none", "--quiet", "--pause", "5"])
            let writers = (0..<3).map { w in
                Thread {
                    var generator = DemoFeed(seed: 40 + UInt64(w))
                    for _ in 0..<200 {
                        do { _ = try store.write { tx in try generator.mutate(tx, count: 3, contacts: 30) } } catch {
                            failures.withLock { $0.append("writer \(w): \(error)") }
                        }
                        usleep(5_000)  // steady writers, about 200 commits/s each
                    }
                }
            }
            writers.forEach { $0.start() }
            while writers.contains(where: { !$0.isFinished }) { usleep(10_000) }
            let childResult = child.finish(timeout: 120)
            #expect(childResult.status == 0, "\(childResult.stderr)")
            let elapsed = Date().timeIntervalSince(started)

            // Let every watcher catch up with the last commit, then stop the consumers.
            let head = try store.read { try $0.journalBounds().last }
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline, objects.contains(where: { $0.1.sequence < head }) || indexes.contains(where: { $0.1.sequence < head }) {
                usleep(5_000)
            }
            stop.withLock { $0 = true }
            while consumers.contains(where: { !$0.isFinished }) { usleep(5_000) }
            #expect(failures.current.isEmpty, "\(failures.current)")

            for (i, (configuration, _)) in objects.enumerated() {
                try WatcherContractTests.check(mirrors[i], store, configuration, "objects watcher \(i) (\(configuration.name))")
            }
            for (i, (configuration, watcher)) in indexes.enumerated() {
                let want = try WatcherContractTests.expected(store, configuration)
                let got = (0..<watcher.numberOfSections).map { watcher.numberOfObjects(inSection: $0) }
                #expect(got == want.map(\.rows.count), "indexes watcher \(i) (\(configuration.name))")
                if let last = want.last, let row = last.rows.last {
                    #expect(try watcher.object(at: RowPath(section: want.count - 1, row: last.rows.count - 1)) == row)
                }
            }
            for (i, observer) in records.enumerated() {
                let current = try store.read { try $0.get(Message.self, id: observer.id) }
                switch latest[i] {
                case let .initial(value)?: #expect(value == current)
                case let .inserted(value)?, let .updated(value, _)?: #expect(value == current)
                case .deleted?: #expect(current == nil)
                case nil: Issue.record("record observer \(i) delivered nothing")
                }
            }
            #expect(try store.verify().isEmpty)
            // Suites running beside this one (a million rows each in the long run) hold memory
            // for minutes: growth above the bound is looked at again for up to two.
            let growth = anonymousMemoryGrowth(since: memoryBefore, settlingBelow: 256 << 20, patience: 120)
            #expect(growth < 256 << 20, "memory grew by \(growth >> 20) MB")

            let commits = 3 * 200 + 300
            let sorted = latencies.current.sorted()
            let p99 = sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
            print(String(format: "load: 60 watchers, %d commits from 3 threads and 1 process in %.1f s (%.0f commits/s); "
                + "%d batches; delay from commit to batch p50 %.1f ms, p99 %.1f ms, max %.1f ms; memory +%d MB",
                commits, elapsed, Double(commits) / elapsed, sorted.count, (sorted.isEmpty ? 0 : sorted[sorted.count / 2]) * 1_000,
                p99 * 1_000, (sorted.last ?? 0) * 1_000, growth >> 20))
        }
    }
}
