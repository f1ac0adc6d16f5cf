import Observation

/// A watched query as an observable object (Observation framework), for SwiftUI-style code:
/// `sections` and `rows` change on the main actor as batches arrive. It holds every row it
/// shows: the whole query, or a page of it (a window, NSFetchedResultsController's
/// `fetchOffset` and `fetchLimit`), which ``setWindow(offset:limit:)`` and ``nextPage()`` move.
/// For lists of any length, use ``LazyLiveList``.
///
/// ```swift
/// @State var inbox = LiveResults(store: store, query: Query(Message.self, index: "byFolderDate"),
///                                options: WatchOptions(window: WatchWindow(offset: 0, limit: 50)))
/// List(inbox.rows) { Text($0.title) }
/// Button("More") { inbox.nextPage() }
/// ```
@MainActor
@Observable
public final class LiveResults<E: Entity> {
    /// The sections, each with its rows, as of ``sequence``.
    public private(set) var sections: [SectionedMirror<E>.Section] = []
    /// The journal sequence the results show.
    public private(set) var sequence: UInt64 = 0
    /// The error that stopped updates, if any.
    public private(set) var error: (any Error)?

    @ObservationIgnored private let watcher: Watcher<E>
    @ObservationIgnored private var task: Task<Void, Never>?

    /// Starts watching `query`; the results fill in with the first batch.
    public init(store: Store, query: Query<E>, options: WatchOptions = WatchOptions()) {
        watcher = store.watch(query, options: options)
        window = options.window
        task = Task { [weak self, watcher] in
            var mirror = SectionedMirror<E>()
            do {
                for try await batch in watcher {
                    try mirror.apply(batch)
                    guard let self else { return }
                    self.sections = mirror.sections
                    self.sequence = mirror.sequence
                }
            } catch {
                self?.error = error
            }
        }
    }

    /// The page shown, when the results were opened with a window.
    public private(set) var window: WatchWindow?

    /// Every row, section after section.
    public var rows: [E] { sections.flatMap(\.rows) }

    /// Shows another page of the query (results opened with a window only): the next batch
    /// takes the rows from the old page to the new one.
    /// - Complexity: O(log n + r) for r rows entering or leaving the page.
    public func setWindow(offset: Int, limit: Int) {
        guard window != nil else { return }
        window = WatchWindow(offset: offset, limit: limit)
        watcher.setWindow(offset: offset, limit: limit)
    }

    /// Shows the page after the current one.
    public func nextPage() {
        guard let window else { return }
        setWindow(offset: window.offset + window.limit, limit: window.limit)
    }

    /// Shows the page before the current one (the first page stays).
    public func previousPage() {
        guard let window else { return }
        setWindow(offset: max(0, window.offset - window.limit), limit: window.limit)
    }

    /// Stops updating.
    public func stop() {
        watcher.cancel()
        task?.cancel()
    }

    isolated deinit {
        watcher.cancel()
        task?.cancel()
    }
}
