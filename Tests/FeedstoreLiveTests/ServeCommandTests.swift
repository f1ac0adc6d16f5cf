import Feedstore
import FeedstoreDemo
@testable import FeedstoreLive
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import NATSTestServer
import Testing

/// `storectl serve` as a user runs it: a server process on loopback, a writer in another
/// process, and clients nobody here wrote (Python's `websockets`) as well as ours.
@Suite(.ownThreads) struct ServeCommandTests {
    static let pythonClient = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Interop/websockets_live_client.py").path

    /// `storectl serve PATH --port 0 …`, once it listens, and its port.
    static func serve(_ path: String, _ arguments: [String] = []) throws -> (RunningTool, Int) {
        let server = try RunningTool(storectlURL, ["serve", path, "--port", "0"] + arguments)
        guard server.waitFor("/live\n", timeout: 60), let line = server.lines.first(where: { $0.hasPrefix("serving ") }),
              let port = line.split(separator: ":").last.flatMap({ Int($0.prefix { $0.isNumber }) })
        else {
            server.kill()
            throw ConditionFailed(description: "storectl serve did not start: \(server.finish(timeout: 10))")
        }
        return (server, port)
    }

    static let hostileClient = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Interop/hostile_live_client.py").path

    /// What another site's page, a rebound name, no token, a restricted token probing names
    /// and a frame too large meet, tried by a client not written here (Python's `websockets`
    /// and bare HTTP): each is refused visibly, and nothing outside the grant is named.
    @Test func theEdgesRefuseWhatTheyShouldAndSayWhy() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/s"
            try populatedDemoStore(at: path, seed: 87, messages: 50, contacts: 10).close()
            try Self.tokens.write(toFile: dir + "/tokens.json", atomically: true, encoding: .utf8)
            let allowed = "http://app.example:3000"
            let (server, port) = try Self.serve(path, ["--tokens", dir + "/tokens.json", "--allow-origin", allowed])
            defer { server.interrupt(); _ = server.finish(timeout: 30) }
            // On a thread of its own: the suite's other tests need Swift concurrency's threads.
            let run = try await onOwnThread {
                try runTool(URL(fileURLWithPath: "/usr/bin/env"), ["python3", Self.hostileClient, String(port), allowed, "seven", "all"], timeout: 120)
            }
            try #require(run.status == 0, "hostile client: \(run.stderr.suffix(3000))")
            guard case let .object(report) = try FieldValue(jsonText: String(run.stdout.split(separator: "\n").last ?? "")) else {
                throw ConditionFailed(description: "no report: \(run.stdout)")
            }
            func member(_ name: String, _ key: String) -> FieldValue? {
                if case let .object(members)? = report[name] { members[key] } else { nil }
            }
            #expect(member("anonymous", "code") == .int(4401) && member("wrongToken", "code") == .int(4401))
            #expect(member("anonymous", "reason").map { "\($0)".contains("unauthorized") } == true)
            #expect(member("otherOrigin", "code") == .int(4403), "\(String(describing: report["otherOrigin"]))")
            for admitted in ["allowedOrigin", "ownOrigin", "noOrigin"] {
                #expect(member(admitted, "frame") == .string("welcome"), "\(admitted): \(String(describing: report[admitted]))")
            }
            #expect(member("rebound", "status") == .int(403), "a page whose name points at loopback: \(String(describing: report["rebound"]))")
            #expect(member("plainAnonymous", "status") == .int(401) && member("plainAdmitted", "status") == .int(426))
            #expect(member("scriptAllowed", "allowOrigin") == .string(allowed) && member("scriptAllowed", "status") == .int(200))
            #expect(member("scriptOther", "allowOrigin") == .null && member("scriptOther", "status") == .int(200))
            #expect(member("scriptPreflight", "status") == .int(204) && member("scriptPreflight", "allowOrigin") == .string(allowed))
            guard case let .array(probes)? = report["probes"], probes.count == 6 else {
                throw ConditionFailed(description: "probes: \(String(describing: report["probes"]))")
            }
            // A: an entity that does not exist, B: an index that does not, C: an entity not
            // granted, D: a prefix not granted: each refused alike, naming nothing of the store.
            for (probe, id) in zip(probes.prefix(4), ["a", "b", "c", "d"]) {
                guard case let .object(frame) = probe else { continue }
                #expect(frame["type"] == "error" && frame["code"] == "refused" && frame["id"] == .string(id), "\(probe.jsonText)")
                let text = probe.jsonText
                for secret in ["Contact,", "byFolderDate", "unreadByDate", "its indexes", "the entities are"] {
                    #expect(!text.contains(secret), "probe \(id) names \(secret): \(text)")
                }
            }
            // E: within the grant, a field that does not exist: the entity's fields, which the
            // token's records carry anyway.
            #expect(probes[4].jsonText.contains("unknownField"), "\(probes[4].jsonText)")
            // A frame over the service's limit and within the socket's: an error frame.
            guard case let .object(big) = probes[5] else { return }
            #expect(big["code"] == "limitExceeded", "\(probes[5].jsonText)")
        }
    }

    static let tokens = #"{"all": [{"entity": "*"}], "seven": [{"entity": "Message", "index": "byContact", "prefix": [7]}]}"#

    static func lastSequence(_ path: String) throws -> UInt64 {
        let store = try Store(path: path, options: StoreOptions(readOnly: true))
        defer { store.close() }
        return try store.read { try $0.journalBounds().last }
    }

    @Test(arguments: [
        #"{"entity":"Message","index":"byFolderDate","sectionBy":1,"offset":5,"limit":40}"#,
        #"{"entity":"Message","index":"byFolderDate","sectionBy":1,"mode":"indexes"}"#,
    ])
    func aPythonWebsocketsClientMirrorsTheStoreAcrossADrop(query: String) async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/s"
            try populatedDemoStore(at: path, seed: 81, messages: 300, contacts: 10).close()
            try String(Self.tokens).write(toFile: dir + "/tokens.json", atomically: true, encoding: .utf8)
            let (server, port) = try Self.serve(path, ["--tokens", dir + "/tokens.json"])
            defer { server.interrupt(); _ = server.finish(timeout: 30) }
            let until = try Self.lastSequence(path) + 40
            let client = try RunningTool(URL(fileURLWithPath: "/usr/bin/env"),
                                         ["python3", Self.pythonClient, "ws://127.0.0.1:\(port)/live", "all", query, String(until)])
            defer { if client.isRunning { client.kill() } }
            try #require(client.waitFor("ready\n", timeout: 60), "\(client.finish(timeout: 5))")
            // A first writer: the client takes a batch, drops its connection and resumes it.
            try LiveServerTests.mutate(path, commits: 20, seed: 82)
            try #require(client.waitFor("resumed\n", timeout: 60), "\(client.finish(timeout: 5))")
            try LiveServerTests.mutate(path, commits: 20, seed: 83)
            #expect(try Self.lastSequence(path) == until)
            let run = client.finish(timeout: 120)
            try #require(run.status == 0, "websockets client: \(run.stderr)")
            let copy = try FieldValue(jsonText: String(run.stdout.split(separator: "\n").last ?? ""))
            guard case let .object(members) = try FieldValue(jsonText: query), case let .array(sections) = copy else {
                throw ConditionFailed(description: "no copy printed: \(run.stdout)")
            }
            let parsed = try #require(LiveQuery(members))
            let store = try Store(path: path, options: StoreOptions(readOnly: true))
            defer { store.close() }
            let want = try LiveSessionTests.expected(store, parsed)
            let got = sections.map { section -> JSONMirror.Section in
                guard case let .object(s) = section, case let .array(key)? = s["key"], case let .array(rows)? = s["rows"] else {
                    return JSONMirror.Section(key: [], rows: [])
                }
                return JSONMirror.Section(key: key, rows: rows.map { if case let .object(record) = $0 { record } else { nil } })
            }
            #expect(got == want, "the Python client's copy differs from the store: \(JSONMirror.differences(got, want))")
        }
    }

    /// Tokens decide what each client sees: a query outside a token's grant is refused with
    /// nothing sent, an unknown token or none is closed with 4401, and `?token=` works as browsers
    /// send it.
    @Test func tokensDecideWhatEachClientSees() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/s"
            try populatedDemoStore(at: path, seed: 84, messages: 300, contacts: 10).close()
            try Self.tokens.write(toFile: dir + "/tokens.json", atomically: true, encoding: .utf8)
            let (server, port) = try Self.serve(path, ["--tokens", dir + "/tokens.json"])
            defer { server.interrupt(); _ = server.finish(timeout: 30) }
            let url = "ws://127.0.0.1:\(port)/live"
            for token in [nil, "nobody"] {
                let close = try await onOwnThread { try RawWebSocket(port: port, path: "/live", token: token).closeFrame() }
                #expect(close?.code == 4401, "token \(token ?? "none") is refused with 4401: \(String(describing: close))")
            }
            let seven = LiveSocketClient(url: url + "?token=seven")
            await seven.receive(#"{"type":"subscribe","id":"x","entity":"Message","index":"byContact","prefix":[6],"limit":50}"#)
            #expect(try await LiveSessionTests.next(seven)["code"] == "refused")
            await seven.receive(#"{"type":"subscribe","id":"x","entity":"Message","index":"byFolderDate","limit":50}"#)
            #expect(try await LiveSessionTests.next(seven)["code"] == "refused")
            await seven.receive(#"{"type":"subscribe","id":"m","entity":"Message","index":"byContact","prefix":[7],"limit":500}"#)
            let store = try Store(path: path, options: StoreOptions(readOnly: true))
            defer { store.close() }
            var mirrors: [String: (mirror: JSONMirror, query: LiveQuery)] = [
                "m": (JSONMirror(), LiveQuery(entity: "Message", index: "byContact", prefix: [.uint(7)], limit: 500)),
            ]
            try await LiveServerTests.catchUp(seven, &mirrors, store)
            try LiveServerTests.mutate(path, commits: 20, seed: 85)
            try await LiveServerTests.catchUp(seven, &mirrors, store)
            #expect(mirrors["m"]!.mirror.rows.allSatisfy { $0?["contactId"] == .int(7) })
            await seven.drop()
        }
    }

    @Test func aBadTokensFileIsRefusedBeforeServing() async throws {
        let cases = [
            ("[1]", "a JSON object mapping each token"),
            (#"{"t": [{"entity": "Nope"}]}"#, "no entity named Nope"),
            (#"{"t": [{"entity": "Message", "index": "byNothing"}]}"#, "its indexes are byFolderDate"),
            (#"{"t": [{"entity": "Message", "index": "byFolderDate", "prefix": ["inbox"]}]}"#, "inbox"),
            (#"{"t": [{"entity": "Message", "where": 1}]}"#, "\"where\" is not a member of a grant"),
        ]
        // The runs on a thread of their own: the suite's other tests need Swift concurrency's threads.
        let runs = try await onOwnThread {
            try withTemporaryDirectory { dir in
                let path = dir + "/s"
                try populatedDemoStore(at: path, seed: 86, messages: 10, contacts: 2).close()
                return try cases.map { text, _ in
                    try text.write(toFile: dir + "/tokens.json", atomically: true, encoding: .utf8)
                    return try runTool(storectlURL, ["serve", path, "--port", "0", "--tokens", dir + "/tokens.json"], timeout: 60)
                }
            }
        }
        for ((text, says), run) in zip(cases, runs) {
            #expect(run.status == 2 && run.stderr.contains(says), "\(text): \(run.stderr)")
        }
    }
}

extension LiveQuery {
    /// The query of a `subscribe` frame's members.
    init?(_ members: [String: FieldValue]) {
        var frame = members
        frame["type"] = "subscribe"
        frame["id"] = "q"
        guard case let .subscribe(_, query)? = try? ClientFrame(text: FieldValue.object(frame).jsonText) else { return nil }
        self = query
    }
}

/// `storectl serve` on a replica that follows the primary over JetStream: reads scale across
/// machines, and the replica's clients end with what the primary's clients have.
@Suite(.serialized, .ownThreads) struct ServeReplicaTests {
    @Test func aReplicasClientsEndEqualToThePrimarysAfterTheWriter() async throws {
        try await withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir + "/nats")
            defer { server.stop() }
            let nats = ["--nats", server.url, "--stream", "LIVE"]
            let primaryPath = dir + "/primary", replicaPath = dir + "/replica"
            let primary = try populatedDemoStore(at: primaryPath, seed: 95, messages: 300, contacts: 10)
            defer { primary.close() }
            try primary.sync()
            let ship = try RunningTool(storectlURL, ["ship", primaryPath] + nats)
            defer { ship.interrupt(); _ = ship.finish(timeout: 30) }
            // The follower starts from the snapshot, once the shipper made the stream and stored it.
            try #require(ship.waitFor("snapshot commit-", timeout: 60), "\(ship.finish(timeout: 5))")
            let follow = try RunningTool(storectlURL, ["follow", replicaPath] + nats)
            defer { follow.interrupt(); _ = follow.finish(timeout: 30) }
            try await waitUntil("the replica is made") { FileManager.default.fileExists(atPath: replicaPath + "/data.mdb") }
            let (primaryServer, primaryPort) = try ServeCommandTests.serve(primaryPath)
            defer { primaryServer.interrupt(); _ = primaryServer.finish(timeout: 30) }
            let (replicaServer, replicaPort) = try ServeCommandTests.serve(replicaPath)
            defer { replicaServer.interrupt(); _ = replicaServer.finish(timeout: 30) }

            let onPrimary = LiveSocketClient(url: "ws://127.0.0.1:\(primaryPort)/live")
            let onReplica = LiveSocketClient(url: "ws://127.0.0.1:\(replicaPort)/live")
            var primaryMirrors = await LiveServerTests.subscribeAll(onPrimary)
            var replicaMirrors = await LiveServerTests.subscribeAll(onReplica)
            try LiveServerTests.mutate(primaryPath, commits: 30, seed: 96)
            // Both end at the primary's state: the replica's once its follower applied the writer's
            // last commit.
            try await LiveServerTests.catchUp(onPrimary, &primaryMirrors, primary)
            try await LiveServerTests.catchUp(onReplica, &replicaMirrors, primary)
            for (id, entry) in primaryMirrors {
                #expect(LiveSessionTests.project(entry.mirror.sections, entry.query.fields)
                    == LiveSessionTests.project(replicaMirrors[id]!.mirror.sections, entry.query.fields), "\(id)")
            }
            await onPrimary.drop()
            await onReplica.drop()
        }
    }
}
