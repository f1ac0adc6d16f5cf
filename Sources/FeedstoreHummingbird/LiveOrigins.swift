/// Which web pages may use a live-query server. A browser lets any page open a WebSocket to any
/// address, the user's loopback included, and sends the page's origin in the `Origin` header:
/// a server that does not check it serves its store to every site its users have open
/// (cross-site WebSocket hijacking). So a connection is admitted when it carries no `Origin`
/// (programs that are not browsers), comes from the server's own origin (a page the server
/// served), or from an origin allowed here.
///
/// The server's own origin is the one the request's `Host` names. A page of another site can
/// make its own name point at the server's address (DNS rebinding) and then be "same-origin";
/// `hosts` closes that door by admitting only the host names the server answers to (for a
/// server on loopback, ``loopbackHosts``).
public struct LiveOrigins: Sendable, Hashable {
    /// Origins admitted beside the server's own, as browsers send them
    /// (`https://app.example.com`, `http://localhost:3000`), lowercased.
    public var allowed: Set<String>
    /// Whether every origin is admitted (`*` in ``init(allowing:hosts:)``): for servers whose
    /// every connection carries its own credential, never one a browser adds by itself.
    public var allowsEveryOrigin: Bool
    /// The host names (no port, lowercased) that requests may name in `Host`; nil admits any.
    public var hosts: Set<String>?

    /// The loopback names: `127.0.0.1`, `localhost` and `[::1]`.
    public static let loopbackHosts: Set<String> = ["127.0.0.1", "localhost", "[::1]"]

    /// Admits `allowed` origins (`*`: every origin) beside the server's own and requests
    /// without one, naming only `hosts` in `Host` (nil: any host).
    public init(allowing allowed: [String] = [], hosts: Set<String>? = nil) {
        self.allowed = Set(allowed.filter { $0 != "*" }.map { Self.normalized($0) })
        allowsEveryOrigin = allowed.contains("*")
        self.hosts = hosts.map { Set($0.map { $0.lowercased() }) }
    }

    /// Why a request is refused.
    public enum Refusal: Sendable, Hashable, CustomStringConvertible {
        /// Its `Host` names a host the server does not answer to.
        case host(String)
        /// Its `Origin` is neither the server's own nor allowed.
        case origin(String)

        public var description: String {
            switch self {
            case let .host(host): "the host \(host) is not one this server answers to"
            case let .origin(origin): "pages of \(origin) may not use this server; the server admits them with --allow-origin \(origin)"
            }
        }
    }

    /// Whether a request with these `Origin` values and `Host` is admitted; the refusal if not.
    /// A value no browser sends (`ws://…`, `wss://…`: some WebSocket libraries send the URL
    /// they connect to) comes from a program that is not a browser, as no value does; every
    /// other one, `null` included (a sandboxed frame, a file), must be the server's own origin
    /// or an allowed one.
    public func refusal(origins: [String], host: String?) -> Refusal? {
        if let hosts {
            guard let host, hosts.contains(Self.hostName(host)) else { return .host(host ?? "(none)") }
        }
        for origin in origins {
            let asked = Self.normalized(origin)
            if asked.hasPrefix("ws://") || asked.hasPrefix("wss://") { continue }
            if allowsEveryOrigin || allowed.contains(asked) { continue }
            if let host, asked == "http://" + host.lowercased() || asked == "https://" + host.lowercased() { continue }
            return .origin(origin)
        }
        return nil
    }

    /// Whether `origin` is one of the allowed ones (not merely the server's own), so that a
    /// page of it may load the server's scripts.
    public func allowsCrossOrigin(_ origin: String) -> Bool {
        allowsEveryOrigin || allowed.contains(Self.normalized(origin))
    }

    /// Checks that `text` is an origin as browsers send them, `scheme://host[:port]`, or `*`.
    public static func isOrigin(_ text: String) -> Bool {
        if text == "*" { return true }
        guard let separator = text.range(of: "://") else { return false }
        let scheme = text[..<separator.lowerBound], rest = text[separator.upperBound...]
        return ["http", "https"].contains(scheme.lowercased()) && !rest.isEmpty
            && !rest.contains { "/?#@ ".contains($0) }
    }

    private static func normalized(_ origin: String) -> String {
        var text = origin.lowercased()
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }

    /// The name of `Host` without its port: `[::1]:8080` → `[::1]`, `localhost:80` → `localhost`.
    static func hostName(_ host: String) -> String {
        let host = host.lowercased()
        if host.hasPrefix("["), let end = host.firstIndex(of: "]") { return String(host[...end]) }
        return String(host.prefix { $0 != ":" })
    }
}
