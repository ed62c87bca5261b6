import NIOSSL
import Synchronization

/// The TLS contexts of APNs connections: one per set of extra trusted CAs (`HERALD_APNS_CA_PATH`), made once per
/// process and shared by every provider that trusts the same set.
///
/// A context trusts the system's CA bundle as well, and making one reads and parses that whole file (about 150
/// certificates). A server makes one provider, but a process that makes many (the test suite builds a provider for
/// every test server, all at once when the run starts) would otherwise parse the bundle again for each.
enum APNsTLSContexts {
    private static let contexts = Mutex<[[NIOSSLCertificate]: NIOSSLContext]>([:])

    /// The context for connections that trust the system's CAs and `extraRoots`, offering HTTP/2 only (ALPN `h2`).
    ///
    /// Made under the lock, so that providers starting together make it once: the others wait for it rather than
    /// each parsing the bundle.
    static func context(trusting extraRoots: [NIOSSLCertificate]) throws -> NIOSSLContext {
        try contexts.withLock { contexts in
            if let made = contexts[extraRoots] { return made }
            var tls = TLSConfiguration.makeClientConfiguration()
            if !extraRoots.isEmpty { tls.additionalTrustRoots = [.certificates(extraRoots)] }
            tls.applicationProtocols = ["h2"]
            let context = try NIOSSLContext(configuration: tls)
            contexts[extraRoots] = context
            return context
        }
    }
}
