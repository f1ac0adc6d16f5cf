import FeedstoreLive
import Foundation
import Hummingbird
import HummingbirdWebSocket
import NIOCore

/// A WebSocket request context that keeps its connection's channel, so that the live-query
/// route can close a connection whose client stops reading: a write to it waits forever, and
/// so would the WebSocket close handshake. An application's own context conforms by keeping
/// `source.channel` in its `init(source:)`.
public protocol LiveRequestContext: WebSocketRequestContext {
    var channel: any Channel { get }
}

/// The plain request context for a router that serves live queries.
public struct BasicLiveRequestContext: RequestContext, LiveRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let webSocket: WebSocketHandlerReference<Self>
    public let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        webSocket = WebSocketHandlerReference()
        channel = source.channel
    }
}

/// How the WebSocket route serves its connections.
public struct LiveSocketOptions: Sendable {
    /// How long one frame may take to be written before the connection closes: a client that
    /// reads nothing is let go, and its session kept for it to resume.
    public var writeTimeout: Duration
    /// The largest message read. A larger one closes the connection; a smaller one over the
    /// service's frame limit gets an `error` frame.
    public var maxMessageBytes: Int

    public init(writeTimeout: Duration = .seconds(30), maxMessageBytes: Int = 65_536) {
        self.writeTimeout = writeTimeout
        self.maxMessageBytes = maxMessageBytes
    }
}

extension RouterMethods where Context: LiveRequestContext, Self: SendableMetatype {
    /// Serves `service`'s live queries as WebSocket connections at `path`, on this router and
    /// behind its middleware. `authenticate` turns the upgrade request into the principal whose
    /// queries the service's authorizer admits; nil answers 401 and no connection opens (for
    /// example, a bearer token that names no user). Each text message is a client frame, each
    /// frame the service gives is a text message.
    @discardableResult
    public func addLiveQueries<Principal>(
        _ path: RouterPath, service: LiveService<Principal>, options: LiveSocketOptions = LiveSocketOptions(),
        authenticate: @escaping @Sendable (Request, Context) async throws -> Principal?
    ) -> Self {
        ws(path) { request, context in
            // A plain GET reaches this route too.
            guard request.headers[.upgrade]?.lowercased() == "websocket" else { throw HTTPError(.upgradeRequired) }
            guard try await authenticate(request, context) != nil else { throw HTTPError(.unauthorized) }
            return .upgrade()
        } onUpgrade: { inbound, outbound, context in
            guard let principal = try await authenticate(context.request, context.requestContext) else {
                try await outbound.close(.policyViolation, reason: "not authenticated")
                return
            }
            let connection = await service.connect(principal)
            do {
                try await serve(connection, inbound: inbound, outbound: outbound, channel: context.requestContext.channel, options: options)
            } catch {
                await connection.close()
                throw error
            }
            await connection.close()
        }
    }
}

/// Why a connection was let go.
struct ClientStoppedReading: Error, CustomStringConvertible {
    let timeout: Duration
    var description: String { "the client read nothing for \(timeout)" }
}

/// Carries one connection's frames until the client leaves or stops reading.
private func serve(_ connection: LiveConnection, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, channel: any Channel,
                   options: LiveSocketOptions) async throws
{
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
            while let frame = await connection.nextFrame() {
                try await withThrowingTaskGroup(of: Bool.self) { write in
                    write.addTask {
                        try await outbound.writeTextMessage(frame)
                        return true
                    }
                    write.addTask {
                        try await Task.sleep(for: options.writeTimeout)
                        return false
                    }
                    let written = try await write.next() ?? false
                    write.cancelAll()
                    guard written else {
                        // Not a close handshake: the client would have to read it.
                        channel.close(promise: nil)
                        throw ClientStoppedReading(timeout: options.writeTimeout)
                    }
                }
            }
        }
        group.addTask {
            for try await message in inbound.messages(maxSize: options.maxMessageBytes) {
                switch message {
                case let .text(text): await connection.receive(text)
                // Not a frame of the protocol: the session refuses it as not JSON.
                case let .binary(bytes): await connection.receive(String(decoding: bytes.readableBytesView, as: UTF8.self))
                }
            }
        }
        // The client left (inbound ended), or stopped reading (a write timed out).
        _ = try await group.next()
        group.cancelAll()
    }
}

extension RouterMethods where Self: SendableMetatype {
    /// Serves the browser client, `feedstore-live.js` (an ES module with no dependencies), at
    /// `path`.
    @discardableResult
    public func addLiveClientScript(_ path: RouterPath = "/feedstore-live.js") -> Self {
        let script = LiveClientScript.text
        return get(path) { _, _ in
            Response(status: .ok, headers: [.contentType: "text/javascript; charset=utf-8", .cacheControl: "no-cache"],
                     body: ResponseBody(byteBuffer: ByteBuffer(string: script)))
        }
    }
}

/// The browser client's source, shipped with the library.
public enum LiveClientScript {
    /// The text of `feedstore-live.js`.
    public static let text: String = {
        guard let url = Bundle.module.url(forResource: "feedstore-live", withExtension: "js"),
              let text = try? String(contentsOf: url, encoding: .utf8)
        else { fatalError("feedstore-live.js is missing from FeedstoreHummingbird's resources") }
        return text
    }()
}
