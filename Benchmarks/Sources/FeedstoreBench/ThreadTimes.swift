import Foundation

/// CPU time (user and system) by thread name, read from `/proc`: this process's threads by the
/// names the system shows (the library names its own threads; the benchmark names those it
/// starts with the library's `nameCurrentThread`), and another process's as a whole. Clock ticks of 1/100 s, so
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

    /// The calling thread's CPU seconds so far, to the nanosecond (a thread that lives for a
    /// fraction of a second would lose most of its time to the ticks of `/proc`).
    static func currentThread() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Seconds spent by each thread name from `earlier` to `self`, for threads alive at both.
    func since(_ earlier: ThreadTimes) -> [String: Double] {
        var spent: [String: Double] = [:]
        for (tid, now) in threads {
            guard let before = earlier.threads[tid] else { continue }
            spent[now.name, default: 0] += now.seconds - before.seconds
        }
        return spent
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
