import Feedstore
import FeedstoreTestSupport
import FeedstoreDemo
import Foundation

// crash-loop [--cycles N] [--seed S] [--path DIR]
// Kills a durable writer (storectl demo mutate) at random moments, N times, checking after each
// kill that nothing acknowledged was lost and that the store verifies clean (see CrashLoop).
let arguments = CommandLine.arguments.dropFirst()
func option(_ name: String) -> String? {
    arguments.firstIndex(of: name).flatMap { arguments.index(after: $0) < arguments.endIndex ? arguments[arguments.index(after: $0)] : nil }
}
let cycles = option("--cycles").flatMap(Int.init) ?? 2_000
let seed = option("--seed").flatMap(UInt64.init) ?? UInt64(Date().timeIntervalSince1970)
let path = option("--path") ?? NSTemporaryDirectory() + "feedstore-crash-loop-\(getpid())"

// crash-loop --hold-write DIR
// Opens the demo store at DIR, begins a write, prints "inside a write" and waits in it for ever:
// for tests that kill a process inside its write transaction.
if let store = option("--hold-write") {
    do {
        let store = try Store(path: store, entities: DemoFeed.entities, options: StoreOptions(durability: .full))
        var feed = DemoFeed(seed: 1)
        let contact = feed.contact(id: 999_999)
        try store.write { tx in
            try tx.put(contact)
            print("inside a write")
            fflush(nil)
            while true { pause() }
        }
    } catch {
        print("FAILED: \(error)")
        exit(2)
    }
}

// crash-loop --lock-mutex FILE OFFSET
// Maps FILE and locks the process-shared mutex at OFFSET, prints "locked" and waits for ever: for
// tests that kill a process while it holds one of LMDB's mutexes in lock.mdb.
if let file = option("--lock-mutex"), let offset = arguments.last.flatMap({ Int($0) }) {
    let descriptor = open(file, O_RDWR)
    guard descriptor >= 0, let base = mmap(nil, offset + MemoryLayout<pthread_mutex_t>.size, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, 0),
          base != UnsafeMutableRawPointer(bitPattern: -1) else {
        print("FAILED: cannot map \(file)")
        exit(2)
    }
    let code = pthread_mutex_lock((base + offset).assumingMemoryBound(to: pthread_mutex_t.self))
    print(code == 0 ? "locked" : "FAILED: pthread_mutex_lock \(code)")
    fflush(nil)
    while true { pause() }
}

// crash-loop --power-loss [--cycles N] [--seed S] [--durability full|relaxed|none]
// Builds N file states a power loss could leave while a writer commits, and checks each (see
// PowerLoss). Exits 1 when .full or .relaxed breaks its promise.
if arguments.contains("--power-loss") {
    guard let durability = Durability(rawValue: option("--durability") ?? "full") else {
        print("--durability must be full, relaxed or none")
        exit(2)
    }
    print("power loss: \(cycles) crash states, durability \(durability.rawValue), seed \(seed)")
    let check = PowerLoss(durability: durability, seed: seed, storectl: storectlURL, directory: path)
    do {
        let report = try check.run(states: cycles) { print("  \($0.states) states checked") }
        for problem in report.problems { print("  \(problem)") }
        for workload in PowerLoss.Workload.all { print("  \(workload): \(report.statesByWorkload[workload.name, default: 0]) states") }
        print(report.summary)
        try? FileManager.default.removeItem(atPath: path)
        exit(check.broken(report) ? 1 : 0)
    } catch {
        print("FAILED (seed \(seed)): \(error)")
        exit(2)
    }
}
print("crash loop: \(cycles) cycles, seed \(seed), store \(path)")
let started = Date()
do {
    let report = try CrashLoop(path: path, storectl: storectlURL, seed: seed).run(cycles: cycles) { report in
        if report.cycles % 100 == 0 {
            print("  \(report.cycles) cycles, \(report.acknowledged) acknowledged commits, slowest recovery \(Int(report.slowestRecovery)) ms")
        }
    }
    print(String(format: "passed: %d cycles in %.0f s; %d acknowledged commits all present; %d kills while writing; slowest recovery %.0f ms",
                 report.cycles, Date().timeIntervalSince(started), report.acknowledged, report.killsWhileWriting, report.slowestRecovery))
    try? FileManager.default.removeItem(atPath: path)
} catch {
    print("FAILED (seed \(seed), store kept at \(path)): \(error)")
    exit(1)
}
