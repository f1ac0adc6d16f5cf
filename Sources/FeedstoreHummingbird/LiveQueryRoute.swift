import FeedstoreLive
import Hummingbird
import HummingbirdWebSocket
import NIOConcurrencyHelpers
import NIOCore

extension RouterMethods where Context: LiveRequestContext, Self: SendableMetatype {
    /// Serves `service`'s live queries as WebSocket connections at `path`, on this router and
    /// behind its middleware. Each text message is a client frame, each frame the service gives
    /// is a text message.
    ///
    /// A connection from a page whose origin `options.origins` refuses, or whose upgrade
    /// request `authenticate` turns into no principal (nil: for example, a bearer token that
    /// names no user), is upgraded and closed at once, before any frame, with close code
    /// ``LiveRefusal/forbiddenOrigin`` (4403) or ``LiveRefusal/unauthorized`` (4401) and a
    /// reason: a page sees a WebSocket's close code, never the HTTP status of a refused upgrade.
    /// A plain `GET` of `path` answers 403, 401 or, when an upgrade would be admitted, 426.
    /// `authenticate` runs once per connection.
    @discardableResult
    public func addLiveQueries<Principal>(
        _ path: RouterPath, service: LiveService<Principal>, options: LiveSocketOptions = LiveSocketOptions(),
        authenticate: @escaping @Sendable (Request, Context) async throws -> Principal?
    ) -> Self {
        ws(path) { request, context in
            guard request.headers[.upgrade]?.lowercased() == "websocket" else {
                // A plain GET: says what an upgrade would meet.
                if let refusal = options.origins.refusal(of: request) {
                    throw HTTPError(.forbidden, message: "\(refusal)")
                }
                guard try await authenticate(request, context) != nil else {
                    throw HTTPError(.unauthorized, headers: [.wwwAuthenticate: "Bearer"], message: LiveRefusal.unauthorized.reason)
                }
                throw HTTPError(.upgradeRequired)
            }
            return .upgrade()
        } onUpgrade: { inbound, outbound, context in
            let request = context.request
            if let refusal = options.origins.refusal(of: request) {
                context.logger.notice("live queries: refused a connection", metadata: ["refusal": "\(refusal)"])
                try await outbound.close(.unknown(LiveRefusal.forbiddenOrigin.rawValue), reason: LiveRefusal.forbiddenOrigin.reason)
                return
            }
            guard let principal = try await authenticate(request, context.requestContext) else {
                try await outbound.close(.unknown(LiveRefusal.unauthorized.rawValue), reason: LiveRefusal.unauthorized.reason)
                return
            }
            let connection = await service.connect(principal)
            do {
                try await serve(connection, inbound: inbound, outbound: outbound, channel: context.requestContext.channel, options: options)
            } catch {
                await connection.close()
                throw error
            }
            await connection.close()
        }
    }
}

extension LiveOrigins {
    /// Why `request` is refused, from its `Origin` values and its `Host`; nil if admitted.
    func refusal(of request: Request) -> Refusal? {
        refusal(origins: request.headers[values: .origin], host: request.head.authority)
    }
}

/// The close codes of a connection the route refuses, before any frame of the protocol (codes
/// 4000–4999 are the application's). Retrying cannot help either: the client stops.
public enum LiveRefusal: UInt16, Sendable, CaseIterable {
    /// No credential, or one that names no principal.
    case unauthorized = 4401
    /// The page's origin is not admitted (``LiveOrigins``), or the request names a host the
    /// server does not answer to.
    case forbiddenOrigin = 4403

    /// The close frame's reason: short, as a close frame's reason must be (123 bytes at most),
    /// and the same for every client, so that it tells nothing about the server.
    public var reason: String {
        switch self {
        case .unauthorized: "unauthorized: give a token the server accepts"
        case .forbiddenOrigin: "forbiddenOrigin: this page's origin may not use the server"
        }
    }
}

/// Why a connection was let go.
struct ClientStoppedReading: Error, CustomStringConvertible {
    let timeout: Duration
    var description: String { "the client read nothing for \(timeout)" }
}

/// When the write in progress began (nil between writes), for the connection's one deadline.
private final class WriteClock: Sendable {
    private let started = NIOLockedValueBox<ContinuousClock.Instant?>(nil)

    var writeStarted: ContinuousClock.Instant? { started.withLockedValue { $0 } }

    func write<T>(_ body: () async throws -> T) async rethrows -> T {
        started.withLockedValue { $0 = .now }
        defer { started.withLockedValue { $0 = nil } }
        return try await body()
    }
}

/// Carries one connection's frames until the client leaves or stops reading.
private func serve(_ connection: LiveConnection, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, channel: any Channel,
                   options: LiveSocketOptions) async throws
{
    let clock = WriteClock()
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
            while let frame = await connection.nextFrame() {
                try await clock.write { try await outbound.writeTextMessage(frame) }
            }
        }
        group.addTask {
            for try await message in inbound.messages(maxSize: options.maxMessageBytes) {
                switch message {
                case let .text(text): await connection.receive(text)
                // Not a frame of the protocol: the session refuses it as not JSON.
                case let .binary(bytes): await connection.receive(String(decoding: bytes.readableBytesView, as: UTF8.self))
                }
            }
        }
        // The deadline: wakes once a timeout, and lets the connection go when one write has
        // waited that long.
        group.addTask {
            while true {
                let started = clock.writeStarted
                if let started, ContinuousClock.now - started >= options.writeTimeout {
                    // Not a close handshake: the client would have to read it.
                    channel.close(promise: nil)
                    throw ClientStoppedReading(timeout: options.writeTimeout)
                }
                try await Task.sleep(until: (started ?? .now) + options.writeTimeout, clock: .continuous)
            }
        }
        // The client left (inbound ended), the session closed, or the client stopped reading.
        _ = try await group.next()
        group.cancelAll()
    }
}
