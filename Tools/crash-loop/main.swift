import Feedstore
import FeedstoreTestSupport
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
