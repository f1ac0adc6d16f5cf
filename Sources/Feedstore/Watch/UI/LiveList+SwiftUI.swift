#if canImport(SwiftUI)
import SwiftUI

// The thin part that needs SwiftUI: the store in the environment, and property wrappers that
// open a LazyLiveList or a LiveResults (plain Swift, tested on every platform) for a view.

private struct FeedstoreKey: EnvironmentKey {
    static let defaultValue: Store? = nil
}

extension EnvironmentValues {
    /// The store that ``LiveList`` and ``LiveQuery`` follow, set by ``SwiftUI/View/feedstore(_:)``.
    public var feedstore: Store? {
        get { self[FeedstoreKey.self] }
        set { self[FeedstoreKey.self] = newValue }
    }
}

extension View {
    /// Makes `store` the one that ``LiveList`` and ``LiveQuery`` in this view and the views
    /// below it follow.
    public func feedstore(_ store: Store) -> some View {
        environment(\.feedstore, store)
    }
}

/// A ``LazyLiveList`` for a view, in one line, following the store of the environment
/// (``SwiftUI/View/feedstore(_:)``): a list of any length that reads only the rows shown.
///
/// ```swift
/// struct FolderView: View {
///     @LiveList var messages: LazyLiveList<Message>
///
///     init(folder: Int64) {
///         _messages = LiveList(Query(Message.byFolderDate, prefix: folder))
///     }
///
///     var body: some View {
///         List(messages) { Text($0.title) }
///     }
/// }
/// ```
///
/// The query may change with the view's state: when the view is made again with another query
/// or options (another folder, a search text), the list follows the new query from its first
/// batch. The list stops when the view goes away. A view that reads the list with no store in
/// its environment stops the program, naming the modifier it lacks, as SwiftData's `@Query`
/// does without a model container.
@propertyWrapper
public struct LiveList<E: Entity>: DynamicProperty {
    @Environment(\.feedstore) private var store: Store?
    @State private var holder = LiveListHolder<LazyLiveList<E>>()
    private let query: Query<E>
    private let options: WatchOptions
    private let cacheSize: Int

    /// A list of `query`'s rows, with `options` (sections, a window, the fields whose updates
    /// count) and about `cacheSize` rows kept decoded.
    public init(_ query: Query<E>, options: WatchOptions = WatchOptions(), cacheSize: Int = 1_000) {
        self.query = query
        self.options = options
        self.cacheSize = cacheSize
    }

    /// The list, for `List`, `ForEach` and a table's data source.
    @MainActor public var wrappedValue: LazyLiveList<E> {
        holder.current(needing: "@LiveList")
    }

    /// Opens the list, or opens it again when the store, the query or the options changed.
    public mutating func update() {
        let (store, query, options, cacheSize, holder) = (store, query, options, cacheSize, holder)
        MainActor.assumeIsolated {
            holder.follow(store: store, key: LiveListKey(query: query, options: options, cacheSize: cacheSize)) {
                LazyLiveList(store: $0, query: query, options: options, cacheSize: cacheSize)
            } stop: { $0.stop() }
        }
    }
}

/// A ``LiveResults`` for a view, in one line: every row of a small query (or a page of it),
/// following the store of the environment. The wrapped value is the rows; `$name` is the
/// results, for sections and pages.
///
/// ```swift
/// struct ContactsView: View {
///     @LiveQuery(Query(Contact.byName)) var contacts: [Contact]
///
///     var body: some View {
///         List(contacts) { Text($0.name) }
///     }
/// }
/// ```
///
/// As with ``LiveList``, a view made again with another query follows the new one.
@propertyWrapper
public struct LiveQuery<E: Entity>: DynamicProperty {
    @Environment(\.feedstore) private var store: Store?
    @State private var holder = LiveListHolder<LiveResults<E>>()
    private let query: Query<E>
    private let options: WatchOptions

    /// The rows of `query`, with `options` (sections, a window, the fields whose updates count).
    public init(_ query: Query<E>, options: WatchOptions = WatchOptions()) {
        self.query = query
        self.options = options
    }

    /// Every row shown, section after section.
    @MainActor public var wrappedValue: [E] {
        holder.current(needing: "@LiveQuery").rows
    }

    /// The results: sections, the page shown, ``LiveResults/nextPage()``, errors.
    @MainActor public var projectedValue: LiveResults<E> {
        holder.current(needing: "@LiveQuery")
    }

    /// Opens the results, or opens them again when the store, the query or the options changed.
    public mutating func update() {
        let (store, query, options, holder) = (store, query, options, holder)
        MainActor.assumeIsolated {
            holder.follow(store: store, key: LiveListKey(query: query, options: options, cacheSize: 0)) {
                LiveResults(store: $0, query: query, options: options)
            } stop: { $0.stop() }
        }
    }
}

/// What a live list was opened for: another store, query or options opens it again.
private struct LiveListKey<E: Entity>: Hashable {
    var query: Query<E>
    var options: WatchOptions
    var cacheSize: Int
}

/// The list a property wrapper opened, kept by the view's state across its updates.
@MainActor
private final class LiveListHolder<List: AnyObject> {
    private var list: List?
    private var store: Store?
    private var key: AnyHashable?
    private var stop: ((List) -> Void)?

    nonisolated init() {}

    func current(needing wrapper: String) -> List {
        guard let list else {
            preconditionFailure("\(wrapper) found no store in the view's environment: call .feedstore(store) on a view above it")
        }
        return list
    }

    func follow(store: Store?, key: AnyHashable, open: (Store) -> List, stop: @escaping (List) -> Void) {
        guard let store else { return }
        if list != nil, self.store === store, self.key == key { return }
        if let list { self.stop?(list) }
        list = open(store)
        self.store = store
        self.key = key
        self.stop = stop
    }

    isolated deinit {
        if let list { stop?(list) }
    }
}
#endif
