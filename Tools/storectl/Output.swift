import Foundation

/// Standard output through one buffer, written 64 KiB at a time: a dump of a million records
/// is a few thousand writes, not a million. On a terminal each line is written as it is made.
/// Commands that wait (`--follow`, `watch`) flush before waiting; `main` flushes at the end.
///
/// A reader that goes away (`storectl dump … | head -1`) ends the command at once with status 0:
/// the output was wanted only up to there.
enum Output {
    private static let capacity = 1 << 16
    nonisolated(unsafe) private static var buffer: [UInt8] = {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(capacity)
        return bytes
    }()
    private static let isTerminal = isatty(STDOUT_FILENO) != 0

    /// Writes `text` and a newline.
    static func line(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        buffer.append(UInt8(ascii: "\n"))
        if isTerminal || buffer.count >= capacity { flush() }
    }

    /// Writes `text` and a newline, and everything buffered, at once: for a reader that waits
    /// for each line.
    static func lineNow(_ text: String) {
        line(text)
        flush()
    }

    /// Writes `text` as it is.
    static func text(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= capacity { flush() }
    }

    /// Writes what is buffered.
    static func flush() {
        let failure = writeAll(buffer, to: STDOUT_FILENO)
        buffer.removeAll(keepingCapacity: true)
        if failure == EPIPE { exit(0) }
        if let failure { StoreAccess.fail("cannot write the output: \(String(cString: strerror(failure)))") }
    }

    /// Writes `text` to standard error at once: errors, progress and status lines. A reader of
    /// standard error that went away loses the text and nothing else: the command goes on, and
    /// its exit status still tells how it ended (`FileHandle`'s write would stop the process
    /// with a trap).
    static func diagnostic(_ text: String) {
        _ = writeAll(Array(text.utf8), to: STDERR_FILENO)
    }

    /// Writes all of `bytes` to `descriptor` (again after an interrupted call); the `errno` of
    /// a write that failed otherwise, or nil.
    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Int32? {
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, $0.count - written) }
            if n >= 0 {
                written += n
            } else if errno != EINTR {
                return errno
            }
        }
        return nil
    }

    /// Lets a closed pipe show as EPIPE from `write` (handled above) instead of a signal that
    /// would end the process with a shell status of 141.
    static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }
}
