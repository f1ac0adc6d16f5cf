import Feedstore
import Foundation
import Logging

/// One connection's live queries, whatever carries its frames: it takes the client's text
/// frames (``receive(_:)``) and gives the server's (``nextFrame()``), holding a watcher per
/// subscription. Cycle: client frame → check (syntax, catalog, limits, authorizer) → watcher →
/// batch → frame.
///
/// The transport pulls frames when it can write one, so a slow reader never makes a queue:
/// each subscription holds at most one batch taken from its watcher and not yet sent, and its
/// watcher is not read again until that one goes out; meanwhile commits coalesce in the
/// watcher, so the next batch spans them all (never part of a commit). Replies (errors, rows)
/// are bounded by the frames the client sends, which the limits bound in turn.
///
/// An `indexes`-mode subscription's rows are read from the snapshot of the last batch sent:
/// a `rows` request that arrives while a batch is held sends that batch first.
///
/// The first frame is `welcome`, with the session's token. A `resume` frame continues a
/// subscription incrementally when the client applied exactly the last batch sent (its
/// `toSequence`, and no later batch with the same one); otherwise the subscription opens again
/// and its first batch is a `reset`. ``LiveService`` keeps sessions whose connection dropped,
/// so that a client can resume them on a new one.
public actor LiveSession {
    /// Whether a principal may watch a query (checked after its components are converted to
    /// the kinds the catalog stores, so `[7]` and `[7.0]` are one prefix).
    public typealias Authorizer = @Sendable (LiveQuery) -> Bool

    /// The token a client resumes this session with: 128 random bits, in hex.
    public nonisolated let token: String
    let limits: LiveLimits
    private let store: Store
    private let authorize: Authorizer
    private let logger: Logger
    private var subscriptions: [FieldValue: Subscription] = [:]
    /// Subscriptions holding a batch to send, oldest first.
    private var ready: [FieldValue] = []
    /// Replies to send before any batch, in order.
    private var outbox: [Reply] = []
    /// Calls of ``nextFrame()`` waiting for a frame (one, unless a transport pulls twice).
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private var closed = false
    private var windowMoves: TokenBucket

    private enum Reply {
        case text(String)
        case rows(id: FieldValue, offset: Int, limit: Int)
    }

    /// A session on `store`, within `limits`, admitting the queries `authorize` allows; the
    /// detail of store errors, which clients get only as a code, goes to `logger`.
    public init(store: Store, limits: LiveLimits = LiveLimits(), logger: Logger = Logger(label: "feedstore.live"),
                authorize: @escaping Authorizer = { _ in true })
    {
        self.store = store
        self.limits = limits
        self.logger = logger
        self.authorize = authorize
        windowMoves = TokenBucket(perSecond: limits.windowMovesPerSecond)
        var random = SystemRandomNumberGenerator()
        token = (0..<2).map { _ in
            let hex = String(random.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
        outbox = [.text(ServerFrame.welcome(session: token, resumed: false))]
    }

    /// The subscriptions open now.
    public var subscriptionIDs: [FieldValue] { subscriptions.keys.sorted() }

    var hasSubscriptions: Bool { !subscriptions.isEmpty }

    /// Takes one frame from the client. What it asks for arrives through ``nextFrame()``:
    /// batches, rows, and an `error` frame for anything refused.
    public func receive(_ text: String) {
        handle(Self.parse(text, limits: limits))
    }

    /// A client frame parsed within the limits.
    nonisolated static func parse(_ text: String, limits: LiveLimits) -> Result<ClientFrame, LiveError> {
        guard text.utf8.count <= limits.frameBytes else {
            return .failure(LiveError(.limitExceeded, "the frame has \(text.utf8.count) bytes; a frame has at most \(limits.frameBytes)"))
        }
        return Result { () throws(LiveError) in try ClientFrame(text: text) }
    }

    func handle(_ parsed: Result<ClientFrame, LiveError>) {
        guard !closed else { return }
        do {
            switch try parsed.get() {
            case let .subscribe(id, query): try subscribe(id, query)
            case let .setWindow(id, offset, limit): try setWindow(id, offset: offset, limit: limit)
            case let .rows(id, offset, limit): try requestRows(id, offset: offset, limit: limit)
            case let .unsubscribe(id): try unsubscribe(id)
            case let .resume(session, entries): resume(entries, resumed: session == token)
            }
        } catch let error as LiveError {
            send(.text(ServerFrame.error(error)))
        } catch {
            send(.text(ServerFrame.error(storeError(error, id: nil))))
        }
    }

    /// Answers a `resume` frame: a `welcome` saying whether the session was `resumed`, then each
    /// subscription the client names continues, if it applied exactly the last batch sent and
    /// asks for the same query (its window aside, which moves), or opens again with a `reset`
    /// batch. Subscriptions it does not name close; replies not yet sent are dropped (the client
    /// asks again).
    func resume(_ entries: [ClientFrame.ResumedSubscription], resumed: Bool) {
        guard !closed else { return }
        outbox.removeAll()
        send(.text(ServerFrame.welcome(session: token, resumed: resumed)))
        let named = Set(entries.map(\.id))
        for id in Array(subscriptions.keys) where !named.contains(id) { remove(id) }
        for entry in entries {
            do {
                if let subscription = subscriptions[entry.id] {
                    let query = try admitted(entry.query, id: entry.id)
                    if subscription.continues(with: query, applied: entry.applied) {
                        if let limit = query.limit, subscription.window.map({ $0 != (query.offset, limit) }) ?? true {
                            subscription.window = (query.offset, limit)
                            subscription.watcher.setWindow(offset: query.offset, limit: limit)
                        }
                        continue
                    }
                    remove(entry.id)
                }
                try subscribe(entry.id, entry.query, reset: true)
            } catch {
                remove(entry.id)
                send(.text(ServerFrame.error(error as? LiveError ?? storeError(error, id: entry.id))))
            }
        }
    }

    /// The next frame to send, when there is one; nil once the session is closed or the
    /// calling task is cancelled.
    public func nextFrame() async -> String? {
        while !closed, !Task.isCancelled {
            if let reply = outbox.first {
                switch reply {
                case let .text(text):
                    outbox.removeFirst()
                    return text
                case let .rows(id, offset, limit):
                    guard let subscription = subscriptions[id] else {
                        outbox.removeFirst()
                        return rowsFrame(id, offset: offset, limit: limit)
                    }
                    // Rows come from the snapshot of the last batch sent: one still held goes
                    // first.
                    if let held = take(subscription) { return held }
                    outbox.removeFirst()
                    return rowsFrame(id, offset: offset, limit: limit)
                }
            }
            while let id = ready.first {
                ready.removeFirst()
                if let subscription = subscriptions[id], let held = take(subscription) { return held }
            }
            await withTaskCancellationHandler {
                await withCheckedContinuation { waiting.append($0) }
            } onCancel: {
                Task { await self.wake() }
            }
        }
        return nil
    }

    /// Stops every subscription; ``nextFrame()`` returns nil from now on.
    public func close() {
        closed = true
        for id in Array(subscriptions.keys) { remove(id) }
        wake()
    }

    // MARK: Frames

    private func subscribe(_ id: FieldValue, _ requested: LiveQuery, reset: Bool = false) throws {
        guard subscriptions[id] == nil else { throw LiveError(.duplicateSubscription, "subscription \(id.jsonText) is already open", id: id) }
        guard subscriptions.count < limits.subscriptions else {
            throw LiveError(.limitExceeded, "a connection holds at most \(limits.subscriptions) subscriptions", id: id)
        }
        let query = try admitted(requested, id: id)
        let range = IndexRange(prefix: query.prefix, from: query.from.map { .inclusive($0) }, to: query.to.map { .inclusive($0) })
        let options = WatchOptions(sectionBy: query.sectionBy, fields: query.fields.map(Set.init),
                                   window: query.limit.map { WatchWindow(offset: query.offset, limit: $0) })
        let subscription: Subscription
        switch query.mode {
        case .objects:
            let watcher = store.watch(entity: query.entity, index: query.index, range: range, reverse: query.reverse, filter: query.filter,
                                      options: options)
            subscription = Subscription(query: query, watcher: .objects(watcher))
            subscription.pump = pump(watcher, id: id) { ($0.jsonMembers, $0.toSequence) }
        case .indexes:
            let watcher = store.watchIndexes(entity: query.entity, index: query.index, range: range, reverse: query.reverse,
                                             filter: query.filter, options: options)
            subscription = Subscription(query: query, watcher: .indexes(watcher))
            subscription.pump = pump(watcher, id: id) { ($0.jsonMembers, $0.toSequence) }
        }
        subscription.resetNext = reset
        subscriptions[id] = subscription
    }

    /// Takes a subscription's batches one at a time, each held until the transport sends it.
    private func pump<Batch>(_ watcher: BatchWatcher<Batch, [String: FieldValue]>, id: FieldValue,
                             members: @escaping @Sendable (Batch) -> ([String: FieldValue], toSequence: UInt64)) -> Task<Void, Never>
    {
        Task { [weak self] in
            while let session = self {
                switch await session.poll(watcher, id: id, members: members) {
                case .gone: return
                case .held: continue  // more may have come while it waited to be sent
                case .unchanged: await watcher.waitForChanges()
                }
            }
        }
    }

    private enum Polled { case held, unchanged, gone }

    /// Polls a subscription's watcher here, on the session, so that its snapshot moves only
    /// between frames: a `rows` request is answered from the snapshot of the last batch taken,
    /// which is sent first. A batch taken is held until the transport sends it.
    private func poll<Batch>(_ watcher: BatchWatcher<Batch, [String: FieldValue]>, id: FieldValue,
                             members: (Batch) -> ([String: FieldValue], toSequence: UInt64)) async -> Polled
    {
        // The subscription this pump serves: a resume may have opened another with its id.
        func current() -> Subscription? {
            guard let subscription = subscriptions[id], subscription.watcher.identity == ObjectIdentifier(watcher), !closed, !watcher.isCancelled
            else { return nil }
            return subscription
        }
        guard let subscription = current() else { return .gone }
        do {
            guard let batch = try watcher.poll() else { return .unchanged }
            let (members, toSequence) = members(batch)
            await hold(members, toSequence: toSequence, in: subscription, id: id)
            return current() == nil ? .gone : .held
        } catch {
            fail(id, error)
            return .gone
        }
    }

    private func setWindow(_ id: FieldValue, offset: Int, limit: Int) throws {
        let subscription = try open(id)
        try admitWindowMove(id)
        guard subscription.query.limit != nil else {
            throw LiveError(.malformed, "subscription \(id.jsonText) has no window: subscribe with a limit to move one", id: id)
        }
        if subscription.query.mode == .objects, limit > limits.windowRows {
            throw LiveError(.limitExceeded, "a window holds at most \(limits.windowRows) rows", id: id)
        }
        subscription.window = (offset, limit)
        subscription.watcher.setWindow(offset: offset, limit: limit)
    }

    private func requestRows(_ id: FieldValue, offset: Int, limit: Int) throws {
        let subscription = try open(id)
        try admitWindowMove(id)
        guard subscription.query.mode == .indexes else {
            throw LiveError(.wrongMode, "subscription \(id.jsonText) is in objects mode: its batches carry their rows", id: id)
        }
        guard limit <= limits.windowRows else { throw LiveError(.limitExceeded, "a rows request asks for at most \(limits.windowRows) rows", id: id) }
        send(.rows(id: id, offset: offset, limit: limit))
    }

    private func unsubscribe(_ id: FieldValue) throws {
        _ = try open(id)
        remove(id)
    }

    // MARK: Subscriptions

    private func open(_ id: FieldValue) throws -> Subscription {
        guard let subscription = subscriptions[id] else { throw LiveError(.unknownSubscription, "no subscription \(id.jsonText) is open", id: id) }
        return subscription
    }

    private func admitWindowMove(_ id: FieldValue) throws {
        guard windowMoves.take() else {
            throw LiveError(.rateLimited, "at most \(limits.windowMovesPerSecond) window moves and rows requests a second", id: id)
        }
    }

    /// The query checked and converted (``checked(_:id:)``), if the authorizer admits it. The
    /// authorizer decides first, on the query as converted when it can be, as sent otherwise:
    /// a refused principal learns nothing of the catalog, not even whether what it named
    /// exists, and the errors of an admitted one name only what it may watch.
    private func admitted(_ requested: LiveQuery, id: FieldValue) throws -> LiveQuery {
        let checking = Result { try checked(requested, id: id) }
        let asked = (try? checking.get()) ?? converted(requested) ?? requested
        guard authorize(asked) else {
            throw LiveError(.refused, "this connection may not watch \(requested.entity).\(requested.index) with prefix \(FieldValue.array(requested.prefix).jsonText)", id: id)
        }
        do {
            return try checking.get()
        } catch let error as LiveError {
            throw error
        } catch {
            throw storeError(error, id: id)
        }
    }

    /// The query with its components converted to the kinds the catalog stores, when its
    /// entity and index exist and they convert, whatever else is wrong with it.
    private func converted(_ query: LiveQuery) -> LiveQuery? {
        guard let entity = try? store.catalog.entities[query.entity] else { return nil }
        return try? Self.converting(query, of: entity)
    }

    /// `query` with its prefix and bounds in the kinds `entity`'s index stores.
    private static func converting(_ query: LiveQuery, of entity: CatalogEntity) throws -> LiveQuery {
        var converted = query
        converted.prefix = try entity.keyComponents(query.prefix, forIndex: query.index)
        converted.from = try query.from.map { try entity.keyComponents($0, forIndex: query.index, startingAt: query.prefix.count) }
        converted.to = try query.to.map { try entity.keyComponents($0, forIndex: query.index, startingAt: query.prefix.count) }
        return converted
    }

    /// The query with its components converted to the kinds the catalog stores, its names
    /// checked, and the limits applied.
    private func checked(_ query: LiveQuery, id: FieldValue) throws -> LiveQuery {
        if query.mode == .objects {
            guard let limit = query.limit, limit <= limits.windowRows else {
                throw LiveError(.limitExceeded, "a subscription in objects mode needs a limit of at most \(limits.windowRows) rows "
                    + "(or mode \"indexes\", whose batches carry positions)", id: id)
            }
        }
        let catalog = try store.catalog
        guard let entity = catalog.entities[query.entity] else {
            throw LiveError(.unknownEntity, "no entity named \(query.entity); the entities are \(catalog.entities.keys.sorted().joined(separator: ", "))", id: id)
        }
        guard let index = entity.indexes.first(where: { $0.definition.name == query.index }) else {
            throw LiveError(.unknownIndex, "\(query.entity) has no index named \(query.index); its indexes are "
                + entity.indexes.map(\.definition.name).joined(separator: ", "), id: id)
        }
        let components = index.definition.components.count
        guard query.sectionBy <= components else {
            throw LiveError(.malformed, "sectionBy is \(query.sectionBy); index \(query.index) has \(components) components", id: id)
        }
        let known = Set(entity.fields.map(\.name))
        if let unknown = (query.fields ?? []).first(where: { !known.contains($0) && !known.contains(String($0.prefix { $0 != "." })) }) {
            throw LiveError(.unknownField, "\(query.entity) has no field named \(unknown); its fields are "
                + known.sorted().joined(separator: ", "), id: id)
        }
        var converted: LiveQuery
        do {
            converted = try Self.converting(query, of: entity)
        } catch {
            throw LiveError(.invalidRange, "\(error)", id: id)
        }
        if let filter = query.filter {
            guard filter.testCount <= limits.filterTests else {
                throw LiveError(.limitExceeded, "a filter makes at most \(limits.filterTests) field tests; this one makes \(filter.testCount)", id: id)
            }
            do {
                converted.filter = try entity.checkedFilter(filter)
            } catch let FeedstoreError.unknownField(_, field, _, _) {
                throw LiveError(.unknownField, "\(query.entity) has no field named \(field); its fields are " + known.sorted().joined(separator: ", "), id: id)
            } catch let FeedstoreError.invalidFilter(_, reason) {
                throw LiveError(.invalidFilter, reason, id: id)
            }
        }
        return converted
    }

    /// Keeps a batch taken from a subscription's watcher until the transport takes it; the
    /// subscription's pump waits here, so its watcher is not read again before then.
    private func hold(_ members: [String: FieldValue], toSequence: UInt64, in subscription: Subscription, id: FieldValue) async {
        var members = members
        if subscription.resetNext {
            members["reset"] = .bool(true)
            subscription.resetNext = false
        }
        subscription.held = (ServerFrame.batch(id: id, members), toSequence)
        ready.append(id)
        wake()
        await withCheckedContinuation { subscription.taken = $0 }
    }

    /// The batch a subscription holds, which its pump may now replace; it counts as sent.
    private func take(_ subscription: Subscription) -> String? {
        guard let held = subscription.held else { return nil }
        subscription.held = nil
        subscription.taken?.resume()
        subscription.taken = nil
        subscription.sent(toSequence: held.toSequence)
        return held.frame
    }

    private func fail(_ id: FieldValue, _ error: any Error) {
        guard subscriptions[id] != nil else { return }
        remove(id)
        send(.text(ServerFrame.error(storeError(error, id: id))))
    }

    private func remove(_ id: FieldValue) {
        guard let subscription = subscriptions.removeValue(forKey: id) else { return }
        subscription.watcher.cancel()
        subscription.pump?.cancel()
        subscription.held = nil
        subscription.taken?.resume()
        subscription.taken = nil
        ready.removeAll { $0 == id }
    }

    /// The refusal a client gets for a store error, whose detail (paths, internals) goes to
    /// the server's log only.
    private func storeError(_ error: any Error, id: FieldValue?) -> LiveError {
        let refusal = LiveError.from(error, id: id)
        logger.error("live query failed", metadata: ["session": "\(token.prefix(8))", "subscription": "\(id?.jsonText ?? "-")",
                                                       "code": "\(refusal.code.rawValue)", "error": "\(error)"])
        return refusal
    }

    private func send(_ reply: Reply) {
        outbox.append(reply)
        wake()
    }

    private func wake() {
        for continuation in waiting { continuation.resume() }
        waiting = []
    }

    /// The rows at positions `offset..<offset + limit` of the shown snapshot, across sections.
    private func rowsFrame(_ id: FieldValue, offset: Int, limit: Int) -> String {
        guard let subscription = subscriptions[id], case let .indexes(watcher) = subscription.watcher else {
            return ServerFrame.error(LiveError(.unknownSubscription, "no subscription \(id.jsonText) is open", id: id))
        }
        do {
            return ServerFrame.rows(id: id, offset: offset, try watcher.objects(at: offset ..< offset + limit))
        } catch {
            return ServerFrame.error(storeError(error, id: id))
        }
    }
}

/// One open subscription: its query, its watcher, and the batch it holds.
private final class Subscription {
    enum Watching {
        case objects(DynamicWatcher)
        case indexes(DynamicIndexWatcher)

        func setWindow(offset: Int, limit: Int) {
            switch self {
            case let .objects(w): w.setWindow(offset: offset, limit: limit)
            case let .indexes(w): w.setWindow(offset: offset, limit: limit)
            }
        }

        /// The watcher's identity, which its pump checks against the subscription of its id.
        var identity: ObjectIdentifier {
            switch self {
            case let .objects(w): ObjectIdentifier(w)
            case let .indexes(w): ObjectIdentifier(w)
            }
        }

        func cancel() {
            switch self {
            case let .objects(w): w.cancel()
            case let .indexes(w): w.cancel()
            }
        }
    }

    let query: LiveQuery
    let watcher: Watching
    /// The window the watcher has now (`query`'s, moved by `setWindow`).
    var window: (offset: Int, limit: Int)?
    var pump: Task<Void, Never>?
    /// A batch frame taken from the watcher and not yet sent.
    var held: (frame: String, toSequence: UInt64)?
    /// The pump, waiting for `held` to be sent.
    var taken: CheckedContinuation<Void, Never>?
    /// Whether the next batch opens the subscription again after a `resume` (a `reset`).
    var resetNext = false
    /// The `toSequence` of the last batch sent, and how many batches in a row were sent with it
    /// (a window moved with no commit keeps the sequence).
    private var lastSent: (toSequence: UInt64, batches: Int)?

    init(query: LiveQuery, watcher: Watching) {
        self.query = query
        self.watcher = watcher
        window = query.limit.map { (query.offset, $0) }
    }

    func sent(toSequence: UInt64) {
        lastSent = (toSequence, lastSent?.toSequence == toSequence ? lastSent!.batches + 1 : 1)
    }

    /// Whether a client that applied the batch ending at `applied` (nil: none) and now asks for
    /// `query` can go on from the batches that follow: it has exactly what was sent, and asks
    /// for the same query, its window aside.
    func continues(with query: LiveQuery, applied: UInt64?) -> Bool {
        var asked = query, held = self.query
        (asked.offset, asked.limit, held.offset, held.limit) = (0, asked.limit.map { _ in 0 }, 0, held.limit.map { _ in 0 })
        guard asked == held else { return false }
        switch (applied, lastSent) {
        case (nil, nil): return true
        case let (applied?, sent?): return applied == sent.toSequence && sent.batches == 1
        default: return false
        }
    }
}

/// `perSecond` events a second, in bursts of as many.
struct TokenBucket {
    let perSecond: Int
    private var tokens: Double
    private var last = ContinuousClock.now

    init(perSecond: Int) {
        self.perSecond = perSecond
        tokens = Double(perSecond)
    }

    mutating func take() -> Bool {
        let now = ContinuousClock.now
        let elapsed = now - last
        last = now
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        tokens = min(Double(perSecond), tokens + seconds * Double(perSecond))
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
