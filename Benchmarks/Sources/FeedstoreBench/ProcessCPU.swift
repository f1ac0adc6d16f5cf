import Foundation

/// The CPU time this process spends: its user and system time, every thread's.
enum ProcessCPU {
    /// The process's CPU time so far, in seconds.
    static var seconds: Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// The CPU time per call of `body`, in µs, over `n` calls.
    static func microsPerCall(_ n: Int, _ body: () throws -> Void) rethrows -> Double {
        let start = seconds
        for _ in 0..<n { try body() }
        return (seconds - start) / Double(n) * 1e6
    }
}
