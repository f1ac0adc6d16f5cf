// A stand-in for the part of SwiftData that meets Feedstore in one file: its `Query` property
// wrapper, whose name Feedstore's `Query` shares. Nothing here runs.
@_exported import Foundation

@propertyWrapper public struct Query<Element, Result> {
    nonisolated public init() {}
    public var wrappedValue: Result { fatalError() }
}
