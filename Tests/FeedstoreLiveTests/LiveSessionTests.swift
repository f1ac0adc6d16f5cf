import Feedstore
import FeedstoreDemo
@testable import FeedstoreLive
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// A session driven by frames as a client sends them: every query shape's mirror, built from the
/// JSON frames alone, equals the store's rows after a writer's commits.
@Suite(.ownThreads) struct LiveSessionTests {
    /// The next frame, parsed (`welcome` frames skipped unless asked for); fails the test after
    /// 60 s without one (a guard, not a timing).
    static func next(_ session: some LiveEndpoint, welcome: Bool = false) async throws -> [String: FieldValue] {
        while true {
            let text = try await withThrowingTaskGroup(of: String?.self) { group in
                group.addTask { await session.nextFrame() }
                group.addTask {
                    try await Task.sleep(for: .seconds(60))
                    return nil
                }
                let first = try await group.next() ?? nil
                group.cancelAll()
                return first
            }
            guard let text else { throw JSONMirror.Violation(description: "no frame in 60 s") }
            guard case let .object(frame) = try FieldValue(jsonText: text) else { throw JSONMirror.Violation(description: "not an object: \(text)") }
            if welcome || frame["type"] != "welcome" { return frame }
        }
    }

    /// Runs `body` with `session`, and closes it whatever happens: a session's watchers must
    /// stop before their store closes.
    static func withSession<R>(_ session: LiveSession, _ body: (LiveSession) async throws -> R) async throws -> R {
        do {
            let result = try await body(session)
            await session.close()
            return result
        } catch {
            await session.close()
            throw error
        }
    }

    /// The rows a query shows, as the store holds them: the window of the full order, sectioned.
    static func expected(_ store: Store, _ query: LiveQuery) throws -> [JSONMirror.Section] {
        let range = IndexRange(prefix: query.prefix, from: query.from.map { .inclusive($0) }, to: query.to.map { .inclusive($0) })
        let entries = try store.read {
            try $0.entries(entity: query.entity, index: query.index, range: range, reverse: query.reverse, offset: query.offset, limit: query.limit)
        }
        // As a client reads them: through JSON text (dates as ISO 8601 strings, integers as
        // JSON numbers).
        func json(_ value: FieldValue) throws -> FieldValue { try FieldValue(jsonText: value.jsonText) }
        var sections: [JSONMirror.Section] = []
        for entry in entries {
            guard case let .array(key) = try json(.array(Array(entry.key.prefix(query.sectionBy)))),
                  case let .object(record) = try json(.object(entry.record)) else { continue }
            if sections.last?.key != key { sections.append(JSONMirror.Section(key: key, rows: [])) }
            sections[sections.count - 1].rows.append(record)
        }
        return sections
    }

    /// Takes frames into `mirror` until it equals the store (filling indexes-mode rows), or fails.
    static func catchUp(_ session: some LiveEndpoint, _ mirror: inout JSONMirror, id: String, _ store: Store, _ query: LiveQuery) async throws {
        var mirrors = [id: (mirror: mirror, query: query)]
        try await LiveServerTests.catchUp(session, &mirrors, store)
        mirror = mirrors[id]!.mirror
    }

    /// The sections with each row cut to the fields a field-filtered subscription shows (and
    /// its id): updates to other fields are not sent, by design.
    static func project(_ sections: [JSONMirror.Section], _ fields: [String]?) -> [JSONMirror.Section] {
        guard let fields else { return sections }
        let shown = Set(fields + ["id"])
        return sections.map { JSONMirror.Section(key: $0.key, rows: $0.rows.map { $0?.filter { shown.contains($0.key) } }) }
    }

    /// One commit of `count` seeded changes, from a blocking write.
    static func mutate(_ store: Store, _ feed: inout DemoFeed, count: Int) throws {
        var copy = feed
        try store.write { tx in _ = try copy.mutate(tx, count: count, contacts: 5) }
        feed = copy
    }

    static let shapes: [(name: String, frame: String, query: LiveQuery)] = [
        ("window of a folder, sectioned", #""index":"byFolderDate","sectionBy":1,"offset":3,"limit":25"#,
         LiveQuery(entity: "Message", index: "byFolderDate", sectionBy: 1, offset: 3, limit: 25)),
        ("one folder, reversed", #""index":"byFolderDate","prefix":[1],"reverse":true,"limit":500"#,
         LiveQuery(entity: "Message", index: "byFolderDate", prefix: [.int(1)], reverse: true, limit: 500)),
        ("partial index, window", #""index":"unreadByDate","offset":2,"limit":10"#,
         LiveQuery(entity: "Message", index: "unreadByDate", offset: 2, limit: 10)),
        ("a contact's messages, titles only", #""index":"byContact","prefix":[2],"fields":["title"],"limit":500"#,
         LiveQuery(entity: "Message", index: "byContact", prefix: [.uint(2)], limit: 500, fields: ["title"])),
        ("indexes mode, sectioned, whole index", #""index":"byFolderDate","sectionBy":1,"mode":"indexes""#,
         LiveQuery(entity: "Message", index: "byFolderDate", sectionBy: 1, mode: .indexes)),
        ("indexes mode, window", #""index":"byFolderDate","offset":10,"limit":40,"mode":"indexes""#,
         LiveQuery(entity: "Message", index: "byFolderDate", offset: 10, limit: 40, mode: .indexes)),
    ]

    @Test(arguments: shapes.indices)
    func everyShapesMirrorEqualsTheStoreAfterAWriter(shape: Int) async throws {
        let (name, frame, query) = Self.shapes[shape]
        let seed = UInt64(500 + shape)
        try await withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Message.self, Contact.self])
            defer { store.close() }
            var feed = DemoFeed(seed: seed)
            try feed.populate(store, messages: 300, contacts: 5)
            let session = LiveSession(store: store)
            try await Self.withSession(session) { session in
                await session.receive(#"{"type":"subscribe","id":"s","entity":"Message",\#(frame)}"#)
                var mirror = JSONMirror()
                try await Self.catchUp(session, &mirror, id: "s", store, query)
                for commit in 0..<30 {
                    try Self.mutate(store, &feed, count: 1 + commit % 4)
                    if commit % 10 == 9 { try await Self.catchUp(session, &mirror, id: "s", store, query) }
                }
                try await Self.catchUp(session, &mirror, id: "s", store, query)
                #expect(mirror.batches >= 2, "\(name), seed \(seed)")
            }
            #expect(await session.nextFrame() == nil)
        }
    }

    /// A store error reaches the client as a code and a message written for clients: the
    /// error's own text, which names the store's path, stays in the server's log.
    @Test func aStoreErrorTellsTheClientACodeAndNoPath() async throws {
        try await withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Message.self, Contact.self])
            store.close()
            let session = LiveSession(store: store)
            try await Self.withSession(session) { session in
                await session.receive(#"{"type":"subscribe","id":"s","entity":"Message","index":"byFolderDate","limit":10}"#)
                let frame = try await Self.next(session)
                #expect(frame["type"] == "error" && frame["code"] == "storeFailed" && frame["id"] == "s")
                #expect(!FieldValue.object(frame).jsonText.contains(dir), "\(FieldValue.object(frame).jsonText)")
            }
        }
    }

    /// A client that reads nothing while a writer commits gets, when it reads again, one batch
    /// spanning the commits it missed (never part of one), not a frame per commit: nothing
    /// queues in the session meanwhile.
    @Test func aSlowReaderGetsOneCoalescedBatch() async throws {
        try await withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Message.self, Contact.self])
            defer { store.close() }
            var feed = DemoFeed(seed: 9)
            try feed.populate(store, messages: 200, contacts: 5)
            let query = LiveQuery(entity: "Message", index: "byFolderDate", sectionBy: 1, limit: 400)
            try await Self.withSession(LiveSession(store: store)) { session in
                await session.receive(#"{"type":"subscribe","id":"s","entity":"Message","index":"byFolderDate","sectionBy":1,"limit":400}"#)
                var mirror = JSONMirror()
                try mirror.apply(try await Self.next(session))
                let before = try await store.read { try $0.journalBounds().last }
                for _ in 0..<100 { try Self.mutate(store, &feed, count: 2) }
                let head = try await store.read { try $0.journalBounds().last }
                // The pump may have taken one batch before the writer's later commits; the next
                // one spans all the rest.
                var frames = 0
                while mirror.toSequence < head {
                    let frame = try await Self.next(session)
                    if case let .uint(from) = frame["fromSequence"] ?? .null { #expect(from >= before) }
                    try mirror.apply(frame)
                    frames += 1
                }
                #expect(frames <= 3, "\(frames) batches for 100 commits read late")
                #expect(mirror.toSequence == head)
                #expect(Self.project(mirror.sections, nil) == (try Self.expected(store, query)))
            }
        }
    }
}
