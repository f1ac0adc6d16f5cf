import Foundation

/// The directory holding the built products of this test run (the test bundle sits beside them).
public var buildProductsDirectory: URL {
    let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    var directory = executable.deletingLastPathComponent()
    // On Linux the test runner is `<products>/<Package>PackageTests.xctest`.
    while directory.pathExtension == "xctest" || directory.lastPathComponent == "MacOS" || directory.lastPathComponent == "Contents" {
        directory.deleteLastPathComponent()
    }
    return directory
}

/// The `storectl` binary built with the tests.
public var storectlURL: URL { buildProductsDirectory.appendingPathComponent("storectl") }

/// Compiles the preload library whose C source is `source` (a path in the package) into
/// `directory` as `lib<name>.so` with the system's C compiler; returns its path.
public func buildPreloadLibrary(_ source: String, named name: String, in directory: String) throws -> String {
    let library = directory + "/lib\(name).so"
    let result = try runTool(URL(fileURLWithPath: "/usr/bin/env"),
                             ["cc", "-shared", "-fPIC", "-O2", "-o", library, packageRoot.appendingPathComponent(source).path, "-ldl"],
                             timeout: 120)
    guard result.status == 0 else { throw PreloadBuildFailure(description: "cc could not build \(source): \(result.stderr)") }
    return library
}

public struct PreloadBuildFailure: Error, CustomStringConvertible {
    public var description: String
}

/// Runs a built tool to completion (at most `timeout` seconds) and returns its exit status,
/// standard output and standard error.
/// `environment` is added to this process's environment; `input`, when given, is its standard input.
public func runTool(_ url: URL, _ arguments: [String], environment: [String: String] = [:], input: String? = nil,
                    timeout: TimeInterval = 600) throws -> (status: Int32, stdout: String, stderr: String) {
    try RunningTool(url, arguments, environment: environment, input: input).finish(timeout: timeout)
}

/// A tool started in the background whose standard output is collected line by line as it runs.
public final class RunningTool: @unchecked Sendable {
    private let process = Process()
    private let lock = NSCondition()
    private var output = Data()
    private var errors = Data()
    private var finishedReading = 0

    /// Starts `url` with `arguments`, and `environment` added to this process's environment;
    /// `input`, when given, is written to its standard input, which is then closed.
    public init(_ url: URL, _ arguments: [String], environment: [String: String] = [:], input: String? = nil) throws {
        process.executableURL = url
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let stdin = input.map { _ in Pipe() }
        if let stdin { process.standardInput = stdin }
        try process.run()
        if let stdin, let input {
            let writer = stdin.fileHandleForWriting
            Thread.detachNewThread {
                writer.write(Data(input.utf8))
                try? writer.close()
            }
        }
        for (pipe, isOutput) in [(out, true), (err, false)] {
            Thread.detachNewThread { [self] in
                let descriptor = pipe.fileHandleForReading.fileDescriptor
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    // read(2) itself, retried when a signal interrupts it: FileHandle's
                    // availableData stops the process on EINTR.
                    let n = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                    if n < 0 && errno == EINTR { continue }
                    let chunk = n > 0 ? Data(buffer[0..<n]) : Data()
                    lock.lock()
                    if chunk.isEmpty { finishedReading += 1 } else if isOutput { output += chunk } else { errors += chunk }
                    lock.broadcast()
                    lock.unlock()
                    if chunk.isEmpty { return }
                }
            }
        }
    }

    /// Complete lines printed so far.
    public var lines: [String] {
        lock.withLock { String(decoding: output, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }
    }

    /// Waits up to `timeout` seconds until at least `count` complete lines were printed.
    public func waitForLines(_ count: Int, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock()
        defer { lock.unlock() }
        while output.filter({ $0 == UInt8(ascii: "\n") }).count < count {
            if finishedReading == 2 || !lock.wait(until: deadline) { return false }
        }
        return true
    }

    /// Waits up to `timeout` seconds until the tool prints anything, on either output.
    public func waitForOutput(timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock()
        defer { lock.unlock() }
        while output.isEmpty && errors.isEmpty {
            if finishedReading == 2 || !lock.wait(until: deadline) { return false }
        }
        return true
    }

    /// Waits up to `timeout` seconds until the tool prints `text`, on either output.
    public func waitFor(_ text: String, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        let needle = Data(text.utf8)
        lock.lock()
        defer { lock.unlock() }
        while output.range(of: needle) == nil && errors.range(of: needle) == nil {
            if finishedReading == 2 || !lock.wait(until: deadline) { return false }
        }
        return true
    }

    /// Waits for the tool to exit (killing it after `timeout` seconds) and returns its exit
    /// status, standard output and standard error.
    public func finish(timeout: TimeInterval) -> (status: Int32, stdout: String, stderr: String) {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        // SIGKILL: the test runner's children inherit its blocked signals, SIGTERM among them.
        if process.isRunning { kill() }
        process.waitUntilExit()
        lock.lock()
        while finishedReading < 2 { lock.wait() }
        lock.unlock()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self), String(decoding: errors, as: UTF8.self))
    }

    /// Whether the tool is still running.
    public var isRunning: Bool { process.isRunning }

    /// Sends SIGINT, as Ctrl-C does.
    public func interrupt() { process.interrupt() }

    /// Kills the tool at once (SIGKILL): no cleanup, as in a crash or power loss of the process.
    public func kill() { _ = Foundation.kill(process.processIdentifier, SIGKILL) }

    /// The child's process id.
    public var processIdentifier: Int32 { process.processIdentifier }
}
