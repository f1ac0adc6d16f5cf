import Feedstore
import FeedstoreDemo
import FeedstoreHummingbird
@testable import FeedstoreLive
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Many clients connecting and dropping at random while a writer commits: the server keeps
/// serving, what it keeps for dropped clients is bounded and goes after the grace period, a
/// client that resumes is exact, and so is every client that reads to the end.
@Suite(.ownThreads) struct LiveChaosTests {
    /// 300 clients in the quick run, 1,000 in the long one.
    @Test func manyClientsConnectAndDropWhileAWriterCommits() async throws {
        let seed = testSeeds(1, base: 93)[0]
        let clients = TestSize.choose(quick: 300, long: 1_000)
        try await LiveServerTests.withServer(seed: seed, gracePeriod: .seconds(2)) { _, store, service, server in
            // The writer: small commits until the clients are done.
            let done = Locked(false)
            let writer = Task.detached {
                var feed = DemoFeed(seed: seed &+ 1)
                var commits = 0
                while !done.withLock({ $0 }) {
                    try LiveSessionTests.mutate(store, &feed, count: 2)
                    commits += 1
                    try await Task.sleep(for: .milliseconds(2))
                }
                return commits
            }
            var random = SeededGenerator(seed: seed)
            // Clients that came back: each catches up once the writer stops (a copy chasing a
            // writer that never pauses is never equal at the moment it is compared).
            var resumed: [(client: LiveSocketClient, id: String, mirror: JSONMirror, query: LiveQuery)] = []
            // Waves of 50 connections at once.
            for wave in 0..<(clients / 50) {
                let plans = (0..<50).map { _ in (shape: Int.random(in: 0..<LiveSessionTests.shapes.count, using: &random),
                                                 frames: Int.random(in: 0...4, using: &random),
                                                 resumes: Int.random(in: 0..<10, using: &random) == 0) }
                resumed += try await withThrowingTaskGroup(of: (client: LiveSocketClient, id: String, mirror: JSONMirror, query: LiveQuery)?.self) { group in
                    for (index, plan) in plans.enumerated() {
                        group.addTask {
                            let id = "c\(wave)-\(index)"
                            let (members, query) = (LiveSessionTests.shapes[plan.shape].frame, LiveSessionTests.shapes[plan.shape].query)
                            let client = LiveSocketClient(url: server.url, token: "0")
                            await client.receive(#"{"type":"subscribe","id":"\#(id)","entity":"Message",\#(members)}"#)
                            var mirror = JSONMirror()
                            var token: String?
                            for _ in 0..<plan.frames {
                                guard let text = await client.nextFrame(), case let .object(frame) = try FieldValue(jsonText: text) else { break }
                                if frame["type"] == "welcome", case let .string(t) = frame["session"] { token = t }
                                if frame["type"] == "batch" { try mirror.apply(frame) }
                            }
                            await client.drop()
                            guard plan.resumes, let token else { return nil }
                            // Back within the grace period, on a new connection.
                            let again = LiveSocketClient(url: server.url, token: "0")
                            let applied = mirror.batches > 0 ? String(mirror.toSequence) : "null"
                            await again.receive(#"{"type":"resume","session":"\#(token)","subscriptions":[{"id":"\#(id)","entity":"Message",\#(members),"applied":\#(applied)}]}"#)
                            return (again, id, mirror, query)
                        }
                    }
                    return try await group.reduce(into: []) { if let entry = $1 { $0.append(entry) } }
                }
            }
            done.withLock { $0 = true }
            let commits = try await writer.value
            #expect(commits > 0)
            #expect(!resumed.isEmpty, "seed \(seed): some clients resumed")
            for (client, id, mirror, query) in resumed {
                var mirrors = [id: (mirror: mirror, query: query)]
                try await LiveServerTests.catchUp(client, &mirrors, store)
                await client.drop()
            }
            // Still serving: a client of each shape reads to the end, exact.
            let last = LiveSocketClient(url: server.url, token: "0")
            var mirrors = await LiveServerTests.subscribeAll(last)
            try await LiveServerTests.catchUp(last, &mirrors, store)
            await last.drop()
            // What the service kept for the dropped clients goes after the grace period.
            try await waitUntil("the kept sessions expire") { await service.keptSessionCount == 0 }
        }
    }
}
