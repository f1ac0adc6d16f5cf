import FeedstoreTestSupport
import Foundation
import HTTPTypes
import HummingbirdWSClient
import Logging

/// A WebSocket client of a live-query route over loopback, as an app's would be: what it is
/// given to send goes out as text messages, what arrives waits in order for ``nextFrame()``.
/// ``drop()`` ends the connection as a lost network does, with no goodbye.
final class LiveSocketClient: LiveEndpoint {
    private let outgoing: AsyncStream<String>.Continuation
    private let frames = FrameQueue()
    private let task: Task<Void, Never>

    /// Connects to `url`, with `token` as a bearer token and `origin` as an `Origin` (a
    /// browser's page) when given.
    init(url: String, token: String? = nil, origin: String? = nil) {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        outgoing = continuation
        var headers = HTTPFields()
        if let token { headers[.authorization] = "Bearer \(token)" }
        if let origin { headers[.origin] = origin }
        let frames = frames
        task = Task {
            do {
                try await WebSocketClient.connect(url: url, configuration: WebSocketClientConfiguration(maxFrameSize: 1 << 20, additionalHeaders: headers),
                                                  logger: Logger(label: "live-test-client")) { inbound, outbound, _ in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for try await message in inbound.messages(maxSize: 1 << 26) {
                                if case let .text(text) = message { await frames.push(text) }
                            }
                        }
                        group.addTask {
                            for await text in stream { try await outbound.writeTextMessage(text) }
                        }
                        _ = try await group.next()
                        group.cancelAll()
                    }
                }
                await frames.finish(nil)
            } catch {
                await frames.finish(error)
            }
        }
    }

    func receive(_ text: String) async { outgoing.yield(text) }

    /// The next frame from the server; nil once the connection ended.
    func nextFrame() async -> String? { await frames.pop() }

    /// Why the connection ended, once it has (nil while open, or if it closed cleanly).
    var failure: (any Error)? { get async { await frames.failure } }
    var ended: Bool { get async { await frames.finished } }

    /// Ends the connection without a close handshake.
    func drop() async {
        outgoing.finish()
        task.cancel()
        await task.value
    }
}

/// Frames waiting to be read, in order.
private actor FrameQueue {
    private var frames: [String] = []
    private var head = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private(set) var finished = false
    private(set) var failure: (any Error)?

    func push(_ frame: String) {
        frames.append(frame)
        wake()
    }

    func finish(_ error: (any Error)?) {
        finished = true
        failure = error
        wake()
    }

    func pop() async -> String? {
        while head == frames.count {
            if finished || Task.isCancelled { return nil }
            await withTaskCancellationHandler {
                await withCheckedContinuation { waiters.append($0) }
            } onCancel: {
                Task { await self.wake() }
            }
        }
        defer { head += 1 }
        return frames[head]
    }

    private func wake() {
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}
