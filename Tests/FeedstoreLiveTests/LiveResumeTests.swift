import Feedstore
import FeedstoreDemo
@testable import FeedstoreLive
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Resuming a dropped connection: incremental when the client has exactly what was sent, a
/// `reset` otherwise (a batch lost in flight, an ambiguous window move, the grace period over,
/// a restarted server, another principal); the mirror is exact either way.
@Suite(.ownThreads) struct LiveResumeTests {
    static let sectioned = LiveQuery(entity: "Message", index: "byFolderDate", sectionBy: 1, offset: 3, limit: 25)
    static let sectionedFrame = #""entity":"Message","index":"byFolderDate","sectionBy":1,"offset":3,"limit":25"#
    static let indexes = LiveQuery(entity: "Message", index: "byFolderDate", sectionBy: 1, mode: .indexes)
    static let indexesFrame = #""entity":"Message","index":"byFolderDate","sectionBy":1,"mode":"indexes""#

    /// A store with 300 demo messages, for `body`.
    static func withStore(seed: UInt64, _ body: (Store, inout DemoFeed) async throws -> Void) async throws {
        try await withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Message.self, Contact.self])
            defer { store.close() }
            var feed = DemoFeed(seed: seed)
            try feed.populate(store, messages: 300, contacts: 5)
            try await body(store, &feed)
        }
    }

    /// The welcome frame's token, which must be the connection's first frame.
    static func welcome(_ connection: LiveConnection) async throws -> (token: String, resumed: Bool) {
        let frame = try await LiveSessionTests.next(connection, welcome: true)
        guard frame["type"] == "welcome", frame["v"] == .int(1), case let .string(token) = frame["session"],
              case let .bool(resumed) = frame["resumed"]
        else { throw JSONMirror.Violation(description: "not a welcome: \(FieldValue.object(frame).jsonText)") }
        return (token, resumed)
    }

    static func resumeFrame(_ token: String, _ members: String, applied: UInt64?) -> String {
        #"{"type":"resume","session":"\#(token)","subscriptions":[{"id":"s",\#(members),"applied":\#(applied.map(String.init) ?? "null")}]}"#
    }

    @Test(arguments: [false, true])
    func aDroppedConnectionResumesIncrementally(indexesMode: Bool) async throws {
        let (query, members) = indexesMode ? (Self.indexes, Self.indexesFrame) : (Self.sectioned, Self.sectionedFrame)
        try await Self.withStore(seed: 61) { store, feed in
            let service = LiveService<Int>(store: store)
            let first = await service.connect(7)
            let (token, resumed) = try await Self.welcome(first)
            #expect(!resumed)
            await first.receive(#"{"type":"subscribe","id":"s",\#(members)}"#)
            var mirror = JSONMirror()
            try await LiveSessionTests.catchUp(first, &mirror, id: "s", store, query)
            for _ in 0..<5 { try LiveSessionTests.mutate(store, &feed, count: 2) }
            try await LiveSessionTests.catchUp(first, &mirror, id: "s", store, query)
            await first.close()
            #expect(await service.keptSessionCount == 1)

            // Commits while the client is away coalesce in the kept session's watcher.
            for _ in 0..<20 { try LiveSessionTests.mutate(store, &feed, count: 3) }
            let second = await service.connect(7)
            #expect(try await Self.welcome(second).token != token)
            await second.receive(Self.resumeFrame(token, members, applied: mirror.toSequence))
            let again = try await Self.welcome(second)
            #expect(again.token == token && again.resumed)
            #expect(await second.sessionToken == token)
            let batch = try await LiveSessionTests.next(second)
            #expect(batch["type"] == "batch" && batch["reset"] == false && batch["initial"] == false)
            // It goes on from what the client applied (or from a later commit that changed nothing
            // the query shows, which the watcher passed without a batch).
            if case let .int(from) = batch["fromSequence"] { #expect(UInt64(from) >= mirror.toSequence) } else { Issue.record("no fromSequence") }
            let before = mirror.batches
            try mirror.apply(batch)
            try await LiveSessionTests.catchUp(second, &mirror, id: "s", store, query)
            #expect(mirror.batches - before <= 2, "what was missed comes coalesced, not a batch per commit")
            #expect(await service.keptSessionCount == 0)

            // And it goes on after the resume.
            for _ in 0..<5 { try LiveSessionTests.mutate(store, &feed, count: 2) }
            try await LiveSessionTests.catchUp(second, &mirror, id: "s", store, query)
            await second.close()
            await service.close()
        }
    }

    /// A batch the server sent that never reached the client (the connection dropped while it
    /// was written), or a window move sent with no commit (two batches with one `toSequence`):
    /// the server cannot know what the client has, so it resets.
    @Test(arguments: [false, true])
    func whatTheServerCannotTellTheClientHasIsAReset(windowMove: Bool) async throws {
        try await Self.withStore(seed: 62) { store, feed in
            let service = LiveService<Int>(store: store)
            let first = await service.connect(7)
            let token = try await Self.welcome(first).token
            await first.receive(#"{"type":"subscribe","id":"s",\#(Self.sectionedFrame)}"#)
            var mirror = JSONMirror()
            try await LiveSessionTests.catchUp(first, &mirror, id: "s", store, Self.sectioned)
            var query = Self.sectioned
            var members = Self.sectionedFrame
            if windowMove {
                await first.receive(#"{"type":"setWindow","id":"s","offset":10,"limit":25}"#)
                try mirror.apply(try await LiveSessionTests.next(first))
                query.offset = 10
                members = members.replacingOccurrences(of: #""offset":3"#, with: #""offset":10"#)
            } else {
                // A message in a new first section shifts every row of the window.
                try await store.write { try $0.insert(scenarioMessage(1_000_000, folder: -1, minute: 0)) }
                _ = try await LiveSessionTests.next(first) // sent, and lost with the connection
            }
            await first.close()
            try LiveSessionTests.mutate(store, &feed, count: 2)

            let second = await service.connect(7)
            _ = try await Self.welcome(second)
            await second.receive(Self.resumeFrame(token, members, applied: mirror.toSequence))
            #expect(try await Self.welcome(second).resumed)
            let batch = try await LiveSessionTests.next(second)
            #expect(batch["reset"] == true && batch["initial"] == true, "\(FieldValue.object(batch).jsonText.prefix(300))")
            try mirror.apply(batch)
            try await LiveSessionTests.catchUp(second, &mirror, id: "s", store, query)
            await second.close()
            await service.close()
        }
    }

    /// After the grace period, after a restart (a new service), or for another principal, the
    /// session is not found: `resumed` is false and each subscription opens with a reset.
    @Test func anUnknownSessionResetsEverySubscription() async throws {
        try await Self.withStore(seed: 63) { store, feed in
            let service = LiveService<Int>(store: store, gracePeriod: .milliseconds(50))
            let first = await service.connect(7)
            let token = try await Self.welcome(first).token
            await first.receive(#"{"type":"subscribe","id":"s",\#(Self.indexesFrame)}"#)
            var mirror = JSONMirror()
            try await LiveSessionTests.catchUp(first, &mirror, id: "s", store, Self.indexes)
            await first.close()

            // Another principal cannot take it, and leaves it kept.
            let stranger = await service.connect(8)
            _ = try await Self.welcome(stranger)
            await stranger.receive(Self.resumeFrame(token, Self.indexesFrame, applied: mirror.toSequence))
            #expect(try await Self.welcome(stranger).resumed == false)
            #expect(try await LiveSessionTests.next(stranger)["reset"] == true)
            await stranger.close()
            #expect(await service.keptSessionCount >= 1)

            // The grace period ends: wait until the service lets the session go.
            try await waitUntil("the kept session expires") { await service.keptSessionCount == 0 }
            try LiveSessionTests.mutate(store, &feed, count: 2)
            for restarted in [false, true] {
                let other = restarted ? LiveService<Int>(store: store) : service
                let next = await other.connect(7)
                _ = try await Self.welcome(next)
                await next.receive(Self.resumeFrame(token, Self.indexesFrame, applied: mirror.toSequence))
                #expect(try await Self.welcome(next).resumed == false)
                var copy = mirror
                let batch = try await LiveSessionTests.next(next)
                #expect(batch["reset"] == true)
                try copy.apply(batch)
                try await LiveSessionTests.catchUp(next, &copy, id: "s", store, Self.indexes)
                await next.close()
                await other.close()
            }
            await service.close()
        }
    }

    /// A connection that never resumed keeps no session without subscriptions, and a service
    /// keeps at most `keptSessions`, closing the oldest first.
    @Test func keptSessionsAreBounded() async throws {
        try await Self.withStore(seed: 64) { store, _ in
            let service = LiveService<Int>(store: store, keptSessions: 3)
            let idle = await service.connect(1)
            await idle.close()
            #expect(await service.keptSessionCount == 0)
            var tokens: [String] = []
            for _ in 0..<5 {
                let connection = await service.connect(1)
                tokens.append(try await Self.welcome(connection).token)
                await connection.receive(#"{"type":"subscribe","id":"s",\#(Self.sectionedFrame)}"#)
                _ = try await LiveSessionTests.next(connection)
                await connection.close()
            }
            #expect(await service.keptSessionCount == 3)
            let late = await service.connect(1)
            _ = try await Self.welcome(late)
            await late.receive(Self.resumeFrame(tokens[0], Self.sectionedFrame, applied: nil))
            #expect(try await Self.welcome(late).resumed == false, "the oldest was closed")
            await late.close()
            await service.close()
            #expect(await service.keptSessionCount == 0)
        }
    }
}
