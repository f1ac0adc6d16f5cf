import Foundation
import Hummingbird
import NIOCore

extension RouterMethods where Self: SendableMetatype {
    /// Serves the browser client, `feedstore-live.js` (an ES module with no dependencies), at
    /// `path`. Pages of the server's own origin load it as any script; pages of an origin that
    /// `origins` allows get it with CORS headers (`Access-Control-Allow-Origin` naming their
    /// origin), which a module imported from another origin needs, and an `OPTIONS` request
    /// gets them too.
    @discardableResult
    public func addLiveClientScript(_ path: RouterPath = "/feedstore-live.js", origins: LiveOrigins = LiveOrigins()) -> Self {
        let script = LiveClientScript.text
        @Sendable func crossOrigin(_ request: Request) -> HTTPFields {
            var headers: HTTPFields = [.vary: "Origin"]
            if let origin = request.headers[.origin], origins.allowsCrossOrigin(origin) {
                headers[.accessControlAllowOrigin] = origin
                headers[.accessControlAllowMethods] = "GET"
            }
            return headers
        }
        get(path) { request, _ in
            var headers = crossOrigin(request)
            headers[.contentType] = "text/javascript; charset=utf-8"
            headers[.cacheControl] = "no-cache"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: script)))
        }
        return on(path, method: .options) { request, _ in
            Response(status: .noContent, headers: crossOrigin(request))
        }
    }
}

/// The browser client's source, shipped with the library.
public enum LiveClientScript {
    /// The text of `feedstore-live.js`.
    public static let text: String = {
        guard let url = Bundle.module.url(forResource: "feedstore-live", withExtension: "js"),
              let text = try? String(contentsOf: url, encoding: .utf8)
        else { fatalError("feedstore-live.js is missing from FeedstoreHummingbird's resources") }
        return text
    }()
}
