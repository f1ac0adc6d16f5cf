import Observation

/// What observers of a ``LazyLiveList`` depend on: its shape (count and sections), and each page
/// of rows read. Kept apart from the list because the list is generic, and Swift builds a generic
/// class's key paths at run time on every access, which costs more than reading a cached row;
/// this class's key paths are constants.
///
/// Pages share 16 observation slots (page modulo 16): a change to a page also updates views that
/// read a page 16 pages away, which a screen of rows seldom spans.
final class LazyListObservation: Observable, @unchecked Sendable {
    private let registrar = ObservationRegistrar()
    private var shape = 0
    private var pages = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

    /// The count, sections or error were read.
    func readShape() { registrar.access(self, keyPath: \.shape) }

    /// The count, sections or error changed.
    func shapeChanged() { registrar.withMutation(of: self, keyPath: \.shape) {} }

    /// A row of `page` was read.
    func read(page: Int) { registrar.access(self, keyPath: Self.slot(page)) }

    /// A row of `page` changed, or a row arrived there or left it.
    func changed(page: Int) { registrar.withMutation(of: self, keyPath: Self.slot(page)) {} }

    private static func slot(_ page: Int) -> KeyPath<LazyListObservation, Int> {
        switch page & 15 {
        case 0: \.pages.0
        case 1: \.pages.1
        case 2: \.pages.2
        case 3: \.pages.3
        case 4: \.pages.4
        case 5: \.pages.5
        case 6: \.pages.6
        case 7: \.pages.7
        case 8: \.pages.8
        case 9: \.pages.9
        case 10: \.pages.10
        case 11: \.pages.11
        case 12: \.pages.12
        case 13: \.pages.13
        case 14: \.pages.14
        default: \.pages.15
        }
    }
}
