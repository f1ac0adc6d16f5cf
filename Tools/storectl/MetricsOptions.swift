import ArgumentParser
import Foundation
import Metrics
import Prometheus

/// `--metrics-port`: the replication metrics (shipped, applied, lag, snapshots, restores), served
/// over HTTP in the Prometheus text format at /metrics.
struct MetricsOptions: ParsableArguments {
    @Option(name: .customLong("metrics-port"), help: "Serve the metrics in the Prometheus text format on this port, at /metrics (all interfaces).")
    var port: Int?

    /// Routes swift-metrics to a Prometheus registry and serves it, when a port was given.
    func start() throws {
        guard let port else { return }
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        try MetricsEndpoint(port: port, registry: registry).start()
    }
}

/// A minimal HTTP/1.1 server for one thing: `GET /metrics`, answered from the registry and
/// closed. Enough for Prometheus and curl; it serves nothing else.
struct MetricsEndpoint: Sendable {
    let port: Int
    let registry: PrometheusCollectorRegistry

    func start() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw ValidationError("cannot open a socket for --metrics-port: \(String(cString: strerror(errno)))") }
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr = in_addr(s_addr: INADDR_ANY)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            close(listener)
            throw ValidationError("cannot listen on port \(port) for --metrics-port: \(reason)")
        }
        let thread = Thread { [self] in
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 { continue }
                answer(client)
                close(client)
            }
        }
        thread.name = "metrics endpoint"
        thread.start()
    }

    private func answer(_ client: Int32) {
        var request = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4_096)
        // The request line and headers, up to the blank line (bodies are not read).
        while request.count < 16_384, !request.ends(with: Array("\r\n\r\n".utf8)) {
            let count = read(client, &buffer, buffer.count)
            if count <= 0 { break }
            request += buffer[0..<count]
        }
        let line = String(decoding: request.prefix { $0 != UInt8(ascii: "\r") }, as: UTF8.self)
        let parts = line.split(separator: " ")
        let (status, body): (String, [UInt8]) = parts.count >= 2 && parts[0] == "GET" && parts[1].split(separator: "?").first == "/metrics"
            ? ("200 OK", registry.emitToBuffer())
            : ("404 Not Found", Array("only /metrics is served here\n".utf8))
        let head = "HTTP/1.1 \(status)\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        for part in [Array(head.utf8), body] {
            var written = 0
            while written < part.count {
                // MSG_NOSIGNAL: a scraper that hung up must not kill storectl with SIGPIPE.
                let count = part[written...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if count <= 0 { return }
                written += count
            }
        }
    }
}

private extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}
