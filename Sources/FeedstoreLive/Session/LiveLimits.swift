/// What one connection may hold and ask, so that no client can grow the server's memory or
/// work without bound. Every limit refused is an `error` frame with code `limitExceeded` or
/// `rateLimited`; the connection stays open.
public struct LiveLimits: Sendable, Hashable {
    /// Subscriptions open at once.
    public var subscriptions: Int
    /// Rows of a window in objects mode (each batch carries at most this many records), and of
    /// a `rows` request.
    public var windowRows: Int
    /// Bytes of a client frame.
    public var frameBytes: Int
    /// `setWindow` and `rows` frames per second, over a burst of as many.
    public var windowMovesPerSecond: Int
    /// Field tests in a subscription's filter (each record of the range is tested by all of them).
    public var filterTests: Int

    public init(subscriptions: Int = 16, windowRows: Int = 500, frameBytes: Int = 16_384, windowMovesPerSecond: Int = 50,
                filterTests: Int = 16)
    {
        self.filterTests = filterTests
        self.subscriptions = subscriptions
        self.windowRows = windowRows
        self.frameBytes = frameBytes
        self.windowMovesPerSecond = windowMovesPerSecond
    }
}
