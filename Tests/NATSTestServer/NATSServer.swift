import Foundation

/// A real `nats-server` with JetStream, on a free loopback port, its store in a directory of the
/// caller's. Stopped (and restartable on the same port and store) by the tests.
public final class NATSServer: @unchecked Sendable {
    public let port: Int
    public let storeDirectory: String
    /// Extra arguments, such as `--user` and `--pass`.
    private let extraArguments: [String]
    private var process: Process?

    public var url: String { "nats://127.0.0.1:\(port)" }
    /// The running server's process id.
    public var processIdentifier: Int32? { process.map(\.processIdentifier) }

    /// Starts a server storing its streams under `directory`.
    public init(directory: String, arguments: [String] = []) throws {
        storeDirectory = directory + "/nats"
        port = try Self.freePort()
        extraArguments = arguments
        try start()
    }

    deinit { stop() }

    /// Starts the server (again) and waits until it accepts connections.
    public func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Self.executable())
        process.arguments = ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", storeDirectory] + extraArguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        let deadline = Date().addingTimeInterval(15)
        while !Self.accepts(port: port) {
            guard process.isRunning, Date() < deadline else {
                stop()
                throw NSError(domain: "NATSServer", code: 1, userInfo: [NSLocalizedDescriptionKey: "nats-server did not start on port \(port)"])
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Stops the server (SIGTERM, then waits for it).
    public func stop() {
        guard let process, process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
        self.process = nil
    }

    static func executable() throws -> String {
        for path in ["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"]
        where FileManager.default.isExecutableFile(atPath: path) {
            return path
        }
        throw NSError(domain: "NATSServer", code: 2, userInfo: [NSLocalizedDescriptionKey: "nats-server is not installed (Tools/test installs it with Debian's nats-server package)"])
    }

    /// A port nothing listens on now (the kernel's choice for a socket bound to port 0).
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw NSError(domain: "NATSServer", code: 3, userInfo: [NSLocalizedDescriptionKey: "no free port"]) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}
