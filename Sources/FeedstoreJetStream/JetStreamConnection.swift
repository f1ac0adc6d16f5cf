import Foundation

/// Where a NATS server is and how to authenticate to it. Secrets come from here or from the
/// environment (``fromEnvironment(url:)``), never from command lines, and never appear in errors.
public struct JetStreamConnection: Sendable {
    /// The server's URL, `nats://host:port` (credentials in the URL work, but keep them out of
    /// command lines).
    public var url: String
    /// User and password authentication.
    public var user: String?
    /// The password of ``user``.
    public var password: String?
    /// Token authentication.
    public var token: String?
    /// A `.creds` file (a user JWT and its NKey seed).
    public var credentialsFile: String?
    /// PEM file of the certificate authorities to trust; setting it requires TLS.
    public var trustedCertificates: String?
    /// PEM files of a client certificate and its key, for servers that verify clients.
    public var clientCertificate: String?
    /// The key of ``clientCertificate``.
    public var clientKey: String?
    /// How long a connection attempt or a request may take.
    public var timeout: Duration = .seconds(5)

    /// A connection to `url` without authentication.
    public init(url: String) { self.url = url }

    /// A connection to `url` whose credentials come from the environment: `NATS_USER` and
    /// `NATS_PASSWORD`, `NATS_TOKEN`, `NATS_CREDS` (a file), `NATS_CA`, `NATS_CERT` and
    /// `NATS_KEY` (files).
    public static func fromEnvironment(url: String) -> JetStreamConnection {
        let environment = ProcessInfo.processInfo.environment
        var connection = JetStreamConnection(url: url)
        connection.user = environment["NATS_USER"]
        connection.password = environment["NATS_PASSWORD"]
        connection.token = environment["NATS_TOKEN"]
        connection.credentialsFile = environment["NATS_CREDS"]
        connection.trustedCertificates = environment["NATS_CA"]
        connection.clientCertificate = environment["NATS_CERT"]
        connection.clientKey = environment["NATS_KEY"]
        return connection
    }

    /// Throws ``JetStreamError/invalidURL(url:reason:)`` unless ``url`` is one the NATS client
    /// can connect to: one or more servers separated by commas, each `[scheme://][user[:password]@]host[:port][/path]`
    /// (`nats://`, `tls://` or no scheme; a bracketed IPv6 address for a host), with no
    /// whitespace or control characters in its host and port, and a port from 0 to 65535. Every form the client
    /// takes passes; what it would take only to fail connecting ("bogus url") does not.
    public func checkURL() throws {
        func refuse(_ reason: String) -> JetStreamError { .invalidURL(url: redactedURL, reason: reason) }
        let servers = url.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        for server in servers {
            if server.isEmpty { throw refuse(servers.count > 1 ? "an entry of the comma-separated list is empty" : "it is empty") }
            var rest = Substring(server)
            if let separator = rest.range(of: "://") {
                // (The client takes any scheme, and connects the same way whatever it is.)
                let scheme = rest[..<separator.lowerBound]
                guard let first = scheme.first, first.isASCII, first.isLetter,
                      scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }) else {
                    throw refuse("\"\(scheme)\" is not a URL scheme (such as nats or tls)")
                }
                rest = rest[separator.upperBound...]
            }
            // (A password may hold anything; a host and port may not.)
            if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
            if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
            if let bad = rest.unicodeScalars.first(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }) {
                throw refuse("its address holds U+\(String(bad.value, radix: 16, uppercase: true)) (a space or control character), "
                    + "which no host name or port holds")
            }
            // The port follows the last colon after an IPv6 address's closing bracket.
            let afterAddress = rest.lastIndex(of: "]").map { rest[$0...] } ?? rest
            if rest.hasPrefix("[") != rest.contains("]") { throw refuse("an IPv6 address is not closed by \"]\"") }
            if let colon = afterAddress.lastIndex(of: ":"), case let port = afterAddress[afterAddress.index(after: colon)...], !port.isEmpty {
                guard port.allSatisfy(\.isASCII), port.allSatisfy(\.isNumber), let number = Int(port), number <= 65_535 else {
                    throw refuse("the port \"\(port)\" is not a number from 0 to 65535")
                }
            }
        }
    }

    /// The URL without any user information it holds, for messages.
    var redactedURL: String {
        guard var parts = URLComponents(string: url), parts.user != nil || parts.password != nil else { return url }
        parts.user = nil
        parts.password = nil
        return parts.string ?? "the server"
    }
}

extension JetStreamConnection {
    /// The sequence of the last message `stream` holds (0 when empty), read over a connection of
    /// its own: how far a replica's ``ReplicaState/streamSequence`` is behind.
    /// - Throws: ``JetStreamError`` when the server cannot be reached or there is no such stream.
    public func lastSequence(ofStream stream: String) throws -> UInt64 {
        guard let info = try NATSConnection(self).streamInfo(stream) else {
            throw JetStreamError.serverRefused("reading stream \(stream)", reason: "there is no such stream")
        }
        return info.lastSequence
    }
}
