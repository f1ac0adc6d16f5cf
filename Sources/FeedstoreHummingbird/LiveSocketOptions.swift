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
