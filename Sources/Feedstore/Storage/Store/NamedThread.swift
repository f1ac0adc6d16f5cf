import Foundation

/// Threads the library starts, named for the system as well as for Foundation: `top -H`, `perf`,
/// `gdb` and `/proc/PID/task/*/comm` then show which is the writer, a follower or a shipper.
/// (Foundation on Linux keeps a thread's `name` to itself.)
package enum NamedThread {
    /// The longest name the system keeps (Linux: 15 bytes); longer names are cut there.
    static let systemNameBytes = 15

    /// Starts `body` on a new thread named `name`.
    @discardableResult
    package static func start(_ name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) -> Thread {
        let thread = Thread {
            nameCurrentThread(name)
            body()
        }
        thread.name = name
        if let stackSize { thread.stackSize = stackSize }
        thread.start()
        return thread
    }

    /// Names the calling thread for the system, cut to ``systemNameBytes`` on a character boundary.
    package static func nameCurrentThread(_ name: String) {
        var cut = Substring(name)
        while cut.utf8.count > systemNameBytes { cut = cut.dropLast() }
        #if os(Linux)
        // What `pthread_setname_np` does, which Swift's Glibc module does not declare.
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        _ = String(cut).withCString { write(descriptor, $0, strlen($0)) }
        #elseif canImport(Darwin)
        _ = pthread_setname_np(String(cut))
        #endif
    }
}

/// Names the calling thread for the system as the library names its own (``NamedThread``): for
/// benchmarks that tell the CPU time of the threads they start.
@_spi(Benchmarking) public func nameCurrentThread(_ name: String) {
    NamedThread.nameCurrentThread(name)
}
