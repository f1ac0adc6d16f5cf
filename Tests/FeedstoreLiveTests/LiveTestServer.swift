import Feedstore
import FeedstoreHummingbird
import FeedstoreLive
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore

/// A Hummingbird application serving `service` at `/live` on a free loopback port, as an
/// application mounts it; the principal is the bearer token's number, if it has one.
struct LiveTestServer {
    let port: Int
    private let task: Task<Void, any Error>

    var url: String { "ws://127.0.0.1:\(port)/live" }

    static func start(_ service: LiveService<Int>, options: LiveSocketOptions = LiveSocketOptions()) async throws -> LiveTestServer {
        let router = Router(context: BasicLiveRequestContext.self)
        router.addLiveQueries("/live", service: service, options: options) { request, _ in
            guard let header = request.headers[.authorization], header.hasPrefix("Bearer ") else { return nil }
            return Int(header.dropFirst("Bearer ".count))
        }
        let (ports, announce) = AsyncStream<Int>.makeStream()
        // Stopping the server cancels its connections, which it logs as errors.
        var logger = Logger(label: "live-test-server")
        logger.logLevel = .critical
        let app = Application(router: Router(), server: .http1WebSocketUpgrade(webSocketRouter: router, configuration: .init(ws: options.webSocketConfiguration)),
                              configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
                              onServerRunning: { channel in
                                  announce.yield(channel.localAddress?.port ?? 0)
                                  announce.finish()
                              }, logger: logger)
        let task = Task {
            defer { announce.finish() }
            try await app.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else {
            task.cancel()
            throw ConditionFailed(description: "the server did not start")
        }
        return LiveTestServer(port: port, task: task)
    }

    /// Stops the server, as a restart does: connections end.
    func stop() async {
        task.cancel()
        _ = await task.result
    }
}

struct ConditionFailed: Error, CustomStringConvertible {
    let description: String
}
