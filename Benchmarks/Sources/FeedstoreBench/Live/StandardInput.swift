import Foundation

/// The lines of standard input, read on a thread of its own (not one of Swift concurrency's
/// shared threads, which the measured server needs): `handle` runs there for each line, and
/// the returned task ends with the input or when `handle` returns false.
func readCommands(_ handle: @escaping @Sendable (String) -> Bool) -> Task<Void, Never> {
    let (ended, end) = AsyncStream<Void>.makeStream()
    let thread = Thread {
        while let line = readLine(), handle(line) {}
        end.finish()
    }
    thread.name = "commands"
    thread.start()
    return Task { for await _ in ended {} }
}

/// Writes a line to standard output at once (the driver reads it through a pipe).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
