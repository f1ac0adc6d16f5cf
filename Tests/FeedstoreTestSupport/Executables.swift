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

/// Runs a built tool to completion and returns its exit status, standard output and standard error.
public func runTool(_ url: URL, _ arguments: [String], input: String? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = url
    process.arguments = arguments
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // Read both pipes while the tool runs, so a full pipe cannot block it.
    let group = DispatchGroup()
    nonisolated(unsafe) var stdoutData = Data(), stderrData = Data()
    group.enter()
    DispatchQueue.global().async { stdoutData = out.fileHandleForReading.readDataToEndOfFile(); group.leave() }
    group.enter()
    DispatchQueue.global().async { stderrData = err.fileHandleForReading.readDataToEndOfFile(); group.leave() }
    process.waitUntilExit()
    group.wait()
    return (process.terminationStatus, String(decoding: stdoutData, as: UTF8.self), String(decoding: stderrData, as: UTF8.self))
}
