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
