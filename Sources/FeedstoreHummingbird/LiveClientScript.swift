import Foundation
import Hummingbird
import NIOCore

extension RouterMethods where Self: SendableMetatype {
    /// Serves the browser client, `feedstore-live.js` (an ES module with no dependencies), at
    /// `path`.
    @discardableResult
    public func addLiveClientScript(_ path: RouterPath = "/feedstore-live.js") -> Self {
        let script = LiveClientScript.text
        return get(path) { _, _ in
            Response(status: .ok, headers: [.contentType: "text/javascript; charset=utf-8", .cacheControl: "no-cache"],
                     body: ResponseBody(byteBuffer: ByteBuffer(string: script)))
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
