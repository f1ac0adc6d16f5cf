import FeedstoreHummingbird
import Testing

/// Which requests a server's origin policy admits, as browsers and other clients send them.
@Suite struct LiveOriginsTests {
    @Test func theServersOwnPagesAllowedOnesAndNonBrowsersAreAdmitted() {
        let origins = LiveOrigins(allowing: ["https://App.example.com/"], hosts: LiveOrigins.loopbackHosts)
        let host = "127.0.0.1:8080"
        #expect(origins.refusal(origins: [], host: host) == nil, "no Origin: not a browser")
        #expect(origins.refusal(origins: ["ws://127.0.0.1"], host: host) == nil, "a WebSocket library's Origin")
        #expect(origins.refusal(origins: ["http://127.0.0.1:8080"], host: host) == nil, "the server's own page")
        #expect(origins.refusal(origins: ["https://app.example.com"], host: host) == nil, "allowed, whatever its case and slash")
        #expect(origins.refusal(origins: ["http://[::1]:8080"], host: "[::1]:8080") == nil)
        #expect(origins.refusal(origins: [], host: "LOCALHOST:8080") == nil)
    }

    @Test func otherPagesAndOtherHostsAreRefused() {
        let origins = LiveOrigins(allowing: ["https://app.example.com"], hosts: LiveOrigins.loopbackHosts)
        let host = "127.0.0.1:8080"
        #expect(origins.refusal(origins: ["https://evil.example"], host: host) == .origin("https://evil.example"))
        #expect(origins.refusal(origins: ["null"], host: host) == .origin("null"), "a sandboxed frame or a file")
        #expect(origins.refusal(origins: ["http://127.0.0.1:9999"], host: host) != nil, "another port is another origin")
        #expect(origins.refusal(origins: ["ws://127.0.0.1", "https://evil.example"], host: host) != nil, "every value counts")
        // DNS rebinding: a page whose name points at loopback is same-origin, but not a loopback host.
        #expect(origins.refusal(origins: ["http://evil.example:8080"], host: "evil.example:8080") == .host("evil.example:8080"))
        #expect(origins.refusal(origins: [], host: nil) == .host("(none)"))
        #expect(LiveOrigins().refusal(origins: ["http://evil.example:8080"], host: "evil.example:8080") == nil,
                "without hosts, the Host decides what the server's own origin is")
    }

    @Test func everyOriginAndOriginSyntax() {
        #expect(LiveOrigins(allowing: ["*"]).refusal(origins: ["https://anywhere.example"], host: "h") == nil)
        #expect(LiveOrigins(allowing: ["*"]).allowsCrossOrigin("https://anywhere.example"))
        #expect(!LiveOrigins().allowsCrossOrigin("http://127.0.0.1:8080"), "the server's own pages need no CORS")
        for good in ["http://localhost:3000", "https://app.example.com", "*"] { #expect(LiveOrigins.isOrigin(good), "\(good)") }
        for bad in ["localhost:3000", "https://app.example.com/path", "ftp://x", "https://", "http://a b"] {
            #expect(!LiveOrigins.isOrigin(bad), "\(bad)")
        }
    }
}
