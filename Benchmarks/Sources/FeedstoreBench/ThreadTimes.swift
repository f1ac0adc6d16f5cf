import Foundation

/// CPU time (user and system) by thread name, read from `/proc`: this process's threads by the
/// names the system shows (the library names its own threads; the benchmark names those it
/// starts with ``name(_:)``), and another process's as a whole. Clock ticks of 1/100 s, so
/// meaningful over seconds of work.
struct ThreadTimes {
    /// Seconds by thread, keyed by thread id, with its name.
    var threads: [Int: (name: String, seconds: Double)] = [:]
    /// Seconds of the other process (all its threads).
    var process = 0.0

    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// This process's threads now, and process `other`'s total.
    static func now(other: Int32?) -> ThreadTimes {
        var times = ThreadTimes()
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks {
            guard let tid = Int(task), let seconds = seconds(stat: "/proc/self/task/\(task)/stat"),
                  let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8) else { continue }
            times.threads[tid] = (name.trimmingCharacters(in: .newlines), seconds)
        }
        if let other { times.process = seconds(stat: "/proc/\(other)/stat") ?? 0 }
        return times
    }

    /// The calling thread's CPU seconds so far.
    static func currentThread() -> Double { seconds(stat: "/proc/thread-self/stat") ?? 0 }

    /// Seconds spent by each thread name from `earlier` to `self`, for threads alive at both.
    func since(_ earlier: ThreadTimes) -> [String: Double] {
        var spent: [String: Double] = [:]
        for (tid, now) in threads {
            guard let before = earlier.threads[tid] else { continue }
            spent[now.name, default: 0] += now.seconds - before.seconds
        }
        return spent
    }

    /// Names the calling thread for the system (Linux keeps 15 bytes).
    static func name(_ name: String) {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        _ = String(decoding: name.utf8.prefix(15), as: UTF8.self).withCString { write(descriptor, $0, strlen($0)) }
    }

    /// utime + stime of a `stat` file, in seconds. The name in parentheses may hold spaces, so
    /// fields are counted after its closing parenthesis (state is field 3, utime 14, stime 15).
    private static func seconds(stat path: String) -> Double? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8), let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / ticksPerSecond
    }
}
