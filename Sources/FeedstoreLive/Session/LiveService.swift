import Feedstore
import Logging

/// The live queries a process serves over one store: a ``LiveConnection`` per client, each
/// admitting what the authorizer allows its principal, and the sessions of dropped connections,
/// kept for a grace period so that their clients resume them.
///
/// A kept session keeps its watchers open, each holding at most one batch while commits
/// coalesce in it, so what it holds does not grow with the time it waits. At most
/// `keptSessions` are kept (the oldest closes first); after the grace period, a server
/// restart, or for another principal, a `resume` opens every subscription again with a
/// `reset` batch.
public actor LiveService<Principal: Hashable & Sendable> {
    /// Whether `principal` may watch a query (its components converted to the catalog's kinds).
    public typealias Authorizer = @Sendable (Principal, LiveQuery) -> Bool

    private let store: Store
    private let limits: LiveLimits
    private let gracePeriod: Duration
    private let keptSessions: Int
    private let authorize: Authorizer
    private let logger: Logger
    private var kept: [String: Kept] = [:]
    private var detachments = 0

    private struct Kept {
        let session: LiveSession
        let principal: Principal
        /// Which detachment kept it, oldest first.
        let order: Int
    }

    /// A service on `store`, whose connections keep `limits`, whose dropped sessions wait
    /// `gracePeriod` (at most `keptSessions` of them), admitting what `authorize` allows. The
    /// detail of a store error, which a client gets only as a code, goes to `logger`.
    public init(store: Store, limits: LiveLimits = LiveLimits(), gracePeriod: Duration = .seconds(60), keptSessions: Int = 10_000,
                logger: Logger = Logger(label: "feedstore.live"), authorize: @escaping Authorizer = { _, _ in true })
    {
        self.logger = logger
        self.store = store
        self.limits = limits
        self.gracePeriod = gracePeriod
        self.keptSessions = keptSessions
        self.authorize = authorize
    }

    /// The sessions kept for their clients to resume.
    public var keptSessionCount: Int { kept.count }

    /// A new connection for `principal`; its first frame is `welcome`.
    public func connect(_ principal: Principal) -> LiveConnection {
        let authorize = authorize
        let session = LiveSession(store: store, limits: limits, logger: logger) { authorize(principal, $0) }
        return LiveConnection(session: session, reattach: { [weak self] token in await self?.reattach(token, for: principal) },
                              detach: { [weak self] session in await self?.keep(session, for: principal) })
    }

    /// Closes every kept session. Open connections close when their transport ends.
    public func close() async {
        let sessions = kept.values.map(\.session)
        kept = [:]
        for session in sessions { await session.close() }
    }

    private func reattach(_ token: String, for principal: Principal) -> LiveSession? {
        guard let entry = kept[token], entry.principal == principal else { return nil }
        kept[token] = nil
        return entry.session
    }

    private func keep(_ session: LiveSession, for principal: Principal) async {
        guard await session.hasSubscriptions, gracePeriod > .zero, keptSessions > 0 else {
            await session.close()
            return
        }
        if kept.count >= keptSessions, let oldest = kept.min(by: { $0.value.order < $1.value.order }) {
            kept[oldest.key] = nil
            await oldest.value.session.close()
        }
        detachments += 1
        let order = detachments
        kept[session.token] = Kept(session: session, principal: principal, order: order)
        Task { [weak self, gracePeriod] in
            try? await Task.sleep(for: gracePeriod)
            await self?.expire(session.token, order: order)
        }
    }

    private func expire(_ token: String, order: Int) async {
        guard let entry = kept[token], entry.order == order else { return }
        kept[token] = nil
        await entry.session.close()
    }
}
