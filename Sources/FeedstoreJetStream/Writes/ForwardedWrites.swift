import Foundation

/// How a primary answers its replicas' write requests (``JournalShipper``'s `acceptWrites`).
///
/// A primary remembers each request it applied, with the commit that holds it, in the
/// transaction that applies it, so that a request sent again (its reply lost, the primary
/// restarted before replying, a client retrying after a crash) gets its first answer and is not
/// applied twice. It remembers at most ``rememberedRequests`` requests, and none older than
/// ``rememberedFor``, whichever bound is reached first: a retry must come within both. The
/// remembered requests ship with their commits, so a promoted replica keeps answering them.
public struct ForwardedWrites: Sendable, Hashable {
    /// How long an applied request is remembered: one hour by default.
    public var rememberedFor: Duration
    /// How many applied requests are remembered at most: 100,000 by default (about 12 MB).
    public var rememberedRequests: Int

    /// Answers write requests, remembering applied ones for `rememberedFor` and at most
    /// `rememberedRequests` of them.
    public init(rememberedFor: Duration = .seconds(3_600), rememberedRequests: Int = 100_000) {
        self.rememberedFor = rememberedFor
        self.rememberedRequests = rememberedRequests
    }
}
