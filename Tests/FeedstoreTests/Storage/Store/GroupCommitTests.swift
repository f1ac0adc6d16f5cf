@testable import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

@Suite(.blocking) struct GroupCommitTests {
    static func item(_ id: Int64) -> Item { Item(id: id, group: id % 3, score: Double(id), name: "item\(id)", flag: id % 2 == 0, tag: nil) }

    /// Many concurrent async writers share commits; the one that throws loses exactly its own
    /// writes, everyone else's are durable, and the journal has one commit per successful writer.
    @Test func concurrentWritersAreIsolatedAndGroupCommitted() async throws {
        try await withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self], options: StoreOptions(durability: .full))
            struct Planned: Error {}
            let writers = 64, thrower = 13
            let txnBefore = try store.core.environment.info().lastTransactionID
            let results = await withTaskGroup(of: (Int, Bool).self) { group in
                for w in 0..<writers {
                    group.addTask {
                        do {
                            try await store.write { tx in
                                for k in 0..<5 { try tx.insert(Self.item(Int64(w * 10 + k))) }
                                if w == thrower { throw Planned() }
                            }
                            return (w, true)
                        } catch {
                            return (w, error is Planned ? false : true)
                        }
                    }
                }
                return await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
            }
            #expect(results.count == writers && results[thrower] == false)
            #expect(results.filter { $0.key != thrower }.allSatisfy { $0.value })
            let lmdbCommits = try store.core.environment.info().lastTransactionID - txnBefore
            print("group commit: \(writers) writers in \(lmdbCommits) LMDB commits")
            #expect(lmdbCommits < writers, "writers were not grouped")
            try await store.read { tx in
                #expect(try tx.count(Item.self) == (writers - 1) * 5)
                for k in 0..<5 { #expect(try tx.get(Item.self, id: Int64(thrower * 10 + k)) == nil) }
                let commits = try tx.journal(after: 0, limit: 1_000)
                #expect(commits.map(\.sequence) == Array(1...UInt64(writers - 1)))
                #expect(commits.allSatisfy { (c: JournalCommit) in c.entries.count == 5 })
            }
            #expect(try store.verify().isEmpty)
        }
    }

    /// `writeEach` runs its bodies in order, each a journal commit of its own, in far fewer LMDB
    /// commits; a body that throws loses its own writes alone, and a body can see what the ones
    /// before it wrote.
    @Test func writeEachGivesEveryBodyItsOwnCommitInOrder() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self], options: StoreOptions(durability: .full))
            struct Planned: Error {}
            let bodies = 600, thrower = 77
            let txnBefore = try store.core.environment.info().lastTransactionID
            let outcomes = try store.writeEach((0..<bodies).map { b in
                { tx in
                    // Each body renames the item of the body before it: order is visible.
                    if b > 0, var previous = try tx.get(Item.self, id: Int64(b - 1)) {
                        previous.name = "seen by \(b)"
                        try tx.put(previous)
                    }
                    try tx.insert(Self.item(Int64(b)))
                    if b == thrower { throw Planned() }
                }
            })
            #expect(outcomes.count == bodies)
            for (b, outcome) in outcomes.enumerated() {
                #expect((try? outcome.get()) != nil || b == thrower, "body \(b)")
            }
            #expect(throws: Planned.self) { try outcomes[thrower].get() }
            let lmdbCommits = try store.core.environment.info().lastTransactionID - txnBefore
            #expect(lmdbCommits <= UInt64((bodies + WriteQueue.maximumBatch - 1) / WriteQueue.maximumBatch) + 1, "\(lmdbCommits) LMDB commits")
            try store.read { tx in
                #expect(try tx.count(Item.self) == bodies - 1)
                #expect(try tx.get(Item.self, id: Int64(thrower)) == nil)
                // The thrower's rename of the item before it was rolled back with it.
                #expect(try tx.get(Item.self, id: Int64(thrower - 1))?.name == "item\(thrower - 1)")
                #expect(try tx.get(Item.self, id: Int64(thrower + 1))?.name == "seen by \(thrower + 2)")
                #expect(try tx.get(Item.self, id: 0)?.name == "seen by 1")
                let commits = try tx.journal(after: 0, limit: 1_000)
                #expect(commits.map(\.sequence) == Array(1...UInt64(bodies - 1)))
                // One commit per body, in the bodies' order: the first inserts, the others rename and insert.
                #expect(commits.first?.entries.count == 1 && commits.dropFirst().allSatisfy { $0.entries.count == 2 || $0.entries.count == 1 })
            }
            #expect(try store.verify().isEmpty)
        }
    }

    /// A record of any size: its text is not indexed, its size is.
    struct Page: Entity, Equatable {
        var id: Int64
        var size: Int64
        var text: String
        var tags: [String]
        static let indexes = [IndexDefinition("bySize", [.ascending("size")])]
    }

    /// The bodies of a group, and one group after another, encode their records into the same
    /// buffers: a body with records of any size, or one that throws halfway through its writes,
    /// leaves nothing in them that a later body stores or journals.
    @Test(arguments: testSeeds(2, base: 31)) func bodiesOfManySizesShareBuffersWithoutLeaks(seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Page.self], options: StoreOptions(durability: .none))
            defer { store.close() }
            struct Planned: Error {}
            var random = RandomValues(seed: seed)
            var mirror: [Int64: Page] = [:]
            for _ in 0..<8 {
                var planned: [(pages: [Page], throws: Bool)] = []
                for _ in 0..<Int.random(in: 1...24, using: &random.rng) {
                    let pages = (0..<Int.random(in: 1...3, using: &random.rng)).map { _ in
                        // From one byte to past what the buffers keep between writes (64 KiB).
                        let size = [1, 30, 900, 70_000].randomElement(using: &random.rng)!
                        return Page(id: Int64.random(in: 0..<200, using: &random.rng), size: Int64(size), text: String(repeating: "x", count: size),
                                    tags: (0..<Int.random(in: 0...3, using: &random.rng)).map { "t\($0)" })
                    }
                    planned.append((pages, Int.random(in: 0..<5, using: &random.rng) == 0))
                }
                let outcomes = try store.writeEach(planned.map { body in
                    { tx in
                        for page in body.pages { try tx.put(page) }
                        if body.throws { throw Planned() }
                    }
                })
                for (body, outcome) in zip(planned, outcomes) {
                    #expect((try? outcome.get()) != nil || body.throws, "seed \(seed)")
                    if !body.throws { for page in body.pages { mirror[page.id] = page } }
                }
            }
            try store.read { tx in
                let stored = try tx.objects(in: Query(Page.self, index: "bySize"))
                #expect(Dictionary(uniqueKeysWithValues: stored.map { ($0.id, $0) }) == mirror, "seed \(seed)")
                // Each journal entry names a record whose change it holds.
                for commit in try tx.journal(after: 0, limit: 10_000) {
                    #expect(commit.entries.allSatisfy { $0.entity == "Page" }, "seed \(seed)")
                }
            }
            #expect(try store.verify().isEmpty, "seed \(seed)")
        }
    }

    /// The count changes of a group's bodies are applied once, before the commit; a body that
    /// counts sees every entry the bodies before it added, and a body that throws takes its
    /// entries out of the counts with it.
    @Test func bodiesOfAGroupCountWhatTheBodiesBeforeThemWrote() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self], options: StoreOptions(durability: .none))
            struct Planned: Error {}
            let bodies = 300, thrower = 31
            let seen = Protected([Int: (group: Int, flagged: Int)]())
            let outcomes = try store.writeEach((0..<bodies).map { b in
                { tx in
                    try tx.insert(Self.item(Int64(b)))
                    if b == thrower { throw Planned() }
                    // Most bodies leave their count changes to the bodies after them.
                    guard b % 10 == 9 else { return }
                    // Counted ranges: read through the counts trees, not the trees' entry totals.
                    let group = try tx.count(Item.self, index: "byGroupScore", range: .prefix(.int(Int64(b % 3))))
                    let flagged = try tx.count(Item.self, index: "flagged", range: .prefix())
                    seen.withLock { $0[b] = (group, flagged) }
                }
            })
            #expect(outcomes.indices.allSatisfy { (try? outcomes[$0].get()) != nil || $0 == thrower })
            // What each body saw: the items of its group written by it and the bodies before it, the
            // thrower's left out for every body after it.
            #expect(seen.current.count == bodies / 10)
            for b in 0..<bodies where b % 10 == 9 {
                let before = (0...b).filter { $0 != thrower }
                let group = before.filter { $0 % 3 == b % 3 }.count
                let flagged = before.filter { $0 % 2 == 0 && $0 % 3 >= 2 }.count
                #expect(seen.current[b]?.group == group && seen.current[b]?.flagged == flagged, "body \(b)")
            }
            let groups = try store.read { tx in try (0..<3).map { g in try tx.count(Item.self, index: "byGroupScore", range: .prefix(.int(Int64(g)))) } }
            #expect(groups == (0..<3).map { g in (0..<bodies).filter { $0 != thrower && $0 % 3 == g }.count })
            #expect(try store.verify().isEmpty)
        }
    }

    /// The same from threads calling the synchronous `write`, with a unique violation as the failure.
    @Test func synchronousWritersFromManyThreads() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self], options: StoreOptions(durability: .relaxed))
            let failures = Protected(0)
            DispatchQueue.concurrentPerform(iterations: 32) { w in
                do {
                    try store.write { tx in
                        try tx.insert(Self.item(Int64(w + 1)))
                        // Writer 7 reuses writer 3's name; whichever comes second fails alone.
                        if w == 7 { try tx.insert(Item(id: 1_000, group: 0, score: 0, name: "item4", flag: false, tag: nil)) }
                    }
                } catch {
                    failures.withLock { $0 += 1 }
                }
            }
            let count = try store.read { try $0.count(Item.self) }
            #expect(failures.current <= 1 && count == 32 - failures.current + (failures.current == 0 ? 1 : 0))
            #expect(try store.verify().isEmpty)
        }
    }

    /// Synchronous writes run inline when the writer is idle and queue behind it otherwise;
    /// mixed with async writers, every write lands once, in its own journal commit.
    @Test func inlineAndQueuedWritesInterleave() async throws {
        try await withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self], options: StoreOptions(durability: .none))
            let perWriter = 100
            let threads = (0..<4).map { t in
                let thread = Thread {
                    for k in 0..<perWriter { try! store.write { tx in try tx.insert(Self.item(Int64(t * perWriter + k + 1))) } }
                }
                thread.start()
                return thread
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for t in 4..<8 {
                    group.addTask {
                        for k in 0..<perWriter { try await store.write { tx in try tx.insert(Self.item(Int64(t * perWriter + k + 1))) } }
                    }
                }
                try await group.waitForAll()
            }
            while threads.contains(where: { $0.isExecuting }) || threads.contains(where: { !$0.isFinished }) { try await Task.sleep(for: .milliseconds(5)) }
            #expect(try await store.read { try $0.count(Item.self) } == 8 * perWriter)
            #expect(try await store.read { try $0.journalBounds().last } == UInt64(8 * perWriter))
            #expect(try store.verify().isEmpty)
        }
    }

    /// A write queued while a synchronous write runs inline is committed once the inline write
    /// ends: the writer thread, idle until then, is woken for it, and runs it. A lone async
    /// write runs on its task's own thread.
    @Test func writeQueuedBehindAnInlineWriteIsCommitted() async throws {
        try await withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self], options: StoreOptions(durability: .none))
            // Queued, so it starts the writer thread, which then waits idle.
            let first = DispatchSemaphore(value: 0), writerThread = Locked<pthread_t?>(nil)
            try store.core.writer.submit(WriteQueue.Request(body: { tx in
                writerThread.withLock { $0 = pthread_self() }
                try tx.insert(Self.item(1))
            }, completion: { _ in first.signal() }))
            await Task.detached { first.wait() }.value
            let writer = try #require(writerThread.current)
            let inside = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
            let inline = Thread {
                try! store.write { tx in
                    inside.signal()
                    release.wait()
                    try tx.insert(Self.item(2))
                }
            }
            inline.start()
            await Task.detached { inside.wait() }.value
            let queued = Task {
                try await store.write { tx in
                    try tx.insert(Self.item(3))
                    return pthread_self()
                }
            }
            // Generous: the long suite runs it beside soaks that load both cores and the disk.
            let deadline = ContinuousClock.now + .seconds(30)
            while store.core.writer.queuedRequests == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
            #expect(store.core.writer.queuedRequests == 1)
            release.signal()
            // Polled rather than awaited, so that a writer left asleep fails the test instead of hanging it.
            while try await store.read({ try $0.count(Item.self) }) < 3, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
            #expect(try await store.read { try $0.count(Item.self) } == 3, "the writer: \(store.core.writer.stateDescription)")
            #expect(try await store.read { try $0.journalBounds().last } == 3)
            #expect(pthread_equal(try await queued.value, writer) != 0, "a queued write runs on the writer thread")
            // The queued write's caller resumes before the writer thread has marked itself idle;
            // a write arriving in between joins the writer thread, as it should.
            while !store.core.writer.isIdle, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
            #expect(store.core.writer.isIdle, "the writer: \(store.core.writer.stateDescription)")
            let lone = try await store.write { tx in
                try tx.insert(Self.item(4))
                return pthread_self()
            }
            #expect(pthread_equal(lone, writer) == 0, "a lone async write runs on its task's thread")
            store.close()  // also wakes the writer thread if it was left asleep
        }
    }

    /// Right after the writer thread commits a group of several writers, a write that finds
    /// nothing running or waiting joins the writer thread all the same (its writers may be
    /// coming back, and should share the next commit); once the group's commit time has passed,
    /// a lone write runs on its own thread again (or once the window's cap has).
    @Test func aWriteRightAfterAGroupJoinsTheWriterThread() async throws {
        try await withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self], options: StoreOptions(durability: .none))
            // Longer than the groups' commits below, so that a commit's time sets the window.
            store.core.writer.comeBackWindow = 60_000_000_000
            func insert(_ id: Int64) async throws -> pthread_t {
                try await store.write { tx in
                    try tx.insert(Self.item(id))
                    return pthread_self()
                }
            }

            var (writer, ended) = try await Self.groupOfTwo(in: store, ids: 1...3)
            let next = try await insert(4)
            // Meaningful only within the window: the group's commit took half a second (a loaded
            // machine may resume this task later).
            if ContinuousClock.now - ended < .milliseconds(400) {
                #expect(pthread_equal(next, writer) != 0, "a write right after a group joins the writer thread")
            }

            // The window's cap bounds it below a commit's time that a loaded machine stretches.
            store.core.writer.comeBackWindow = 400_000_000
            (writer, ended) = try await Self.groupOfTwo(in: store, ids: 5...7)
            try await Task.sleep(until: ended + .milliseconds(1_200))
            #expect(pthread_equal(try await insert(8), writer) == 0, "a lone write once the window has passed runs on its task's thread")
            #expect(try await store.read { try $0.journalBounds().last } == 8)
            store.close()
        }
    }

    /// Holds an inline write (the first id) while two async writes (the next two) queue behind
    /// it, then lets it go: the two share a commit on the writer thread, which takes half a
    /// second. Returns the writer thread, and when the last of the two ended (its commit ended
    /// after).
    static func groupOfTwo(in store: Store, ids: ClosedRange<Int64>) async throws -> (pthread_t, ContinuousClock.Instant) {
        let inside = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let inline = Thread {
            try! store.write { tx in
                inside.signal()
                release.wait()
                try tx.insert(Self.item(ids.lowerBound))
            }
        }
        inline.start()
        await Task.detached { inside.wait() }.value
        let group = ids.dropFirst().map { id in
            Task {
                try await store.write { tx in
                    try tx.insert(Self.item(id))
                    Thread.sleep(forTimeInterval: 0.25)
                    return (pthread_self(), ContinuousClock.now)
                }
            }
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while store.core.writer.queuedRequests < 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(1)) }
        #expect(store.core.writer.queuedRequests == 2)
        release.signal()
        var ran: [(thread: pthread_t, ended: ContinuousClock.Instant)] = []
        for write in group { ran.append(try await write.value) }
        #expect(pthread_equal(ran[0].thread, ran[1].thread) != 0, "the two writes shared a commit on the writer thread")
        return (ran[0].thread, ran.map(\.ended).max()!)
    }
}
