import Foundation

/// This process's anonymous memory (heap and stacks, not mapped files such as a store), in
/// bytes, from the kernel's accounting: how tests bound what watchers and loads keep.
public func anonymousMemory() -> Int {
    let text = (try? String(contentsOfFile: "/proc/self/smaps_rollup", encoding: .utf8)) ?? ""
    let line = text.split(separator: "\n").first { $0.hasPrefix("Anonymous:") } ?? ""
    return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
}
