import Observation

/// A watched query as an observable object (Observation framework), for SwiftUI-style code:
/// `sections` and `rows` change on the main actor as batches arrive.
///
/// ```swift
/// @State var inbox = LiveResults(store: store, query: Query(Message.self, index: "byFolderDate"))
/// List(inbox.rows, id: \.id) { Text($0.title) }
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

    /// Every row, section after section.
    public var rows: [E] { sections.flatMap(\.rows) }

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
