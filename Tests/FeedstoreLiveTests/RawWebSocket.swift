import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A WebSocket client on a bare socket, for the faults a library client never makes: it sends
/// what it is told and reads only when told (a client that stops reading), with a receive
/// buffer as small as the system allows.
final class RawWebSocket {
    let socket: Int32
    /// The client's port, which names the connection in the system's socket table.
    let localPort: Int

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Connects to `127.0.0.1:port`, asks to upgrade `path` with a bearer `token` and an
    /// `Origin` when given, and reads the server's answer.
    init(port: Int, path: String, token: String?, origin: String? = nil, receiveBuffer: Int32 = 4096) throws {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.socket = socket
        guard socket >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var size = receiveBuffer
        setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw Failure(description: "connect: errno \(errno)") }
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) } }
        localPort = Int(UInt16(bigEndian: local.sin_port))
        try write(Array(("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                + (token.map { "Authorization: Bearer \($0)\r\n" } ?? "") + (origin.map { "Origin: \($0)\r\n" } ?? "") + "\r\n").utf8))
        // The answer's head, byte by byte, so that no frame after it is read.
        var head: [UInt8] = []
        while !head.suffix(4).elementsEqual([13, 10, 13, 10]) {
            var byte: UInt8 = 0
            guard recv(socket, &byte, 1, 0) == 1 else { throw Failure(description: "the server closed during the upgrade") }
            head.append(byte)
        }
        guard String(decoding: head, as: UTF8.self).hasPrefix("HTTP/1.1 101") else {
            throw Failure(description: "no upgrade: \(String(decoding: head, as: UTF8.self))")
        }
    }

    deinit { close(socket) }

    /// Sends `text` as one masked text frame.
    func send(_ text: String) throws {
        let payload = Array(text.utf8)
        var frame: [UInt8] = [0x81]
        switch payload.count {
        case ..<126: frame.append(0x80 | UInt8(payload.count))
        case ..<65536: frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default: frame.append(0x80 | 127); frame += (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xFF) }
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        try write(frame)
    }

    /// Reads the server's next frame (unmasked, as a server sends them): its opcode and payload.
    func nextFrame() throws -> (opcode: UInt8, payload: [UInt8]) {
        let head = try read(2)
        var length = Int(head[1] & 0x7F)
        if length == 126 { length = try read(2).reduce(0) { $0 << 8 | Int($1) } }
        if length == 127 { length = try read(8).reduce(0) { $0 << 8 | Int($1) } }
        return (head[0] & 0x0F, try read(length))
    }

    /// The close frame the server sends first, before any other frame: its code and reason;
    /// nil when another frame comes first.
    func closeFrame() throws -> (code: Int, reason: String)? {
        let frame = try nextFrame()
        guard frame.opcode == 0x8, frame.payload.count >= 2 else { return nil }
        return (Int(frame.payload[0]) << 8 | Int(frame.payload[1]), String(decoding: frame.payload.dropFirst(2), as: UTF8.self))
    }

    private func read(_ count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = bytes[got...].withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw Failure(description: "the server closed after \(got) of \(count) bytes") }
            got += n
        }
        return bytes
    }

    private func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "send: errno \(errno)") }
            sent += n
        }
    }

    /// The state of the server's end of this connection in the system's socket table
    /// (`/proc/net/tcp`): "01" established, "04" closing with data still unsent, nil once gone.
    func serverSideState(serverPort: Int) throws -> String? {
        let table = try String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)
        let local = String(format: "%04X", serverPort), remote = String(format: "%04X", localPort)
        for line in table.split(separator: "\n").dropFirst() {
            let columns = line.split(separator: " ")
            guard columns.count > 3 else { continue }
            if columns[1].hasSuffix(":" + local), columns[2].hasSuffix(":" + remote) { return String(columns[3]) }
        }
        return nil
    }
}
