import FeedstoreJetStream
import Foundation
import NATSTestServer

/// A fresh scratch directory with a `nats-server -js` on loopback storing its streams there;
/// the server is stopped and the directory removed when this is released.
final class LoopbackServer {
    private let server: NATSServer
    let connection: JetStreamConnection
    private let directory: String
    /// The server's process id.
    var serverProcess: Int32? { server.processIdentifier }

    init(directory: String) throws {
        self.directory = directory
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        server = try NATSServer(directory: directory)
        connection = JetStreamConnection(url: server.url)
    }

    deinit {
        server.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
