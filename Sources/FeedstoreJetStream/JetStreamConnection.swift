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
