// A stand-in for the parts of SwiftUI that the documentation's samples use, with SwiftUI's
// declarations (names, labels, main-actor isolation), so that the samples type-check on Linux
// under Swift 6's strict concurrency. Nothing here runs.
@_exported import Foundation
@_exported import Observation

@MainActor @preconcurrency public protocol View {
    associatedtype Body: View
    @ViewBuilder var body: Body { get }
}

extension Never: View {
    public var body: Never { fatalError() }
}

@MainActor @resultBuilder public struct ViewBuilder {
    public static func buildBlock<Content: View>(_ content: Content) -> Content { content }
    public static func buildBlock<C0: View, C1: View>(_ c0: C0, _ c1: C1) -> TupleView<(C0, C1)> { TupleView((c0, c1)) }
    public static func buildIf<Content: View>(_ content: Content?) -> Content? { content }
    public static func buildEither<T: View, F: View>(first: T) -> ConditionalContent<T, F> { ConditionalContent() }
    public static func buildEither<T: View, F: View>(second: F) -> ConditionalContent<T, F> { ConditionalContent() }
}

extension Optional: View where Wrapped: View {
    public var body: Never { fatalError() }
}

public struct TupleView<T>: View {
    nonisolated public init(_ value: T) {}
    public var body: Never { fatalError() }
}

public struct ConditionalContent<T: View, F: View>: View {
    public var body: Never { fatalError() }
}

public struct Text: View {
    nonisolated public init(_ content: String) {}
    nonisolated public init(verbatim content: String) {}
    public var body: Never { fatalError() }
}

public struct List<Content: View>: View {
    nonisolated public init<Data: RandomAccessCollection, Row: View>(_ data: Data, @ViewBuilder rowContent: @escaping (Data.Element) -> Row)
        where Data.Element: Identifiable, Content == ForEach<Data, Data.Element.ID, Row> {}
    nonisolated public init<Data: RandomAccessCollection, ID: Hashable, Row: View>(_ data: Data, id: KeyPath<Data.Element, ID>,
                                                                          @ViewBuilder rowContent: @escaping (Data.Element) -> Row)
        where Content == ForEach<Data, ID, Row> {}
    nonisolated public init(@ViewBuilder content: () -> Content) {}
    public var body: Never { fatalError() }
}

public struct ForEach<Data: RandomAccessCollection, ID: Hashable, Content: View>: View {
    nonisolated public init(_ data: Data, id: KeyPath<Data.Element, ID>, @ViewBuilder content: @escaping (Data.Element) -> Content) {}
    public var body: Never { fatalError() }
}

extension ForEach where Data.Element: Identifiable, ID == Data.Element.ID {
    nonisolated public init(_ data: Data, @ViewBuilder content: @escaping (Data.Element) -> Content) {}
}

public struct Section<Content: View>: View {
    nonisolated public init(_ title: String, @ViewBuilder content: () -> Content) {}
    public var body: Never { fatalError() }
}

extension View {
    public func onAppear(perform action: (() -> Void)? = nil) -> Self { self }
    public func onDisappear(perform action: (() -> Void)? = nil) -> Self { self }
    public func task(_ action: @escaping @Sendable () async -> Void) -> Self { self }
}

public protocol DynamicProperty {
    mutating func update()
}

extension DynamicProperty {
    public mutating func update() {}
}

public protocol EnvironmentKey {
    associatedtype Value
    static var defaultValue: Value { get }
}

public struct EnvironmentValues {
    public subscript<K: EnvironmentKey>(key: K.Type) -> K.Value {
        get { K.defaultValue }
        set {}
    }
}

@propertyWrapper public struct Environment<Value>: DynamicProperty {
    nonisolated public init(_ keyPath: KeyPath<EnvironmentValues, Value>) {}
    public var wrappedValue: Value { fatalError() }
}

extension View {
    public func environment<V>(_ keyPath: WritableKeyPath<EnvironmentValues, V>, _ value: V) -> some View { self }
}

@propertyWrapper public struct State<Value>: DynamicProperty {
    nonisolated public init(wrappedValue value: Value) { self.value = value }
    private var value: Value
    public var wrappedValue: Value {
        get { value }
        nonmutating set {}
    }
}

public enum ScenePhase: Comparable, Hashable, Sendable {
    case background, inactive, active
}

extension EnvironmentValues {
    public var scenePhase: ScenePhase {
        get { .active }
        set {}
    }
}

extension View {
    public func onChange<V: Equatable>(of value: V, initial: Bool = false, _ action: @escaping (_ oldValue: V, _ newValue: V) -> Void) -> some View {
        self
    }
}
