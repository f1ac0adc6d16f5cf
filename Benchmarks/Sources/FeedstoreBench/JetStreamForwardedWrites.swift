import DemoFeed
@_spi(Benchmarking) import Feedstore
import FeedstoreJetStream
import Foundation
import NATSTestServer

/// Writes forwarded from replicas to the primary over a real `nats-server -js` on loopback: a
/// primary at durability full accepting writes, replicas following it in this process.
/// - Latency of one forwarded one-row write, from the call to its return (the record readable on
///   the writer's own replica), split into legs (committed on the primary, in the stream, applied
///   to the replica, returned), next to the same write made locally on the primary.
/// - Throughput: 16 writers spread over three replicas, each sending one-row writes one after
///   another, next to 16 local writers on the primary.
struct JetStreamForwardedWrites {
    var directory: String
    var samples: Int
    var seconds: Double
    /// Replicas following in this process, the writers spread over them.
    var replicas = 3
    /// Whether the primary keeps a commit log (``StoreOptions/keepsCommitLog``).
    var commitLog = false
    static let stream = "FEED"
    static let writers = 16
    /// The throughput shapes take turns this many times.
    static let rounds = 5

    struct Result {
        /// Per sample, seconds from the call to: committed on the primary, in the stream, applied
        /// to the writer's replica, returned.
        var legs: [[Double]]
        /// Seconds of each local one-row write on the primary.
        var local: [Double]
        var forwardedPerSecond: Double
        /// The same writers as tasks, through the async `write`.
        var forwardedAsyncPerSecond: Double
        var localPerSecond: Double
        /// This process's CPU time (every thread: primary, replicas, writers; not the server)
        /// and context switches per forwarded write, while the 16 threads wrote.
        var forwardedCPUMicroseconds: Double
        var forwardedSwitches: Double
        /// The whole machine's busy CPU time per forwarded write (the NATS server's included).
        var forwardedMachineMicroseconds: Double
        var replicas: Int
        /// Forwarded requests per commit of the primary while the 16 writers ran.
        var requestsPerCommit: Double
        /// Whether the primary kept a commit log.
        var commitLog: Bool
        /// Seconds each shape of writers ran, in all.
        var seconds: Double
        /// The machine's CPU time per forwarded write (the threads shape), µs, by kind of thread.
        var whereTheTimeGoes: [(String, Double)]
    }

    static let callerName = "caller", serverName = "nats-server"
    /// Kinds of threads, by the names the system shows.
    static let threadKinds: [(label: String, names: Set<String>)] = [
        ("group commits (`fs writer`): the primary's, and a replica's when its follower's write waited", ["fs writer"]),
        ("followers applying commits to the replicas", ["follower"]),
        ("the shipper: reading the journal, publishing, acknowledgments", ["shipper"]),
        ("the 16 writing threads: requests encoded and sent, waits", [callerName]),
        ("waits for a replica (`fs replica wait`)", ["fs replica wait"]),
        ("nats-server", [serverName]),
    ]

    /// When the shipper and the followers reached each sequence.
    final class Progress: @unchecked Sendable {
        private let lock = NSLock()
        private var shipped: [(sequence: UInt64, at: UInt64)] = []
        private var applied: [(sequence: UInt64, at: UInt64)] = []
        private var stopping = false
        func didShip(_ sequence: UInt64) { lock.withLock { shipped.append((sequence, DispatchTime.now().uptimeNanoseconds)) } }
        func didApply(_ sequence: UInt64) { lock.withLock { applied.append((sequence, DispatchTime.now().uptimeNanoseconds)) } }
        func stop() { lock.withLock { stopping = true } }
        var running: Bool { lock.withLock { !stopping } }
        func reached(_ sequence: UInt64) -> (shipped: UInt64?, applied: UInt64?) {
            lock.withLock { (shipped.first { $0.sequence >= sequence }?.at, applied.first { $0.sequence >= sequence }?.at) }
        }
    }

    func run() throws -> Result {
        let loopback = try LoopbackServer(directory: directory)
        defer { withExtendedLifetime(loopback) {} }
        let connection = loopback.connection
        var primaryOptions = StoreOptions(durability: .full)
        primaryOptions.keepsCommitLog = commitLog
        let primary = try Store(path: directory + "/primary", entities: DemoFeed.entities, options: primaryOptions)
        defer { primary.close() }
        // No snapshots: the replicas follow the stream from the store's first commit.
        let shipper = try JournalShipper(store: primary, connection: connection, stream: Self.stream, snapshots: nil, acceptWrites: ForwardedWrites())
        var feed = DemoFeed(seed: 42)
        try primary.write { tx in for id in 1...1_000 { try tx.put(feed.contact(id: UInt64(id))) } }
        let progress = Progress()
        nonisolated(unsafe) let runningShipper = shipper
        let shipping = Thread {
            nameCurrentThread("shipper")
            var shipped = runningShipper.shippedSequence
            try? runningShipper.run {
                if runningShipper.shippedSequence != shipped {
                    shipped = runningShipper.shippedSequence
                    progress.didShip(shipped)
                }
                return progress.running
            }
        }
        shipping.start()
        var followers: [ReplicaFollower] = []
        var threads: [Thread] = [shipping]
        for i in 0..<replicas {
            // As a replica runs where snapshots can re-seed it: its commits unsynced.
            let follower = try ReplicaFollower(path: directory + "/replica\(i)", connection: connection, stream: Self.stream, durability: .none)
            nonisolated(unsafe) let runningFollower = follower
            let thread = Thread {
                nameCurrentThread("follower")
                var applied = runningFollower.state?.originSequence ?? 0
                try? runningFollower.run {
                    let now = runningFollower.state?.originSequence ?? 0
                    if i == 0, now != applied {
                        applied = now
                        progress.didApply(now)
                    }
                    return progress.running
                }
            }
            thread.start()
            followers.append(follower)
            threads.append(thread)
        }
        defer {
            progress.stop()
            while threads.contains(where: \.isExecuting) { usleep(1_000) }
            for follower in followers { follower.replica.close() }
        }
        let writers = try followers.map { try ReplicaWriter(replica: $0.replica, connection: connection, stream: Self.stream) }
        let nextID = Locked<UInt64>(1)
        @Sendable func message() -> Message {
            let id = nextID.next()
            var generator = DemoFeed(seed: id)
            return generator.message(id: id, contacts: 1_000)
        }

        // Latency, one write at a time 2 ms apart, from the first replica.
        var legs: [[Double]] = []
        for _ in 0..<(samples / 10) { try writers[0].writeBlocking([try RecordWrite.insert(message())]) }  // warm-up
        for _ in 0..<samples {
            let startDate = Date(), start = DispatchTime.now().uptimeNanoseconds
            let sequence = try writers[0].writeBlocking([try RecordWrite.insert(message())])
            let returned = DispatchTime.now().uptimeNanoseconds
            let committed = try primary.read { try $0.journal(after: sequence - 1, limit: 1).first?.timestamp } ?? startDate
            let reached = progress.reached(sequence)
            func seconds(_ t: UInt64?) -> Double { Double((t ?? returned) - start) / 1e9 }
            legs.append([max(0, committed.timeIntervalSince(startDate)), seconds(reached.shipped), seconds(reached.applied), seconds(returned)])
            usleep(2_000)
        }
        var local: [Double] = []
        for _ in 0..<samples {
            let record = message()
            let start = DispatchTime.now().uptimeNanoseconds
            try primary.write { try $0.insert(record) }
            local.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
            usleep(2_000)
        }

        // Throughput: 16 writers for `seconds` in each shape. The shapes take turns in rounds,
        // so that each meets the stores at the same sizes (a one-row write costs more as they
        // grow: a shape measured after another would pay for the rows the other wrote).
        struct Tally {
            var writes = 0, seconds = 0.0, usage = ProcessUsage(cpuSeconds: 0, switches: 0, machineSeconds: 0)
            /// CPU seconds by thread name (``ThreadTimes``), the server's under ``serverName``.
            var threadSeconds: [String: Double] = [:]
            var perSecond: Double { Double(writes) / max(seconds, 1e-9) }
            mutating func add(_ writes: Int, _ started: Date, _ usedSince: ProcessUsage) {
                self.writes += writes
                seconds += -started.timeIntervalSinceNow
                usage = usage + (ProcessUsage.now - usedSince)
            }
        }
        let span = seconds / Double(Self.rounds)
        // Writers on threads of their own (named `caller`: they end with the round, so each
        // tells its own CPU time).
        let server = loopback.serverProcess
        func onThreads(_ tally: inout Tally, _ write: @escaping @Sendable (Int) throws -> Void) {
            let done = Locked(0), stop = Locked(false), callers = Locked(0.0)
            let group = DispatchGroup()
            let started = Date(), usageBefore = ProcessUsage.now, timesBefore = ThreadTimes.now(other: server)
            for w in 0..<Self.writers {
                group.enter()
                Thread {
                    nameCurrentThread(Self.callerName)
                    let cpuBefore = ThreadTimes.currentThread()
                    while !stop.current {
                        do { try write(w); done.withLock { $0 += 1 } } catch { print("a write failed: \(error)") }
                    }
                    callers.withLock { $0 += ThreadTimes.currentThread() - cpuBefore }
                    group.leave()
                }.start()
            }
            Thread.sleep(forTimeInterval: span)
            stop.withLock { $0 = true }
            tally.add(done.current, started, usageBefore)
            let timesAfter = ThreadTimes.now(other: server)
            group.wait()
            for (name, seconds) in timesAfter.since(timesBefore) where name != Self.callerName { tally.threadSeconds[name, default: 0] += seconds }
            tally.threadSeconds[Self.serverName, default: 0] += timesAfter.process - timesBefore.process
            tally.threadSeconds[Self.callerName, default: 0] += callers.current
        }
        // Writers as tasks of Swift concurrency calling the async API.
        func asTasks(_ tally: inout Tally, _ write: @escaping @Sendable (Int) async throws -> Void) {
            let done = Locked(0), stop = Locked(false)
            let finished = DispatchSemaphore(value: 0)
            let started = Date(), usageBefore = ProcessUsage.now
            for w in 0..<Self.writers {
                Task.detached {
                    while !stop.current {
                        do { try await write(w); done.withLock { $0 += 1 } } catch { print("a write failed: \(error)") }
                    }
                    finished.signal()
                }
            }
            Thread.sleep(forTimeInterval: span)
            stop.withLock { $0 = true }
            tally.add(done.current, started, usageBefore)
            for _ in 0..<Self.writers { finished.wait() }
        }
        let (allWriters, store) = (writers, primary)
        var forwardedTally = Tally(), asyncTally = Tally(), localTally = Tally()
        var forwardedRequests: UInt64 = 0, forwardedCommits: UInt64 = 0
        for _ in 0..<Self.rounds {
            let commitsBefore = try primary.read { try $0.journalBounds().last }
            let writesBefore = nextID.current
            onThreads(&forwardedTally) { w in try allWriters[w % allWriters.count].writeBlocking([try RecordWrite.insert(message())]) }
            forwardedRequests += nextID.current - writesBefore
            forwardedCommits += try primary.read { try $0.journalBounds().last } - commitsBefore
            asTasks(&asyncTally) { w in try await allWriters[w % allWriters.count].write([try RecordWrite.insert(message())]) }
            onThreads(&localTally) { _ in
                let record = message()
                try store.write { try $0.insert(record) }
            }
        }
        let forwarded = forwardedTally.perSecond, forwardedAsync = asyncTally.perSecond, localRate = localTally.perSecond
        let writes = Double(max(forwardedTally.writes, 1)), used = forwardedTally.usage
        let forwardedCost = (cpuMicroseconds: used.cpuSeconds * 1e6 / writes, switches: Double(used.switches) / writes,
                             machineMicroseconds: used.machineSeconds * 1e6 / writes)
        let requestsPerCommit = Double(forwardedRequests) / Double(max(1, forwardedCommits))
        // Where the machine's CPU went while the forwarding threads wrote, per write.
        var whereTheTimeGoes = Self.threadKinds.map { kind in
            (kind.label, forwardedTally.threadSeconds.filter { kind.names.contains($0.key) }.values.reduce(0, +) * 1e6 / writes)
        }
        let named = Set(Self.threadKinds.flatMap(\.names))
        whereTheTimeGoes.append(("other threads of this process: the NATS client's (delivering messages, the primary's write service) and the rest",
                                 forwardedTally.threadSeconds.filter { !named.contains($0.key) }.values.reduce(0, +) * 1e6 / writes))
        whereTheTimeGoes.append(("the rest of the machine: kernel work charged to no thread (interrupts, writeback), other processes",
                                 max(0, forwardedCost.machineMicroseconds - whereTheTimeGoes.map(\.1).reduce(0, +))))
        return Result(legs: legs, local: local, forwardedPerSecond: forwarded, forwardedAsyncPerSecond: forwardedAsync, localPerSecond: localRate,
                      forwardedCPUMicroseconds: forwardedCost.cpuMicroseconds, forwardedSwitches: forwardedCost.switches,
                      forwardedMachineMicroseconds: forwardedCost.machineMicroseconds, replicas: replicas,
                      requestsPerCommit: requestsPerCommit, commitLog: commitLog, seconds: seconds, whereTheTimeGoes: whereTheTimeGoes)
    }

    static func format(_ r: Result) -> [String] {
        func percentile(_ values: [Double], _ p: Double) -> Double {
            let sorted = values.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        func row(_ name: String, _ values: [Double]) -> String {
            "| \(name) | " + [0.5, 0.9, 0.99].map { String(format: "%.2f", percentile(values.map { $0 * 1_000 }, $0)) }.joined(separator: " | ") + " |"
        }
        let names = ["committed on the primary (the commit's timestamp)", "in the stream (the shipper has the acknowledgment)",
                     "applied to the writer's replica", "returned: the record readable on the writer's replica"]
        var lines = ["", "Forwarded writes: one-row inserts sent from a replica to the primary (durability full, group commit\(r.commitLog ? ", each commit made durable through its commit log" : ", LMDB's syncs")) and returned once the writer's replica (durability none) has applied them, \(r.legs.count.formatted()) writes one at a time 2 ms apart, \(r.replicas) replicas following in the same process\n",
                     "| reached | p50 ms | p90 ms | p99 ms |", "|---|---:|---:|---:|"]
        for (i, name) in names.enumerated() { lines.append(row(name, r.legs.map { $0[i] })) }
        lines.append(row("the same insert written on the primary itself", r.local))
        let total = r.legs.map { $0[3] }
        let p50 = percentile(total, 0.5) * 1_000, p99 = percentile(total, 0.99) * 1_000
        lines += ["", "\(writers) writers, one-row inserts one after another; the three shapes take turns, \(rounds) rounds of \(String(format: "%g", r.seconds / Double(rounds))) s each, so that each meets the stores at the same sizes\n",
                  "| \(writers) writers | writes/s |", "|---|---:|",
                  "| forwarded from \(r.replicas) replicas, each returned once readable on its replica (\(String(format: "%.1f", r.requestsPerCommit)) requests a commit; per write: \(Int(r.forwardedMachineMicroseconds)) µs of the machine's CPU, \(Int(r.forwardedCPUMicroseconds)) µs and \(String(format: "%.1f", r.forwardedSwitches)) context switches in this process) | \(Int(r.forwardedPerSecond).formatted()) |",
                  "| the same, the writers tasks awaiting `write` (the async API) | \(Int(r.forwardedAsyncPerSecond).formatted()) |",
                  "| written on the primary itself | \(Int(r.localPerSecond).formatted()) |",
                  "", "Where the machine's CPU goes while the 16 threads forward writes (CPU time of each thread by the name the system shows, and of the server), per write\n",
                  "| thread | µs per write | share |", "|---|---:|---:|"]
        let busy = max(r.whereTheTimeGoes.map(\.1).reduce(0, +), 1e-9)
        lines += r.whereTheTimeGoes.map { "| \($0.0) | \(Int($0.1.rounded())) | \(Int((100 * $0.1 / busy).rounded()))% |" }
        lines += ["", "| target | result | met |", "|---|---:|---|",
                  "| forwarded one-row write readable on its replica, p50: at most 3 ms | \(String(format: "%.2f", p50)) ms | \(p50 <= 3 ? "yes" : "no") |",
                  "| forwarded one-row write readable on its replica, p99: at most 10 ms | \(String(format: "%.2f", p99)) ms | \(p99 <= 10 ? "yes" : "no") |",
                  "| \(writers) writers across replicas: at least 5,000 forwarded writes/s | \(Int(r.forwardedPerSecond).formatted()) | \(r.forwardedPerSecond >= 5_000 ? "yes" : "no") |",
                  "| the same through the async API | \(Int(r.forwardedAsyncPerSecond).formatted()) | \(r.forwardedAsyncPerSecond >= 5_000 ? "yes" : "no") |"]
        return lines
    }
}

/// A value behind a lock, for the benchmark's threads.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R { try lock.withLock { try body(&value) } }
    var current: Value { withLock { $0 } }
}

extension Locked where Value == UInt64 {
    func next() -> UInt64 {
        withLock { value in
            defer { value += 1 }
            return value
        }
    }
}

/// CPU time and context switches of this process, every thread (`getrusage`), and the busy
/// time of the whole machine (`/proc/stat`: every process, the NATS server's included).
struct ProcessUsage {
    var cpuSeconds: Double
    var switches: Int
    var machineSeconds: Double

    static var now: ProcessUsage {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return ProcessUsage(cpuSeconds: seconds(usage.ru_utime) + seconds(usage.ru_stime), switches: usage.ru_nvcsw + usage.ru_nivcsw,
                            machineSeconds: machineBusySeconds())
    }

    /// user, nice, system, irq and softirq time of all cores, in seconds (clock ticks of 1/100 s).
    private static func machineBusySeconds() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") }) else { return 0 }
        let ticks = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard ticks.count >= 7 else { return 0 }
        return (ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6]) / 100
    }

    static func - (a: ProcessUsage, b: ProcessUsage) -> ProcessUsage {
        ProcessUsage(cpuSeconds: a.cpuSeconds - b.cpuSeconds, switches: a.switches - b.switches, machineSeconds: a.machineSeconds - b.machineSeconds)
    }

    static func + (a: ProcessUsage, b: ProcessUsage) -> ProcessUsage {
        ProcessUsage(cpuSeconds: a.cpuSeconds + b.cpuSeconds, switches: a.switches + b.switches, machineSeconds: a.machineSeconds + b.machineSeconds)
    }
}
