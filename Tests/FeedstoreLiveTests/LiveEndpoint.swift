import FeedstoreLive

/// What a test talks to as a client would: a bare session, or a service's connection.
protocol LiveEndpoint: Sendable {
    func receive(_ text: String) async
    func nextFrame() async -> String?
}

extension LiveSession: LiveEndpoint {}
extension LiveConnection: LiveEndpoint {}
