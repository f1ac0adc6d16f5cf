import Feedstore
import FeedstoreDemo
import FeedstoreJetStream
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import NATSTestServer
import Testing

/// Shipping and following against servers that authenticate: user and password, token, TLS with
/// a certificate authority of the test's own. Right credentials work, from options or (for
/// storectl) from the environment; wrong or missing ones are a typed error at once, never a hang,
/// and no message shows a secret.
@Suite(.serialized, .blocking) struct AuthenticationTests {
    static let stream = ShipperTests.stream
    static let password = "pw-5f1c93e0-never-printed"
    static let token = "tk-8d2e77a1-never-printed"

    /// Expects `attempt` to fail at once with a refused connection whose message shows none of
    /// the secrets.
    static func expectRefused(_ what: String, _ attempt: () throws -> Void) {
        let started = Date()
        #expect("\(what)", performing: attempt, throws: { error in
            guard case JetStreamError.connectionFailed = error else { return false }
            let message = "\(error)"
            return !message.contains(password) && !message.contains(token)
        })
        #expect(Date().timeIntervalSince(started) < 10, "\(what): took \(Date().timeIntervalSince(started)) s")
    }

    /// Ships a few commits with `connection` and follows them into a replica.
    static func shipAndFollow(_ dir: String, _ connection: JetStreamConnection) throws {
        var rng = SeededGenerator(seed: 17)
        let primary = try ShipperTests.openStore(dir + "/primary")
        let shipper = try JournalShipper(store: primary, connection: connection, stream: stream)
        try ShipperTests.commit(primary, 20, rng: &rng)
        let last = try primary.read { try $0.journalBounds().last }
        try shipper.run(until: last)
        let follower = try ReplicaFollower(path: dir + "/replica", connection: connection, stream: stream, durability: .none)
        try follower.run(untilOriginSequence: last)
        try FollowerTests.expectReplicaEqualsPrimary(primary, follower.replica, "authenticated")
    }

    @Test func userAndPassword() throws {
        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir, arguments: ["--user", "feed", "--pass", Self.password])
            let store = try Store(path: dir + "/other", entities: [Item.self], options: StoreOptions(durability: .none))
            Self.expectRefused("no credentials") { _ = try JournalShipper(store: store, connection: JetStreamConnection(url: server.url), stream: Self.stream) }
            var wrong = JetStreamConnection(url: server.url)
            wrong.user = "feed"
            wrong.password = "not-" + Self.password
            Self.expectRefused("a wrong password") { _ = try JournalShipper(store: store, connection: wrong, stream: Self.stream) }
            // Credentials in the URL are left out of messages.
            let inURL = JetStreamConnection(url: "nats://feed:not-\(Self.password)@127.0.0.1:\(server.port)")
            Self.expectRefused("credentials in the URL") { _ = try ReplicaFollower(path: dir + "/r", connection: inURL, stream: Self.stream) }

            var right = JetStreamConnection(url: server.url)
            right.user = "feed"
            right.password = Self.password
            try Self.shipAndFollow(dir, right)

            // storectl takes credentials from the environment only.
            let path = dir + "/primary"
            let refused = try runTool(storectlURL, ["ship", path, "--nats", server.url, "--stream", Self.stream, "--until-sequence", "1"],
                                      environment: ["NATS_USER": "feed", "NATS_PASSWORD": "not-" + Self.password], timeout: 30)
            #expect(refused.status == 2 && refused.stderr.contains("cannot connect to NATS") && !refused.stderr.contains(Self.password), "\(refused.stderr)")
            let store2 = try Store(path: path)
            let last = try store2.read { try $0.journalBounds().last }
            let shipped = try runTool(storectlURL, ["ship", path, "--nats", server.url, "--stream", Self.stream, "--until-sequence", String(last), "--quiet"],
                                      environment: ["NATS_USER": "feed", "NATS_PASSWORD": Self.password], timeout: 30)
            // Everything was shipped before; the run says so.
            #expect(shipped.status == 0, "\(shipped.stderr)")
            #expect(shipped.stdout == "nothing to publish: stream \(Self.stream) already holds every commit through \(last)\n", "\(shipped.stdout)")
        }
    }

    @Test func token() throws {
        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir, arguments: ["--auth", Self.token])
            let store = try Store(path: dir + "/other", entities: [Item.self], options: StoreOptions(durability: .none))
            var wrong = JetStreamConnection(url: server.url)
            wrong.token = "tk-wrong"
            Self.expectRefused("a wrong token") { _ = try JournalShipper(store: store, connection: wrong, stream: Self.stream) }
            var right = JetStreamConnection(url: server.url)
            right.token = Self.token
            try Self.shipAndFollow(dir, right)
        }
    }

    /// A certificate authority and a server certificate for 127.0.0.1, made with openssl.
    static func makeCertificates(in dir: String) throws {
        let extensions = dir + "/server.ext"
        try "subjectAltName=IP:127.0.0.1\n".write(toFile: extensions, atomically: true, encoding: .utf8)
        for arguments in [
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Feedstore test CA"],
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other-ca.key", "-out", "other-ca.pem", "-days", "2", "-subj", "/CN=Another CA"],
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"],
            ["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem", "-days", "2",
             "-extfile", extensions],
        ] {
            let result = try runTool(URL(fileURLWithPath: "/usr/bin/openssl"), arguments.map { $0.hasSuffix(".key") || $0.hasSuffix(".pem") || $0.hasSuffix(".csr") ? dir + "/" + $0 : $0 },
                                     timeout: 60)
            try #require(result.status == 0, "openssl \(arguments.first!): \(result.stderr)")
        }
    }

    @Test func tls() throws {
        try withTemporaryDirectory { dir in
            try Self.makeCertificates(in: dir)
            let server = try NATSServer(directory: dir, arguments: ["--tls", "--tlscert", dir + "/server.pem", "--tlskey", dir + "/server.key"])
            let store = try Store(path: dir + "/other", entities: [Item.self], options: StoreOptions(durability: .none))
            Self.expectRefused("no TLS") { _ = try JournalShipper(store: store, connection: JetStreamConnection(url: server.url), stream: Self.stream) }
            var untrusted = JetStreamConnection(url: server.url)
            untrusted.trustedCertificates = dir + "/other-ca.pem"
            Self.expectRefused("a server certificate from another authority") {
                _ = try JournalShipper(store: store, connection: untrusted, stream: Self.stream)
            }
            var trusted = JetStreamConnection(url: server.url)
            trusted.trustedCertificates = dir + "/ca.pem"
            try Self.shipAndFollow(dir, trusted)
        }
    }
}
