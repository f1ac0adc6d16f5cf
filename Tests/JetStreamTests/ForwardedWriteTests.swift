@_spi(Replication) import Feedstore
import FeedstoreDemo
@testable import FeedstoreJetStream
import FeedstoreTestSupport
import FeedstoreTestTraits
import NATSTestServer
import Foundation
import Testing

/// Writes sent from replicas to the primary over a real `nats-server -js`: each is applied
/// once, read back on its own replica as soon as the call returns, refused as a local write
/// would be, and answered again (not applied again) when it is sent twice.
@Suite(.serialized, .ownThreads) struct ForwardedWriteTests {
    static let stream = "ITEMS"

    /// A primary accepting writes, shipping on a thread of its own until closed, and replicas,
    /// each followed on a thread of its own, with a writer each.
    final class Cluster {
        let server: NATSServer
        let primary: Store
        let writers: [ReplicaWriter]
        private let loops: [LoopThread]
        private let followers: [ReplicaFollower]

        init(in dir: String, replicas count: Int, attemptTimeout: Duration = .seconds(1)) throws {
            server = try NATSServer(directory: dir)
            let connection = JetStreamConnection(url: server.url)
            primary = try ShipperTests.openStore(dir + "/primary")
            let shipper = try JournalShipper(store: primary, connection: connection, stream: stream, snapshots: nil, acceptWrites: ForwardedWrites())
            nonisolated(unsafe) let runningShipper = shipper
            var loops = [LoopThread { try runningShipper.run(while: $0) }]
            var followers: [ReplicaFollower] = []
            for i in 0..<count {
                let follower = try ReplicaFollower(path: dir + "/replica\(i)", connection: connection, stream: stream)
                nonisolated(unsafe) let runningFollower = follower
                loops.append(LoopThread { try runningFollower.run(while: $0) })
                followers.append(follower)
            }
            (self.loops, self.followers) = (loops, followers)
            writers = try followers.map { try ReplicaWriter(replica: $0.replica, connection: connection, stream: stream, attemptTimeout: attemptTimeout) }
        }

        func close() {
            for loop in loops { loop.stop() }
            for follower in followers { follower.replica.close() }
            primary.close()
        }
    }

    /// A ``Cluster`` for the time of `body`.
    static func withCluster(in dir: String, replicas count: Int, attemptTimeout: Duration = .seconds(1),
                            _ body: (_ primary: Store, _ writers: [ReplicaWriter], _ server: NATSServer) throws -> Void) throws
    {
        let cluster = try Cluster(in: dir, replicas: count, attemptTimeout: attemptTimeout)
        defer { cluster.close() }
        try body(cluster.primary, cluster.writers, cluster.server)
    }

    /// Runs `body` on `count` threads of its own at once (not a pool's few), and waits for all.
    static func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let group = DispatchGroup()
        for i in 0..<count {
            group.enter()
            Thread { body(i); group.leave() }.start()
        }
        group.wait()
    }

    static func item(_ id: Int64, name: String? = nil) -> RecordWrite {
        RecordWrite.insert(entity: "Item", id: .int(id), fields: Item(id: id, group: id % 5, score: Double(id), name: name ?? "item \(id)", flag: id % 2 == 0, tag: nil).fields)
    }

    /// 16 writers on three replicas: each call returns the write's commit, the writer's own
    /// replica already holds the record, and the primary's journal holds each request once.
    /// Requests refused among them (a name taken) are refused alone: the requests that share
    /// their batch are applied.
    @Test func sixteenWritersReadTheirWritesOnTheirReplicas() async throws {
        try withTemporaryDirectory { dir in
            try Self.withCluster(in: dir, replicas: 3) { primary, writers, _ in
                try writers[0].writeBlocking([Self.item(999_999, name: "taken")])
                let failures = Locked<[String]>([])
                Self.onThreads(16) { writer in
                    let replica = writers[writer % writers.count]
                    for n in 0..<25 {
                        let id = Int64(writer * 1_000 + n)
                        if n % 5 == 4 {
                            do {
                                try replica.writeBlocking([Self.item(id + 500, name: "taken")])
                                failures.withLock { $0.append("writer \(writer): a second \"taken\" was applied") }
                            } catch FeedstoreError.uniqueViolation {
                            } catch {
                                failures.withLock { $0.append("writer \(writer): \(error)") }
                            }
                        }
                        do {
                            let sequence = try replica.writeBlocking([Self.item(id)])
                            let read = try replica.replica.read { try $0.record(entity: "Item", id: .int(id)) }
                            let applied = try replica.replica.read { try $0.replicaState()?.originSequence } ?? 0
                            if read?["name"] != .string("item \(id)") || applied < sequence {
                                failures.withLock { $0.append("writer \(writer): item \(id) not on its replica after commit \(sequence)") }
                            }
                        } catch {
                            failures.withLock { $0.append("writer \(writer): \(error)") }
                        }
                    }
                }
                #expect(failures.current.isEmpty, "\(failures.current.prefix(5))")
                let (count, journal, remembered) = try primary.read { tx in
                    (try tx.count(entity: "Item"), try tx.journal(after: 0, limit: 10_000), try tx.appliedRequestCount())
                }
                #expect(count == 16 * 25 + 1)
                // One journal entry per request: none was applied twice.
                #expect(journal.flatMap(\.entries).count == 16 * 25 + 1)
                #expect(remembered == 16 * 25 + 1)
            }
        }
    }

    /// The async form holds no thread while it waits: 64 tasks at once on the few threads
    /// Swift concurrency shares each read their write on their replica when the call returns,
    /// refusals among them included, and each request is applied once.
    @Test func manyAsyncWritersReadTheirWritesOnTheirReplicas() async throws {
        let dir = NSTemporaryDirectory() + "feedstore-async-writes-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let cluster = try Cluster(in: dir, replicas: 2)
        defer { cluster.close() }
        let writers = cluster.writers
        try await writers[0].write([Self.item(999_999, name: "taken")])
        // The process's threads, counted while the tasks write: a call that blocked a thread of
        // its own would add one for each of the 64.
        let threadsBefore = Self.threadCount()
        let mostThreads = Locked(threadsBefore), sampling = Locked(true)
        Thread {
            while sampling.current {
                let now = Self.threadCount()
                mostThreads.withLock { $0 = max($0, now) }
                usleep(500)
            }
        }.start()
        let failures = try await withThrowingTaskGroup(of: [String].self) { group in
            for task in 0..<64 {
                group.addTask {
                    let writer = writers[task % writers.count]
                    var failures: [String] = []
                    for n in 0..<5 {
                        let id = Int64(task * 1_000 + n)
                        if n == 2 {
                            do {
                                try await writer.write([Self.item(id + 500, name: "taken")])
                                failures.append("task \(task): a second \"taken\" was applied")
                            } catch FeedstoreError.uniqueViolation {}
                        }
                        let sequence = try await writer.write([Self.item(id)])
                        let read = try await writer.replica.read { try $0.record(entity: "Item", id: .int(id)) }
                        let applied = try await writer.replica.read { try $0.replicaState()?.originSequence } ?? 0
                        if read?["name"] != .string("item \(id)") || applied < sequence {
                            failures.append("task \(task): item \(id) not on its replica after commit \(sequence)")
                        }
                    }
                    return failures
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        sampling.withLock { $0 = false }
        #expect(failures.isEmpty, "\(failures.prefix(5))")
        #expect(mostThreads.current - threadsBefore < 32, "\(threadsBefore) threads before the writes, \(mostThreads.current) at most during them")
        let (count, entries, remembered) = try await cluster.primary.read { tx in
            (try tx.count(entity: "Item"), try tx.journal(after: 0, limit: 10_000).flatMap(\.entries).count, try tx.appliedRequestCount())
        }
        #expect(count == 64 * 5 + 1)
        #expect(entries == 64 * 5 + 1)
        #expect(remembered == 64 * 5 + 1)
    }

    /// The threads of this process (Linux's `/proc`).
    static func threadCount() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        return status.split(separator: "\n").first { $0.hasPrefix("Threads:") }.flatMap { Int($0.dropFirst(8).trimmingCharacters(in: .whitespaces)) } ?? 0
    }

    /// A request that reads its success from the stream gets no reply for a commit that names
    /// it: the replica learns of it by applying the commit. Refusals, requests applied before,
    /// and requests whose writes commit nothing are still answered, and a request that does not
    /// ask so is answered as always.
    @Test func aRequestAnsweredByTheStreamIsRepliedToOnlyWhereTheStreamCannotTell() async throws {
        try withTemporaryDirectory { dir in
            try Self.withCluster(in: dir, replicas: 1) { primary, writers, server in
                let connection = try NATSConnection(JetStreamConnection(url: server.url))
                let inbox = NATSConnection.newInbox()
                let replies = Locked<[String: WriteMessages.Reply]>([:])
                let subscription = try connection.subscribe(subject: inbox + ".*") { message, _ in
                    guard let name = message.subject.split(separator: ".").last, let reply = try? WriteMessages.decodeReply(message.data) else { return }
                    replies.withLock { $0[String(name)] = reply }
                }
                defer { subscription.cancel() }
                func send(_ name: String, _ id: String, _ writes: [RecordWrite], answeredByStream: Bool = true) throws {
                    let request = WriteMessages.Request(id: id, writes: writes, answeredByStream: answeredByStream)
                    try connection.publishRequest(subject: WriteMessages.subject(stream: Self.stream), reply: "\(inbox).\(name)", data: WriteMessages.encode(request))
                }
                func waitFor(_ done: () throws -> Bool) throws {
                    let deadline = Date().addingTimeInterval(10)
                    while try !done(), Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
                }

                try send("applied", "a", [Self.item(1)])
                try waitFor { try writers[0].replica.read { try $0.appliedRequest("a") } != nil }
                let applied = try #require(try writers[0].replica.read { try $0.appliedRequest("a") }?.sequence)
                try send("answered", "b", [Self.item(2)], answeredByStream: false)
                try send("refused", "c", [Self.item(1)])
                try send("again", "a", [Self.item(1)])
                try send("nothing", "d", [])
                try waitFor { replies.current.count >= 4 }
                Thread.sleep(forTimeInterval: 0.2)
                let got = replies.current
                #expect(got["applied"] == nil, "a commit that names the request is its answer")
                guard case .applied(_, repeated: false)? = got["answered"] else { Issue.record("answered: \(String(describing: got["answered"]))"); return }
                guard case .refused(.recordExists(entity: "Item", id: .int(1)))? = got["refused"] else { Issue.record("refused: \(String(describing: got["refused"]))"); return }
                #expect(got["again"] == .applied(sequence: applied, repeated: true))
                guard case .applied(_, repeated: false)? = got["nothing"] else { Issue.record("nothing: \(String(describing: got["nothing"]))"); return }
                #expect(try primary.read { try $0.count(entity: "Item") } == 2)
            }
        }
    }

    /// Refusals arrive as the errors of a local write, and write nothing.
    @Test func refusalsAreTypedAndWriteNothing() async throws {
        try withTemporaryDirectory { dir in
            try Self.withCluster(in: dir, replicas: 1) { primary, writers, _ in
                let writer = writers[0]
                try writer.writeBlocking([Self.item(1, name: "taken")])
                let before = try primary.read { try $0.journalBounds().last }

                // A unique index refuses a second "taken", with the first write of the batch.
                #expect { try writer.writeBlocking([Self.item(2), Self.item(3, name: "taken")]) } throws: { error in
                    guard case let FeedstoreError.uniqueViolation(entity, index, _, existingID) = error else { return false }
                    return entity == "Item" && index == "byName" && existingID == .int(1)
                }
                #expect { try writer.writeBlocking([Self.item(1)]) } throws: { error in
                    if case FeedstoreError.recordExists(entity: "Item", id: .int(1)) = error { return true }
                    return false
                }
                // A value of another kind than the type reads.
                var wrongKind = Item(id: 4, group: 1, score: 1, name: "four", flag: true, tag: nil).fields
                wrongKind["score"] = .string("high")
                #expect { try writer.writeBlocking([RecordWrite.put(entity: "Item", id: .int(4), fields: wrongKind)]) } throws: { error in
                    guard case let FeedstoreError.recordRefused(_, _, field, reason) = error, case .wrongKind = reason else { return false }
                    return field == "score"
                }
                #expect { try writer.writeBlocking([RecordWrite.delete(entity: "Nothing", id: .int(1))]) } throws: { error in
                    if case FeedstoreError.unknownEntity("Nothing", _) = error { return true }
                    return false
                }
                // Preconditions: absent, and compare-and-set.
                let stored = try #require(try writer.replica.read { try $0.record(entity: "Item", id: .int(1)) })
                #expect { try writer.writeBlocking([RecordWrite.put(entity: "Item", id: .int(1), fields: stored, if: .absent)]) } throws: { error in
                    if case FeedstoreError.preconditionFailed(entity: "Item", id: .int(1), _) = error { return true }
                    return false
                }
                var renamed = stored
                renamed["name"] = .string("renamed")
                var stale = stored
                stale["score"] = .double(99)
                #expect { try writer.writeBlocking([RecordWrite.put(entity: "Item", id: .int(1), fields: renamed, if: .equals(stale))]) } throws: { error in
                    if case FeedstoreError.preconditionFailed = error { return true }
                    return false
                }
                #expect(try primary.read { try $0.journalBounds().last } == before, "no refusal wrote anything")
                #expect(try primary.read { try $0.count(entity: "Item") } == 1)

                // The compare-and-set that holds is applied.
                let sequence = try writer.writeBlocking([RecordWrite.put(entity: "Item", id: .int(1), fields: renamed, if: .equals(stored))])
                #expect(sequence == before + 1)
                #expect(try writer.replica.read { try $0.record(entity: "Item", id: .int(1)) }?["name"] == .string("renamed"))
            }
        }
    }

    /// A request sent again with its id gets the first answer and is not applied again, even
    /// after the primary forgot nothing else about it; typed records go as well as named ones.
    @Test func aRequestSentAgainIsAnsweredNotApplied() async throws {
        try withTemporaryDirectory { dir in
            try Self.withCluster(in: dir, replicas: 1) { primary, writers, _ in
                let writer = writers[0]
                let note = Note(id: "n1", body: "first", priority: 1, when: Date(timeIntervalSince1970: 1_000.25), labels: ["a"])
                let first = try writer.writeBlocking([try RecordWrite.insert(note)], requestID: "request-1")
                let again = try writer.writeBlocking([try RecordWrite.insert(note)], requestID: "request-1")
                #expect(first == again)
                #expect(try writer.replica.read { try $0.get(Note.self, id: "n1") }.map { [$0.body, $0.when.description] } == [note.body, note.when.description])
                #expect(try primary.read { try $0.journalBounds().last } == first)
                let remembered = try primary.read { try $0.appliedRequest("request-1") }
                #expect(remembered?.sequence == first)
            }
        }
    }

    /// With no primary accepting writes, a call fails within its timeout and nothing is
    /// applied; sent again once a primary answers, it is applied once.
    @Test func withThePrimaryDownACallFailsAndARetryAppliesOnce() async throws {
        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir)
            let connection = JetStreamConnection(url: server.url)
            let primary = try ShipperTests.openStore(dir + "/primary")
            defer { primary.close() }
            // A shipper without writes makes the stream; the replica follows it.
            var shipper: JournalShipper? = try JournalShipper(store: primary, connection: connection, stream: Self.stream, snapshots: nil)
            let follower = try ReplicaFollower(path: dir + "/replica", connection: connection, stream: Self.stream)
            defer { follower.replica.close() }
            let writer = try ReplicaWriter(replica: follower.replica, connection: connection, stream: Self.stream, attemptTimeout: .milliseconds(200))
            let started = ContinuousClock.now
            #expect { try writer.writeBlocking([Self.item(1)], requestID: "r", timeout: .milliseconds(600)) } throws: { error in
                guard case JetStreamError.primaryUnreachable = error else { return false }
                return true
            }
            #expect(ContinuousClock.now - started < .seconds(3))
            #expect(try primary.read { try $0.count(entity: "Item") } == 0)

            shipper = nil
            shipper = try JournalShipper(store: primary, connection: connection, stream: Self.stream, snapshots: nil, acceptWrites: ForwardedWrites())
            nonisolated(unsafe) let (runningShipper, runningFollower) = (shipper!, follower)
            let loops = [LoopThread { try runningShipper.run(while: $0) }, LoopThread { try runningFollower.run(while: $0) }]
            defer { for loop in loops { loop.stop() } }
            let sequence = try writer.writeBlocking([Self.item(1)], requestID: "r")
            #expect(try writer.writeBlocking([Self.item(1)], requestID: "r") == sequence)
            #expect(try primary.read { try $0.count(entity: "Item") } == 1)
        }
    }

    /// Requests ship with their commits: a promoted replica answers a request its old primary
    /// applied with the old answer, and applies new ones, which the other replicas read.
    @Test func aPromotedReplicaAnswersRequestsItsPrimaryApplied() async throws {
        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir)
            let connection = JetStreamConnection(url: server.url)
            let primary = try ShipperTests.openStore(dir + "/primary")
            defer { primary.close() }
            final class Box: @unchecked Sendable { var shipper: JournalShipper? }
            let old = Box()
            old.shipper = try JournalShipper(store: primary, connection: connection, stream: Self.stream, snapshots: nil, acceptWrites: ForwardedWrites())
            let running = Locked(true), primaryRunning = Locked(true)
            let first = try ReplicaFollower(path: dir + "/first", connection: connection, stream: Self.stream)
            let second = try ReplicaFollower(path: dir + "/second", connection: connection, stream: Self.stream)
            defer { second.replica.close() }
            nonisolated(unsafe) let (firstFollower, secondFollower) = (first, second)
            let shipping = Thread { try? old.shipper!.run(while: { primaryRunning.current }); old.shipper = nil }
            let following = Thread { try? firstFollower.run(while: { primaryRunning.current }) }
            let followingSecond = Thread { try? secondFollower.run(while: { running.current }) }
            for thread in [shipping, following, followingSecond] { thread.start() }
            defer {
                running.withLock { $0 = false }
                while followingSecond.isExecuting { Thread.sleep(forTimeInterval: 0.01) }
            }
            let writer = try ReplicaWriter(replica: second.replica, connection: connection, stream: Self.stream, attemptTimeout: .milliseconds(300))
            let applied = try writer.writeBlocking([Self.item(1)], requestID: "before-promotion")
            let deadline = Date().addingTimeInterval(10)
            while (first.state?.originSequence ?? 0) < applied, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
            #expect(try first.replica.read { try $0.appliedRequest("before-promotion") }?.sequence == applied, "the replica remembers the request")

            // The primary goes away; the first replica takes over and accepts writes.
            primaryRunning.withLock { $0 = false }
            while shipping.isExecuting || following.isExecuting { Thread.sleep(forTimeInterval: 0.01) }
            let promoted = try first.promote(durability: .none)
            defer { promoted.close() }
            let newShipper = try JournalShipper(store: promoted, connection: connection, stream: Self.stream, snapshots: nil, acceptWrites: ForwardedWrites())
            nonisolated(unsafe) let runningShipper = newShipper
            let newShipping = Thread { try? runningShipper.run(while: { running.current }) }
            newShipping.start()
            defer {
                running.withLock { $0 = false }
                while newShipping.isExecuting { Thread.sleep(forTimeInterval: 0.01) }
            }
            // The retry of a request the old primary applied gets its answer, not a second commit.
            #expect(try writer.writeBlocking([Self.item(1)], requestID: "before-promotion") == applied)
            #expect(try promoted.read { try $0.journalBounds().last } == applied)
            let next = try writer.writeBlocking([Self.item(2)], requestID: "after-promotion")
            #expect(next == applied + 1)
            #expect(try second.replica.read { try $0.count(entity: "Item") } == 2)
            #expect(second.state?.origin == (try promoted.read { try $0.storeIdentifier() }))
        }
    }

    /// The async form ends as soon as its task is cancelled, with `CancellationError`, however
    /// long its own timeout.
    @Test func anAsyncWriteEndsWhenItsTaskIsCancelled() async throws {
        let dir = NSTemporaryDirectory() + "feedstore-cancel-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try NATSServer(directory: dir)
        let connection = JetStreamConnection(url: server.url)
        let primary = try ShipperTests.openStore(dir + "/primary")
        defer { primary.close() }
        // A stream, and no primary that accepts writes.
        _ = try JournalShipper(store: primary, connection: connection, stream: Self.stream, snapshots: nil)
        let follower = try ReplicaFollower(path: dir + "/replica", connection: connection, stream: Self.stream)
        defer { follower.replica.close() }
        let writer = try ReplicaWriter(replica: follower.replica, connection: connection, stream: Self.stream, attemptTimeout: .milliseconds(200))
        let writing = Task { try await writer.write([Self.item(1)], timeout: .seconds(60)) }
        try await Task.sleep(for: .milliseconds(300))
        let cancelled = ContinuousClock.now
        writing.cancel()
        await #expect(throws: CancellationError.self) { try await writing.value }
        #expect(ContinuousClock.now - cancelled < .seconds(1))
    }

    /// A request applied whose answer never came (its primary stopped before its commit was in
    /// the stream) is an unknown outcome; sent again with its id to the next primary, it gets
    /// the first commit, and the stream holds it once.
    @Test func anUnansweredRequestSentAgainIsAnsweredFromMemory() async throws {
        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir)
            let connection = JetStreamConnection(url: server.url)
            let primary = try ShipperTests.openStore(dir + "/primary")
            defer { primary.close() }
            // Accepting writes, but not shipping: the commit is made, the answer waits for the stream.
            var shipper: JournalShipper? = try JournalShipper(store: primary, connection: connection, stream: Self.stream, snapshots: nil,
                                                              acceptWrites: ForwardedWrites())
            let follower = try ReplicaFollower(path: dir + "/replica", connection: connection, stream: Self.stream)
            defer { follower.replica.close() }
            let writer = try ReplicaWriter(replica: follower.replica, connection: connection, stream: Self.stream, attemptTimeout: .milliseconds(200))
            #expect { try writer.writeBlocking([Self.item(7)], requestID: "unanswered", timeout: .milliseconds(700)) } throws: { error in
                guard case JetStreamError.writeOutcomeUnknown(_, "unanswered", _) = error else { return false }
                return true
            }
            let applied = try #require(try primary.read { try $0.appliedRequest("unanswered") }, "the primary applied it")
            #expect(try primary.read { try $0.count(entity: "Item") } == 1)

            // The primary stops without answering; the next one ships the commit and answers.
            shipper = nil
            shipper = try JournalShipper(store: primary, connection: connection, stream: Self.stream, snapshots: nil, acceptWrites: ForwardedWrites())
            nonisolated(unsafe) let (runningShipper, runningFollower) = (shipper!, follower)
            let loops = [LoopThread { try runningShipper.run(while: $0) }, LoopThread { try runningFollower.run(while: $0) }]
            defer { for loop in loops { loop.stop() } }
            #expect(try writer.writeBlocking([Self.item(7)], requestID: "unanswered") == applied.sequence)
            #expect(try primary.read { try $0.count(entity: "Item") } == 1)
            #expect(try primary.read { try $0.journalBounds().last } == applied.sequence)
            let envelopes = try ShipperTests.streamMessages(server).map { try ChangeEnvelope.decode($0.data, streamSequence: $0.streamSequence) }
            #expect(envelopes.flatMap(\.requests).map(\.id) == ["unanswered"], "the stream holds the request once")
        }
    }

    /// A replica promoted while its old primary still accepts writes: both hear each request.
    /// The old one, refused by the stream, answers "not applied" and the writer sends the request
    /// again; every write ends applied once, in the promoted store and on the other replica.
    @Test func writesDuringATakeoverEndAppliedOnce() async throws {
        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir)
            let connection = JetStreamConnection(url: server.url)
            let old = try ShipperTests.openStore(dir + "/old")
            defer { old.close() }
            let oldShipper = try JournalShipper(store: old, connection: connection, stream: Self.stream, snapshots: nil, acceptWrites: ForwardedWrites())
            let oldRunning = Locked(true), running = Locked(true), oldOutcome = Locked<(any Error)?>(nil)
            nonisolated(unsafe) let runningOld = oldShipper
            let oldShipping = Thread {
                do { try runningOld.run(while: { oldRunning.current }) } catch { oldOutcome.withLock { $0 = error } }
            }
            oldShipping.start()
            let standby = try ReplicaFollower(path: dir + "/standby", connection: connection, stream: Self.stream)
            let other = try ReplicaFollower(path: dir + "/other", connection: connection, stream: Self.stream)
            defer { other.replica.close() }
            nonisolated(unsafe) let (runningStandby, runningOther) = (standby, other)
            let standbyRunning = Locked(true)
            let followers = [Thread { try? runningStandby.run(while: { standbyRunning.current }) }, Thread { try? runningOther.run(while: { running.current }) }]
            for thread in followers { thread.start() }
            let writer = try ReplicaWriter(replica: other.replica, connection: connection, stream: Self.stream, attemptTimeout: .milliseconds(300))
            for k in 0..<20 { try writer.writeBlocking([Self.item(Int64(k))], requestID: "w\(k)") }

            // Writes go on from 16 threads while the standby is promoted and the old primary runs.
            // Each thread writes at least 20, and goes on until the promotion is done, so the old
            // primary hears requests after it and must be refused.
            let failures = Locked<[String]>([]), done = Locked(0), written = Locked(20), promotedYet = Locked(false)
            let writing = Thread {
                Self.onThreads(16) { w in
                    var n = 0
                    while n < 20 || (!promotedYet.current && n < 1_000) {
                        let k = 1_000 + w * 1_000 + n
                        do { try writer.writeBlocking([Self.item(Int64(k))], requestID: "w\(k)", timeout: .seconds(20)) } catch {
                            failures.withLock { $0.append("w\(k): \(error)") }
                        }
                        written.withLock { $0 += 1 }
                        n += 1
                    }
                }
                done.withLock { $0 = 1 }
            }
            writing.start()
            Thread.sleep(forTimeInterval: 0.05)
            standbyRunning.withLock { $0 = false }
            while followers[0].isExecuting { Thread.sleep(forTimeInterval: 0.01) }
            let promoted = try standby.promote(durability: .none)
            defer { promoted.close() }
            promotedYet.withLock { $0 = true }
            let newShipper = try JournalShipper(store: promoted, connection: connection, stream: Self.stream, snapshots: nil, acceptWrites: ForwardedWrites())
            nonisolated(unsafe) let runningNew = newShipper
            let newShipping = Thread { try? runningNew.run(while: { running.current }) }
            newShipping.start()
            defer {
                running.withLock { $0 = false }
                oldRunning.withLock { $0 = false }
                while newShipping.isExecuting || followers[1].isExecuting || oldShipping.isExecuting { Thread.sleep(forTimeInterval: 0.01) }
            }
            let deadline = Date().addingTimeInterval(60)
            while done.current == 0, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
            #expect(done.current == 1 && failures.current.isEmpty, "\(failures.current.prefix(3))")

            // The old primary was refused; the stream holds each request once; both stores agree.
            oldRunning.withLock { $0 = false }
            while oldShipping.isExecuting { Thread.sleep(forTimeInterval: 0.01) }
            guard case JetStreamError.supersededByPromotion? = oldOutcome.current else {
                Issue.record("the old primary was not refused: \(String(describing: oldOutcome.current))")
                return
            }
            let requests = try ShipperTests.streamMessages(server).flatMap { try ChangeEnvelope.decode($0.data, streamSequence: $0.streamSequence).requests.map(\.id) }
            #expect(requests.count == written.current && Set(requests).count == requests.count, "\(requests.count) requests in the stream, \(written.current) written")
            #expect(try promoted.read { try $0.count(entity: "Item") } == written.current)
            let last = try promoted.read { try $0.journalBounds().last }
            while (other.state?.originSequence ?? 0) < last, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
            #expect(try other.replica.read { try $0.count(entity: "Item") } == written.current)
        }
    }

    /// A primary applies a request and is replaced before it ships that commit, so it never
    /// answers: the writer sends the request again, the promoted store (which has made a commit
    /// of its own at that sequence) applies it once, and the call returns that commit.
    @Test func anAnswerWhoseCommitNeverShipsIsSentAgain() throws {
        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir)
            let connection = JetStreamConnection(url: server.url)
            let old = try ShipperTests.openStore(dir + "/old")
            defer { old.close() }
            // The old primary answers requests but, never run, ships only what it is told to.
            let oldShipper = try JournalShipper(store: old, connection: connection, stream: Self.stream, snapshots: nil, acceptWrites: ForwardedWrites())
            try old.write { tx in for k in 0..<5 { try tx.apply(Self.item(Int64(k))) } }
            try oldShipper.shipAvailable()
            let shipped = oldShipper.shippedSequence
            let standby = try ReplicaFollower(path: dir + "/standby", connection: connection, stream: Self.stream)
            try standby.run(untilOriginSequence: shipped)
            let other = try ReplicaFollower(path: dir + "/other", connection: connection, stream: Self.stream)
            defer { other.replica.close() }
            nonisolated(unsafe) let runningOther = other
            let following = LoopThread { try runningOther.run(while: $0) }
            defer { following.stop() }
            let writer = try ReplicaWriter(replica: other.replica, connection: connection, stream: Self.stream, attemptTimeout: .milliseconds(300))
            let outcome = Locked<Result<UInt64, any Error>?>(nil)
            let writing = Thread { outcome.withLock { $0 = Result { try writer.writeBlocking([Self.item(100)], requestID: "lost", timeout: .seconds(20)) } } }
            writing.start()

            // Once the old primary has applied the request, the standby takes over and commits
            // a write of its own at the request's sequence.
            let deadline = Date().addingTimeInterval(10)
            while try old.read({ try $0.appliedRequest("lost") }) == nil, Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
            let answered = try #require(try old.read { try $0.appliedRequest("lost") }, "the old primary applied the request")
            #expect(answered.sequence == shipped + 1)
            let promoted = try standby.promote(durability: .none)
            defer { promoted.close() }
            try promoted.write { try $0.apply(Self.item(200)) }
            let newShipper = try JournalShipper(store: promoted, connection: connection, stream: Self.stream, snapshots: nil, acceptWrites: ForwardedWrites())
            nonisolated(unsafe) let runningNew = newShipper
            let newShipping = LoopThread { try runningNew.run(while: $0) }
            defer { newShipping.stop() }
            while outcome.current == nil, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }

            #expect(newShipping.error == nil && following.error == nil, "\(String(describing: newShipping.error)) \(String(describing: following.error))")
            let sequence = try #require(try outcome.current?.get(), "the call returned")
            let applied = try #require(try promoted.read { try $0.appliedRequest("lost") }, "the new primary applied the request")
            #expect(sequence == applied.sequence && sequence > shipped + 1, "the call returns the new primary's commit, not the one first answered")
            #expect(try other.replica.read { try $0.count(entity: "Item") } == 7, "the replica holds the five, the standby's own and the request's record")
            let requests = try ShipperTests.streamMessages(server).flatMap { try ChangeEnvelope.decode($0.data, streamSequence: $0.streamSequence).requests.map(\.id) }
            #expect(requests == ["lost"], "the stream holds the request once")
        }
    }

    /// The NATS permissions the replication article shows, as printed: the primary ships, takes
    /// snapshots and answers requests; a replica's user starts a replica from a snapshot, follows
    /// and sends write requests, but cannot publish to the stream or purge it.
    @Test func theDocumentedPermissionsLetReplicasRequestWritesButNotPublish() async throws {
        try withTemporaryDirectory { dir in
            let article = try String(contentsOfFile: "Sources/Feedstore/Feedstore.docc/Replication.md", encoding: .utf8)
            let start = try #require(article.range(of: "authorization {"))
            let end = try #require(article.range(of: "\n}\n", range: start.upperBound..<article.endIndex))
            let configuration = String(article[start.lowerBound..<end.upperBound])
            try configuration.write(toFile: dir + "/auth.conf", atomically: true, encoding: .utf8)
            // The server reads the passwords from its environment, as the article's variables say.
            setenv("PRIMARY_PASSWORD", "primary-secret", 1)
            setenv("REPLICA_PASSWORD", "replica-secret", 1)
            let server = try NATSServer(directory: dir, arguments: ["-c", dir + "/auth.conf"])
            var primaryConnection = JetStreamConnection(url: server.url)
            (primaryConnection.user, primaryConnection.password) = ("primary", "primary-secret")
            var replicaConnection = JetStreamConnection(url: server.url)
            (replicaConnection.user, replicaConnection.password) = ("replica", "replica-secret")
            replicaConnection.timeout = .seconds(1)

            let primary = try ShipperTests.openStore(dir + "/primary")
            defer { primary.close() }
            try primary.write { tx in try tx.put(Item(id: 1, group: 1, score: 1, name: "before shipping", flag: true, tag: nil)) }
            // With snapshots (the default): the first is stored when shipping starts.
            let shipper = try JournalShipper(store: primary, connection: primaryConnection, stream: "FEED", acceptWrites: ForwardedWrites())
            nonisolated(unsafe) let runningShipper = shipper
            let shipping = LoopThread { try runningShipper.run(while: $0) }
            defer { shipping.stop() }
            var follower: ReplicaFollower?
            let deadline = Date().addingTimeInterval(20)
            while follower == nil, Date() < deadline {
                do { follower = try ReplicaFollower(path: dir + "/replica", connection: replicaConnection, stream: "FEED") } catch JetStreamError.noSnapshot {
                    Thread.sleep(forTimeInterval: 0.05)
                }
            }
            let replica = try #require(follower, "the replica's user restores the snapshot")
            defer { replica.replica.close() }
            nonisolated(unsafe) let runningFollower = replica
            let following = LoopThread { try runningFollower.run(while: $0) }
            defer {
                let error = following.stop()
                #expect(error == nil, "\(String(describing: error))")
            }
            let writer = try ReplicaWriter(replica: replica.replica, connection: replicaConnection, stream: "FEED")
            try writer.writeBlocking([Self.item(2)])
            #expect(try replica.replica.read { try $0.count(entity: "Item") } == 2)

            // Publishing to the stream's subject is denied: the stream holds nothing of it.
            let before = try primaryConnection.lastSequence(ofStream: "FEED")
            let asReplica = try NATSConnection(replicaConnection)
            #expect(throws: JetStreamError.self) {
                _ = try asReplica.publish(subject: shipper.subject, data: Array("{}".utf8), headers: ["Nats-Msg-Id": "forged"])
            }
            #expect(throws: JetStreamError.self) { try asReplica.purge("FEED", before: before) }
            Thread.sleep(forTimeInterval: 0.2)
            #expect(try primaryConnection.lastSequence(ofStream: "FEED") == before)
        }
    }
}
