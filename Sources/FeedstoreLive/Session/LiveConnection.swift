/// One connection of a ``LiveService``: what a transport carries for one client. It serves a
/// ``LiveSession``, and switches to the session a `resume` frame names when the service still
/// keeps it for this principal; the transport calls ``close()`` when the connection ends, and
/// the service keeps the session for its grace period.
///
/// The transport calls ``receive(_:)`` for each client frame, in order, from one task, and
/// ``nextFrame()`` from another, writing each frame before asking for the next.
public actor LiveConnection {
    private var session: LiveSession
    private let reattach: @Sendable (String) async -> LiveSession?
    private let detach: @Sendable (LiveSession) async -> Void
    private var closed = false

    init(session: LiveSession, reattach: @escaping @Sendable (String) async -> LiveSession?,
         detach: @escaping @Sendable (LiveSession) async -> Void)
    {
        self.session = session
        self.reattach = reattach
        self.detach = detach
    }

    /// The token of the session served now (the one the last `welcome` named).
    public var sessionToken: String { session.token }

    /// Takes one frame from the client.
    public func receive(_ text: String) async {
        guard !closed else { return }
        let current = session
        let parsed = LiveSession.parse(text, limits: current.limits)
        guard case let .success(.resume(token, entries)) = parsed, token != current.token else {
            await current.handle(parsed)
            return
        }
        guard let kept = await reattach(token) else {
            await current.resume(entries, resumed: false)
            return
        }
        session = kept
        await current.close()
        await kept.resume(entries, resumed: true)
    }

    /// The next frame to send; nil once the connection is closed or the calling task is
    /// cancelled.
    public func nextFrame() async -> String? {
        while !closed {
            let current = session
            if let frame = await current.nextFrame() { return frame }
            // A resume closed the session this call waited on: go on with the one it found.
            if current === session || Task.isCancelled { return nil }
        }
        return nil
    }

    /// Ends the connection: its session stays with the service for the grace period, its
    /// watchers open, so that the client can resume it.
    public func close() async {
        guard !closed else { return }
        closed = true
        await detach(session)
    }
}
