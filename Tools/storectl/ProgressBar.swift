import Foundation

/// A one-line progress bar on standard error, redrawn in place (only used on a terminal).
final class ProgressBar {
    private let width = 30
    private var lastDrawn = Date.distantPast

    func show(_ stage: String, done: Int, total: Int) {
        // At most ten redraws a second, and always the last step of a stage.
        guard done == total || Date().timeIntervalSince(lastDrawn) > 0.1 else { return }
        lastDrawn = Date()
        let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 1
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let line = "\r[\(bar)] \(Int(fraction * 100))%  \(stage)  \(done.formatted())/\(total.formatted())"
        Output.diagnostic(line + "\u{1B}[K")
    }

    /// Erases the bar so the results start on a clean line.
    func clear() { Output.diagnostic("\r\u{1B}[K") }
}
