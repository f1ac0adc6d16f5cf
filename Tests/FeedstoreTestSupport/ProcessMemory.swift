import Foundation

/// This process's anonymous memory (heap and stacks, not mapped files such as a store), in
/// bytes, from the kernel's accounting: how tests bound what watchers and loads keep. The C
/// library's free memory is given back first (`malloc_trim`): it keeps what threads freed in
/// their arenas, which would count what tests running beside the caller allocated and freed.
public func anonymousMemory() -> Int {
    trimMallocArenas()
    return (kilobytes("Anonymous:", in: "/proc/self/smaps_rollup") ?? 0) * 1024
}

/// glibc's `malloc_trim(0)`, looked up at run time (Swift's Glibc module does not declare it).
private func trimMallocArenas() {
    typealias Trim = @convention(c) (Int) -> Int32
    guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, "malloc_trim") else { return }
    _ = unsafeBitCast(symbol, to: Trim.self)(0)
}

/// How much the process's anonymous memory has grown since `before`, looked at again every
/// quarter second for up to `patience` while it is not below `bound`. Tests that run beside the
/// caller in this process allocate too, for a while; what the caller still holds stays, so a
/// real leak is still seen.
public func anonymousMemoryGrowth(since before: Int, settlingBelow bound: Int, patience: TimeInterval = 30) -> Int {
    var growth = anonymousMemory() - before
    let deadline = Date().addingTimeInterval(patience)
    while growth >= bound, Date() < deadline {
        usleep(250_000)
        growth = min(growth, anonymousMemory() - before)
    }
    return growth
}

/// The number of kilobytes on the line of a /proc file that starts with `label`, or nil.
func kilobytes(_ label: String, in file: String) -> Int? {
    field(label, in: (try? String(contentsOfFile: file, encoding: .utf8)) ?? "").flatMap { Int($0) }
}

/// The first word after `label` on the line of a /proc file's `text` that starts with it.
func field(_ label: String, in text: String) -> String? {
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(label) }) else { return nil }
    return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.map(String.init)
}

/// Runs a tool to completion with its standard output sent to `output` (a file path) and returns
/// its exit status and peak resident memory in bytes: the kernel's high-water mark of the tool's
/// own memory (`VmHWM`), which counts mapped file pages it touched as well as its heap, read
/// every 2 ms while it runs. (`wait4`'s `ru_maxrss` would not do: a child started by
/// `posix_spawn` shares this process's memory until it execs, and inherits its peak.)
public func runMeasuringPeakMemory(_ url: URL, _ arguments: [String], output: String = "/dev/null") throws -> (status: Int32, peakMemory: Int) {
    let process = Process()
    process.executableURL = url
    process.arguments = arguments
    // Opened in place: `FileManager.createFile` writes a new file and renames it over the path,
    // which would put a regular file where `/dev/null` was.
    let descriptor = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard descriptor >= 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: output]) }
    process.standardOutput = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    process.standardError = FileHandle(forWritingAtPath: "/dev/null")
    try process.run()
    let pid = process.processIdentifier
    // A reading counts only while the id names the tool started here: the process is named
    // after what it runs (to 15 bytes), a child that has not yet run it would show this
    // process's memory, and once the tool has been reaped its id may name another process or a
    // thread (ids wrap at /proc/sys/kernel/pid_max).
    let name = String(decoding: url.lastPathComponent.utf8.prefix(15), as: UTF8.self)
    let started = startTime(of: pid)
    var peak = 0
    while process.isRunning {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        if field("Name:", in: status) == name, let highWater = field("VmHWM:", in: status).flatMap({ Int($0) }),
           started != nil, startTime(of: pid) == started
        {
            peak = max(peak, highWater * 1024)
        }
        usleep(2_000)
    }
    process.waitUntilExit()
    return (process.terminationStatus, peak)
}

/// When process (or thread) `pid` started, in clock ticks after boot (`/proc/<pid>/stat`'s 22nd
/// field): tells it from a later one given the same id.
func startTime(of pid: Int32) -> UInt64? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let nameEnd = stat.lastIndex(of: ")") else { return nil }
    // The fields after the name start with the 3rd (the state); the start time is the 22nd.
    let fields = stat[stat.index(after: nameEnd)...].split(separator: " ", omittingEmptySubsequences: true)
    return fields.count > 19 ? UInt64(fields[19]) : nil
}
