import Feedstore
import FeedstoreDemo
import FeedstoreHummingbird
@testable import FeedstoreLive
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Live queries over real WebSocket connections on loopback: a Hummingbird server, clients
/// that connect, drop and resume, and a writer in another process (`storectl demo mutate`).
@Suite(.ownThreads) struct LiveServerTests {
    /// Every subscription of `mirrors` takes frames from `client` until it equals the store
    /// (indexes-mode ones asking for their missing rows, one request at a time).
    static func catchUp(_ client: some LiveEndpoint, _ mirrors: inout [String: (mirror: JSONMirror, query: LiveQuery)], _ store: Store) async throws {
        var pending = Set(mirrors.keys)
        var asked = Set<String>()
        // What each query shows, read again only when the store has a new commit.
        var wanted: [String: (head: UInt64, sections: [JSONMirror.Section])] = [:]
        var frames = 0
        while true {
            let head = try await store.read { try $0.journalBounds().last }
            for id in pending.sorted() {
                let (mirror, query) = mirrors[id]!
                if wanted[id]?.head != head { wanted[id] = (head, try LiveSessionTests.expected(store, query)) }
                let want = wanted[id]!.sections
                if query.mode == .indexes, mirror.sections.map(\.rows.count) == want.map(\.rows.count), mirror.rows.contains(where: { $0 == nil }) {
                    if !asked.contains(id) {
                        asked.insert(id)
                        await client.receive(mirror.rowsRequest(id: id))
                    }
                    continue
                }
                if LiveSessionTests.project(mirror.sections, query.fields) == LiveSessionTests.project(want, query.fields) { pending.remove(id) }
            }
            if pending.isEmpty { return }
            let frame = try await LiveSessionTests.next(client)
            guard case let .string(id) = frame["id"], mirrors[id] != nil else {
                throw JSONMirror.Violation(description: "a frame for no subscription: \(FieldValue.object(frame).jsonText.prefix(300))")
            }
            switch frame["type"] {
            case .string("batch"): try mirrors[id]!.mirror.apply(frame)
            case .string("rows"):
                try mirrors[id]!.mirror.fill(frame)
                asked.remove(id)
            default: throw JSONMirror.Violation(description: "unexpected \(FieldValue.object(frame).jsonText.prefix(300))")
            }
            pending.insert(id)
            frames += 1
            if frames > 20_000 { throw JSONMirror.Violation(description: "the mirrors never caught up; pending \(pending.sorted())") }
        }
    }

    /// A seeded writer in another process, to completion.
    static func mutate(_ path: String, commits: Int, seed: UInt64) throws {
        let run = try runTool(storectlURL, ["demo", "mutate", path, "--commits", String(commits), "--per-commit", "3", "--seed", String(seed), "--quiet"])
        try #require(run.status == 0, "storectl demo mutate: \(run.stderr)")
    }

    /// A demo store of 400 messages, served at a fresh server, for `body`.
    static func withServer(seed: UInt64, gracePeriod: Duration = .seconds(60), options: LiveSocketOptions = LiveSocketOptions(),
                           limits: LiveLimits = LiveLimits(),
                           _ body: (String, Store, LiveService<Int>, LiveTestServer) async throws -> Void) async throws
    {
        try await withTemporaryDirectory { dir in
            let path = dir + "/s"
            var feed = DemoFeed(seed: seed)
            let store = try populatedDemoStore(at: path, feed: &feed, messages: 400, contacts: 5)
            defer { store.close() }
            let service = LiveService<Int>(store: store, limits: limits, gracePeriod: gracePeriod) { user, query in
                // User 0 may watch anything; others only their own contact's messages.
                user == 0 || (query.index == "byContact" && query.prefix == [.uint(UInt64(user))])
            }
            let server = try await LiveTestServer.start(service, options: options)
            do {
                try await body(path, store, service, server)
            } catch {
                await server.stop()
                await service.close()
                throw error
            }
            await server.stop()
            await service.close()
        }
    }

    static func subscribeAll(_ client: LiveSocketClient) async -> [String: (mirror: JSONMirror, query: LiveQuery)] {
        var mirrors: [String: (mirror: JSONMirror, query: LiveQuery)] = [:]
        for (index, shape) in LiveSessionTests.shapes.enumerated() {
            await client.receive(#"{"type":"subscribe","id":"s\#(index)","entity":"Message",\#(shape.frame)}"#)
            mirrors["s\(index)"] = (JSONMirror(), shape.query)
        }
        return mirrors
    }

    @Test func everyShapeOverAWebSocketEqualsTheStoreAfterAWriterInAnotherProcess() async throws {
        try await Self.withServer(seed: 71) { path, store, _, server in
            let client = LiveSocketClient(url: server.url, token: "0")
            var mirrors = await Self.subscribeAll(client)
            try await Self.catchUp(client, &mirrors, store)
            try Self.mutate(path, commits: 30, seed: 71)
            try await Self.catchUp(client, &mirrors, store)
            // Window moves: the windowed shapes move, and follow the writer from there.
            for id in ["s0", "s2", "s5"] {
                await client.receive(#"{"type":"setWindow","id":"\#(id)","offset":7,"limit":30}"#)
                mirrors[id]!.query.offset = 7
                mirrors[id]!.query.limit = 30
            }
            try Self.mutate(path, commits: 20, seed: 72)
            try await Self.catchUp(client, &mirrors, store)
            #expect(mirrors.values.allSatisfy { $0.mirror.batches >= 2 })
            await client.drop()
        }
    }

    /// A connection lost while a writer commits, resumed on a new one within the grace
    /// period: each subscription goes on from what it applied (no reset), and is exact.
    @Test func aDroppedConnectionResumesIncrementallyOverTheNetwork() async throws {
        try await Self.withServer(seed: 72) { path, store, service, server in
            let first = LiveSocketClient(url: server.url, token: "0")
            let welcome = try await LiveSessionTests.next(first, welcome: true)
            guard case let .string(token) = welcome["session"] else { throw ConditionFailed(description: "no session token") }
            var mirrors = await Self.subscribeAll(first)
            try await Self.catchUp(first, &mirrors, store)
            await first.drop()
            try await waitUntil("the server keeps the dropped session") { await service.keptSessionCount == 1 }
            try Self.mutate(path, commits: 30, seed: 73)

            let second = LiveSocketClient(url: server.url, token: "0")
            await second.receive(Self.resume(token, mirrors))
            var resumed = false
            while !resumed {
                let frame = try await LiveSessionTests.next(second, welcome: true)
                resumed = frame["type"] == "welcome" && frame["resumed"] == true
            }
            let before = mirrors.mapValues(\.mirror.batches)
            try await Self.catchUp(second, &mirrors, store)
            #expect(mirrors.allSatisfy { $0.value.mirror.resets == 0 }, "every subscription went on from the client's copy")
            #expect(mirrors.allSatisfy { $0.value.mirror.batches - before[$0.key]! <= 3 }, "coalesced: \(mirrors.mapValues(\.mirror.batches)) from \(before)")
            await second.drop()
        }
    }

    /// After a server restart nothing is kept: the client's resume gets `resumed: false` and
    /// every subscription a reset, and its copies are exact again.
    @Test func afterARestartEverySubscriptionResets() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/s"
            var feed = DemoFeed(seed: 74)
            let store = try populatedDemoStore(at: path, feed: &feed, messages: 300, contacts: 5)
            defer { store.close() }
            var service = LiveService<Int>(store: store)
            var server = try await LiveTestServer.start(service)
            let first = LiveSocketClient(url: server.url, token: "0")
            guard case let .string(token) = try await LiveSessionTests.next(first, welcome: true)["session"] else { throw ConditionFailed(description: "no token") }
            var mirrors = await Self.subscribeAll(first)
            try await Self.catchUp(first, &mirrors, store)
            await server.stop()
            await service.close()
            try Self.mutate(path, commits: 20, seed: 75)

            service = LiveService<Int>(store: store)
            server = try await LiveTestServer.start(service)
            let second = LiveSocketClient(url: server.url, token: "0")
            await second.receive(Self.resume(token, mirrors))
            var welcomes: [FieldValue?] = []
            while welcomes.count < 2 { welcomes.append(try await LiveSessionTests.next(second, welcome: true)["resumed"]) }
            #expect(welcomes == [false, false])
            var resets = Set<String>()
            while resets.count < mirrors.count {
                let frame = try await LiveSessionTests.next(second)
                guard case let .string(id) = frame["id"], frame["type"] == "batch" else { continue }
                #expect(frame["reset"] == true)
                resets.insert(id)
                try mirrors[id]!.mirror.apply(frame)
            }
            try await Self.catchUp(second, &mirrors, store)
            await second.drop()
            await server.stop()
            await service.close()
        }
    }

    /// No bearer token, or a page of another origin: the connection closes with 4401 or 4403
    /// before any frame, while the server's own page is admitted. A principal's
    /// query outside what it may watch: an error frame, and no row of anyone else's.
    @Test func onlyWhatThePrincipalMayWatchIsSent() async throws {
        try await Self.withServer(seed: 76) { path, store, _, server in
            // Read on a bare socket: the first frame is the close frame.
            let port = server.port
            let anonymous = try await onOwnThread { try RawWebSocket(port: port, path: "/live", token: nil).closeFrame() }
            #expect(anonymous?.code == 4401 && anonymous?.reason.hasPrefix("unauthorized") == true, "\(String(describing: anonymous))")
            // A page of another origin, with a good token: closed as well, before any frame.
            let otherSite = try await onOwnThread { try RawWebSocket(port: port, path: "/live", token: "0", origin: "https://evil.example").closeFrame() }
            #expect(otherSite?.code == 4403, "\(String(describing: otherSite))")
            let ownPage = LiveSocketClient(url: server.url, token: "0", origin: "http://127.0.0.1:\(server.port)")
            #expect(try await LiveSessionTests.next(ownPage, welcome: true)["type"] == "welcome")
            await ownPage.drop()

            let user = LiveSocketClient(url: server.url, token: "3")
            await user.receive(#"{"type":"subscribe","id":"all","entity":"Message","index":"byFolderDate","limit":50}"#)
            let refused = try await LiveSessionTests.next(user)
            #expect(refused["type"] == "error" && refused["code"] == "refused" && refused["id"] == "all")
            await user.receive(#"{"type":"subscribe","id":"other","entity":"Message","index":"byContact","prefix":[2],"limit":50}"#)
            #expect(try await LiveSessionTests.next(user)["code"] == "refused")
            await user.receive(#"{"type":"subscribe","id":"mine","entity":"Message","index":"byContact","prefix":[3],"limit":500}"#)
            var mirrors: [String: (mirror: JSONMirror, query: LiveQuery)] = [
                "mine": (JSONMirror(), LiveQuery(entity: "Message", index: "byContact", prefix: [.uint(3)], limit: 500)),
            ]
            try await Self.catchUp(user, &mirrors, store)
            try Self.mutate(path, commits: 20, seed: 77)
            try await Self.catchUp(user, &mirrors, store)
            #expect(mirrors["mine"]!.mirror.rows.allSatisfy { $0?["contactId"] == .int(3) })
            await user.drop()
        }
    }

    /// A client that stops reading: its frames fill the connection, a write waits past the
    /// timeout, and the server lets the connection go (the socket closes, the session is kept
    /// for a resume), while another client keeps getting its batches meanwhile.
    @Test func aClientThatStopsReadingIsLetGoAndOthersGoOn() async throws {
        let limits = LiveLimits(windowMovesPerSecond: 1_000_000)
        try await Self.withServer(seed: 78, options: LiveSocketOptions(writeTimeout: .milliseconds(300)), limits: limits) { path, store, service, server in
            let reader = LiveSocketClient(url: server.url, token: "0")
            await reader.receive(#"{"type":"subscribe","id":"s0","entity":"Message",\#(LiveSessionTests.shapes[0].frame)}"#)
            var mirrors: [String: (mirror: JSONMirror, query: LiveQuery)] = ["s0": (JSONMirror(), LiveSessionTests.shapes[0].query)]
            try await Self.catchUp(reader, &mirrors, store)

            let stuck = try RawWebSocket(port: server.port, path: "/live", token: "0")
            try stuck.send(#"{"type":"subscribe","id":"w","entity":"Message","index":"byFolderDate","limit":400}"#)
            // Windows that share no row, back and forth: each batch carries 800 records, until
            // the connection holds all it can and the server stops writing to it.
            var moves = 0
            while await service.keptSessionCount == 0 {
                do {
                    try stuck.send(#"{"type":"setWindow","id":"w","offset":\#(moves % 2 == 0 ? 0 : 400),"limit":400}"#)
                } catch {
                    break // the server closed the connection
                }
                moves += 1
                if moves % 50 == 0 { try await Task.sleep(for: .milliseconds(1)) }
                try #require(moves < 200_000, "the server never let the client go")
            }
            try await waitUntil("the server keeps the session of the client it let go") { await service.keptSessionCount == 1 }
            try await waitUntil("the server closes its end of the socket") {
                try stuck.serverSideState(serverPort: server.port).map { $0 != "01" } ?? true
            }
            // The other client was served all along, and still is.
            try Self.mutate(path, commits: 10, seed: 78)
            try await Self.catchUp(reader, &mirrors, store)
            await reader.drop()
        }
    }

    static func resume(_ token: String, _ mirrors: [String: (mirror: JSONMirror, query: LiveQuery)]) -> String {
        let entries = mirrors.sorted { $0.key < $1.key }.map { id, entry in
            let shape = LiveSessionTests.shapes[Int(id.dropFirst())!].frame
            // The window the client shows now, which may have moved since it subscribed.
            var members = shape
            if let limit = entry.query.limit, members.contains(#""limit""#) {
                members = members.replacingOccurrences(of: #"("offset":\d+,)?"limit":\d+"#, with: #""offset":\#(entry.query.offset),"limit":\#(limit)"#,
                                                       options: .regularExpression)
            }
            return #"{"id":"\#(id)","entity":"Message",\#(members),"applied":\#(entry.mirror.toSequence)}"#
        }
        return #"{"type":"resume","session":"\#(token)","subscriptions":[\#(entries.joined(separator: ","))]}"#
    }
}
