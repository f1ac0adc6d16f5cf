import HummingbirdWebSocket

/// How the WebSocket route serves its connections.
public struct LiveSocketOptions: Sendable {
    /// How long one frame may take to be written before the connection closes: a client that
    /// reads nothing is let go, and its session kept for it to resume. One deadline per
    /// connection keeps it, not a timer per frame.
    public var writeTimeout: Duration
    /// The largest message read. A larger one closes the connection (close code 1009,
    /// `messageTooLarge`); a smaller one over the service's frame limit gets an `error` frame.
    /// The server's WebSocket frames must be allowed as large: build it with
    /// ``webSocketConfiguration``.
    public var maxMessageBytes: Int
    /// Which pages may connect (by default the server's own, and clients that are not browsers).
    public var origins: LiveOrigins

    public init(writeTimeout: Duration = .seconds(30), maxMessageBytes: Int = 65_536, origins: LiveOrigins = LiveOrigins()) {
        self.writeTimeout = writeTimeout
        self.maxMessageBytes = maxMessageBytes
        self.origins = origins
    }

    /// The WebSocket server configuration that reads messages of up to ``maxMessageBytes`` in
    /// one frame, as browsers send them: Hummingbird's default frame limit (16 KiB) would close
    /// a larger one with 1009 before the route could answer it with an `error` frame. Pass it
    /// as `.http1WebSocketUpgrade(webSocketRouter: router, configuration: .init(ws: options.webSocketConfiguration))`.
    public var webSocketConfiguration: WebSocketServerConfiguration {
        WebSocketServerConfiguration(maxFrameSize: maxMessageBytes)
    }
}
