import FeedstoreLive
import Hummingbird
import HummingbirdWebSocket
import NIOCore

extension RouterMethods where Context: LiveRequestContext, Self: SendableMetatype {
    /// Serves `service`'s live queries as WebSocket connections at `path`, on this router and
    /// behind its middleware. `authenticate` turns the upgrade request into the principal whose
    /// queries the service's authorizer admits; nil answers 401 and no connection opens (for
    /// example, a bearer token that names no user). Each text message is a client frame, each
    /// frame the service gives is a text message.
    @discardableResult
    public func addLiveQueries<Principal>(
        _ path: RouterPath, service: LiveService<Principal>, options: LiveSocketOptions = LiveSocketOptions(),
        authenticate: @escaping @Sendable (Request, Context) async throws -> Principal?
    ) -> Self {
        ws(path) { request, context in
            // A plain GET reaches this route too.
            guard request.headers[.upgrade]?.lowercased() == "websocket" else { throw HTTPError(.upgradeRequired) }
            guard try await authenticate(request, context) != nil else { throw HTTPError(.unauthorized) }
            return .upgrade()
        } onUpgrade: { inbound, outbound, context in
            guard let principal = try await authenticate(context.request, context.requestContext) else {
                try await outbound.close(.policyViolation, reason: "not authenticated")
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

/// Why a connection was let go.
struct ClientStoppedReading: Error, CustomStringConvertible {
    let timeout: Duration
    var description: String { "the client read nothing for \(timeout)" }
}

/// Carries one connection's frames until the client leaves or stops reading.
private func serve(_ connection: LiveConnection, inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, channel: any Channel,
                   options: LiveSocketOptions) async throws
{
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
            while let frame = await connection.nextFrame() {
                try await withThrowingTaskGroup(of: Bool.self) { write in
                    write.addTask {
                        try await outbound.writeTextMessage(frame)
                        return true
                    }
                    write.addTask {
                        try await Task.sleep(for: options.writeTimeout)
                        return false
                    }
                    let written = try await write.next() ?? false
                    write.cancelAll()
                    guard written else {
                        // Not a close handshake: the client would have to read it.
                        channel.close(promise: nil)
                        throw ClientStoppedReading(timeout: options.writeTimeout)
                    }
                }
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
        // The client left (inbound ended), or stopped reading (a write timed out).
        _ = try await group.next()
        group.cancelAll()
    }
}
