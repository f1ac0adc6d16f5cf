import Feedstore
import FeedstoreJetStream
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import NATSTestServer
import Testing

/// Names of streams and buckets are checked before anything is sent or written, and a request
/// the server refuses says what the server said (and, for a subject another stream has, which).
@Suite(.serialized, .blocking) struct JetStreamNameTests {
    /// Expects `body` to refuse `name` as a name of a `kind` (stream or bucket).
    private func expectRefused(_ kind: String, _ name: String, _ body: () throws -> Any) {
        do {
            _ = try body()
            Issue.record("\(kind) name \(name.debugDescription) was taken")
        } catch let JetStreamError.invalidName(foundKind, foundName, reason) {
            #expect(foundKind == kind && foundName == name && !reason.isEmpty, "\(name.debugDescription): \(reason)")
        } catch {
            Issue.record("\(kind) name \(name.debugDescription): \(error)")
        }
    }

    @Test func namesJetStreamDoesNotTakeAreRefusedBeforeAnythingIsSent() throws {
        try withTemporaryDirectory { dir in
            let store = try ShipperTests.openStore(dir + "/store")
            defer { store.close() }
            // No server listens here: each name is refused before a connection is tried.
            let nowhere = JetStreamConnection(url: "nats://127.0.0.1:1")
            for name in ["", "FEED.A", "FEED A", "FEED*", "FEED>", "FEED/A", "FEED\\A", "FEED\tA", "FEED\u{7F}"] {
                expectRefused("stream", name) { try JournalShipper(store: store, connection: nowhere, stream: name, snapshots: nil) }
                expectRefused("stream", name) { try ReplicaFollower(path: dir + "/replica", connection: nowhere, stream: name) }
                expectRefused("stream", name) { try ReplicaWriter(replica: store, connection: nowhere, stream: name) }
            }
            for bucket in ["", "SNAP.A", "SNAP A", "SNAPÉ"] {
                expectRefused("bucket", bucket) { try JournalShipper(store: store, connection: nowhere, stream: "FEED", snapshots: SnapshotSchedule(bucket: bucket)) }
                expectRefused("bucket", bucket) { try ReplicaFollower(path: dir + "/replica", connection: nowhere, stream: "FEED", bucket: bucket) }
            }
            // Nothing was written beside the store: no replica, and no shipper's lock file
            // (a stream named "FEED/A" would have put one in a folder).
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["store"])
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/store").filter { $0.hasPrefix("jetstream") }.isEmpty)
        }
    }

    /// A URL that is not one is refused as such (not as a server that is unavailable, which a
    /// caller would retry), before anything connects; every form the NATS client takes passes.
    @Test func serverURLsThatAreNotURLsAreRefusedBeforeConnecting() throws {
        try withTemporaryDirectory { dir in
            let store = try ShipperTests.openStore(dir + "/store")
            defer { store.close() }
            for url in ["bogus url", "", " ", "nats://host:port", "nats://host:70000", "nats://a:1,,nats://b:2", "nats://[::1:4222",
                        "nats://ho\tst:4222", "1nats://host:4222", "na ts://host:4222"] {
                for make in [{ _ = try JournalShipper(store: store, connection: JetStreamConnection(url: url), stream: "FEED", snapshots: nil) },
                             { _ = try ReplicaFollower(path: dir + "/replica", connection: JetStreamConnection(url: url), stream: "FEED") },
                             { _ = try ReplicaWriter(replica: store, connection: JetStreamConnection(url: url), stream: "FEED") }] {
                    #expect("\(url.debugDescription)") { try make() } throws: { error in
                        guard case let JetStreamError.invalidURL(_, reason) = error else { return false }
                        return !reason.isEmpty && !(error as! JetStreamError).isTransient
                    }
                }
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["store"])
            for url in ["nats://127.0.0.1:4222", "tls://demo.nats.io:4443", "localhost:4222", "localhost", "nats://user:pa ss@host:4222",
                        "nats://u:p@host:4222/path", "nats://[::1]:4222", "[::1]:4222", "nats://a:1, nats://b:2", "  nats://x:1  ", "nats://",
                        "NATS://host:1"] {
                #expect(throws: Never.self, "\(url.debugDescription)") { try JetStreamConnection(url: url).checkURL() }
            }
        }
    }

    @Test func aRefusalSaysWhatTheServerSaid() throws {
        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir)
            let connection = JetStreamConnection(url: server.url)
            let store = try ShipperTests.openStore(dir + "/store")
            defer { store.close() }
            let shipper = try JournalShipper(store: store, connection: connection, stream: "FIRST", snapshots: nil)
            // A second stream for the same store's subject.
            do {
                _ = try JournalShipper(store: store, connection: connection, stream: "SECOND", snapshots: nil)
                Issue.record("a second stream for the same subject was made")
            } catch let JetStreamError.serverRefused(what, reason) {
                #expect(what.contains("SECOND"))
                #expect(reason.hasPrefix("subjects overlap with an existing stream"), "\(reason)")
                #expect(reason.contains("JetStream error 10065"), "\(reason)")
                // And which stream has the subject.
                #expect(reason.hasSuffix(": stream FIRST carries subject \(shipper.subject)"), "\(reason)")
            }
        }
    }
}
