import ArgumentParser
import Dispatch
import Feedstore
import FeedstoreHummingbird
import FeedstoreLive
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore

struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a store's live queries over WebSocket, read-only.",
        discussion: """
        Clients connect to ws://ADDRESS:PORT/live and speak the live-query protocol (JSON text \
        frames: subscribe, setWindow, rows, unsubscribe, resume; the server answers with \
        welcome, batch, rows and error frames). The store is opened read-only, so another \
        process may write it meanwhile, or follow a primary into it (storectl follow): each \
        commit reaches the clients as change batches. GET /feedstore-live.js is the browser \
        client; with --demo, GET / is an inbox page for the demo store: a section per folder, a \
        virtual list of any length scrolled by moving a window, each message's sender, the unread \
        count, and rows that change marked as they arrive (run storectl demo mutate beside it).

        Without --tokens every client may watch everything; the server binds the loopback \
        address unless --bind says otherwise. With --tokens, a client gives its token as \
        `Authorization: Bearer TOKEN` or `?token=TOKEN` (browsers cannot set headers on a \
        WebSocket), and may watch what the file grants it:
          {"TOKEN": [{"entity": "Message", "index": "byContact", "prefix": [7]}],
           "ADMIN-TOKEN": [{"entity": "*"}]}

        Web pages: a browser lets any page it shows open a WebSocket to any address, this \
        machine's loopback included, so the server admits a connection only from its own pages \
        (the demo's), from programs that are not browsers (they send no Origin), and from the \
        origins --allow-origin names (repeatable; `*` admits every origin, for servers whose \
        every client gives a token). Another page's connection is closed at once with code \
        4403, an unknown token's with 4401, before any frame. On a loopback address the server \
        answers only requests naming 127.0.0.1, localhost or [::1] (a page cannot rename itself \
        into this server's origin). GET /feedstore-live.js carries CORS headers for the allowed \
        origins, so that their pages can import it.

        Prints `serving PATH at ws://ADDRESS:PORT/live` once it listens. Stops on Ctrl-C or \
        SIGTERM, letting connections close.

        Examples:
          storectl serve ./demo-store --port 8080 --demo
          storectl serve ./replica --bind 0.0.0.0 --port 8080
          storectl serve ./demo-store --allow-origin http://localhost:3000
        """
    )

    @Argument(help: "The store directory.")
    var path: String

    @Option(help: "The TCP port (0: a free one, printed when listening).")
    var port: Int = 8080

    @Option(help: "The address to listen on.")
    var bind: String = "127.0.0.1"

    @Option(help: "A JSON file mapping bearer tokens to what each may watch.")
    var tokens: String?

    @Option(name: .customLong("allow-origin"), help: "An origin whose pages may connect, such as https://app.example.com (repeatable; * for every origin).")
    var allowOrigins: [String] = []

    @Option(name: .customLong("grace-period"), help: "Seconds a dropped connection's session waits for its client to resume it.")
    var gracePeriod: Int = 60

    @Option(name: .customLong("write-timeout"), help: "Seconds a frame may wait to be written before a client that reads nothing is let go.")
    var writeTimeout: Int = 30

    @Flag(help: "Also serve the demo inbox page at / (for the demo store).")
    var demo = false

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be from 0 to 65535") }
        guard gracePeriod >= 0 else { throw ValidationError("--grace-period must be 0 or more") }
        guard writeTimeout >= 1 else { throw ValidationError("--write-timeout must be 1 or more") }
        if let bad = allowOrigins.first(where: { !LiveOrigins.isOrigin($0) }) {
            throw ValidationError("--allow-origin \(bad) is not an origin: give one as a browser sends it, scheme://host[:port] (for example http://localhost:3000), or *")
        }
    }

    func run() throws {
        try StoreAccess.withReadOnlyStore(path) { store in
            let catalog = try store.catalog
            let grants = tokens.map { file in
                let text: String
                do {
                    text = try String(contentsOfFile: file, encoding: .utf8)
                } catch {
                    StoreAccess.fail("cannot read the tokens file \(file): \(error.localizedDescription)")
                }
                do {
                    return try LiveTokens(json: text, catalog: catalog)
                } catch let error as LiveError {
                    StoreAccess.fail("the tokens file \(file): \(error.message)")
                } catch {
                    StoreAccess.fail("the tokens file \(file): \(error)")
                }
            }
            let loopback = ["127.0.0.1", "::1", "localhost"].contains(bind)
            if grants == nil, !loopback {
                Output.diagnostic("storectl: serving without --tokens: anyone who reaches \(bind):\(port) may watch every query\n")
            }
            let origins = LiveOrigins(allowing: allowOrigins, hosts: loopback ? LiveOrigins.loopbackHosts : nil)
            let server = LiveServer(store: store, path: path, grants: grants, origins: origins, bind: bind, port: port, demo: demo,
                                    gracePeriod: .seconds(gracePeriod), writeTimeout: .seconds(writeTimeout))
            if let failure = server.runUntilStopped() {
                StoreAccess.fail("cannot serve at \(bind):\(port): \(failure)")
            }
        }
    }
}

/// The Hummingbird application of `storectl serve`: the live-query route, the browser client,
/// and a principal that is the bearer token (empty without a tokens file).
struct LiveServer {
    let store: Store
    let path: String
    let grants: LiveTokens?
    let origins: LiveOrigins
    let bind: String
    let port: Int
    let demo: Bool
    let gracePeriod: Duration
    let writeTimeout: Duration

    /// The demo's inbox page.
    static var inboxPage: String {
        guard let url = Bundle.module.url(forResource: "inbox", withExtension: "html"), let page = try? String(contentsOf: url, encoding: .utf8) else {
            StoreAccess.fail("the demo page is missing from storectl's resources")
        }
        return page
    }

    /// Serves until SIGINT or SIGTERM; the error that stopped it otherwise.
    func runUntilStopped() -> (any Error)? {
        let grants = grants
        let service = LiveService<String>(store: store, gracePeriod: gracePeriod) { token, query in
            grants?.admits(token, query) ?? true
        }
        let router = Router(context: BasicLiveRequestContext.self)
        let options = LiveSocketOptions(writeTimeout: writeTimeout, origins: origins)
        router.addLiveQueries("/live", service: service, options: options) { request, _ in
            guard let grants else { return "" }
            let token = request.headers[.authorization].flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
                ?? request.uri.queryParameters["token"].map(String.init)
            guard let token, grants.grants(for: token) != nil else { return nil }
            return token
        }
        router.addLiveClientScript("/feedstore-live.js", origins: origins)
        if demo {
            let page = Self.inboxPage
            router.get("/") { _, _ in
                Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-cache"],
                         body: ResponseBody(byteBuffer: ByteBuffer(string: page)))
            }
        }
        let path = path
        let app = Application(router: router, server: .http1WebSocketUpgrade(webSocketRouter: router, configuration: .init(ws: options.webSocketConfiguration)),
                              configuration: ApplicationConfiguration(address: .hostname(bind, port: port)),
                              onServerRunning: { channel in
                                  let address = channel.localAddress
                                  let host = address?.ipAddress.map { $0.contains(":") ? "[\($0)]" : $0 } ?? "?"
                                  Output.line("serving \(path) at ws://\(host):\(address?.port ?? 0)/live")
                                  Output.flush()
                              }, logger: Logger(label: "storectl.serve"))
        let finished = DispatchSemaphore(value: 0)
        let failure = Locked<(any Error)?>(nil)
        Task {
            do {
                try await app.runService()
            } catch {
                failure.set(error)
            }
            await service.close()
            finished.signal()
        }
        finished.wait()
        return failure.value
    }
}
