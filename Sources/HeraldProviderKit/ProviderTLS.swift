import NIOSSL
import Synchronization

/// The TLS set-up of provider connections: the system's CAs plus a provider's extra trusted CAs (a local double's).
public enum ProviderTLS {
    private struct ContextKey: Hashable {
        var extraRoots: [NIOSSLCertificate]
        var applicationProtocols: [String]
    }

    private static let contexts = Mutex<[ContextKey: NIOSSLContext]>([:])

    /// A client configuration that trusts the system's CAs and `extraRoots`, offering `applicationProtocols` (ALPN).
    public static func clientConfiguration(
        trusting extraRoots: [NIOSSLCertificate], applicationProtocols: [String] = []
    ) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if !extraRoots.isEmpty { tls.additionalTrustRoots = [.certificates(extraRoots)] }
        tls.applicationProtocols = applicationProtocols
        return tls
    }

    /// The shared context for ``clientConfiguration(trusting:applicationProtocols:)``: one per set of extra CAs and
    /// protocols, made once per process and shared by every provider that asks for the same.
    ///
    /// Making a context parses the system's whole CA bundle (about 150 certificates). A server makes one provider, but
    /// a process that makes many (the test suite builds a provider for every test server, all at once when the run
    /// starts) would otherwise parse the bundle again for each. Made under the lock, so that providers starting
    /// together make it once: the others wait for it rather than each parsing the bundle.
    public static func sharedContext(
        trusting extraRoots: [NIOSSLCertificate], applicationProtocols: [String]
    ) throws -> NIOSSLContext {
        let key = ContextKey(extraRoots: extraRoots, applicationProtocols: applicationProtocols)
        return try contexts.withLock { contexts in
            if let made = contexts[key] { return made }
            let context = try NIOSSLContext(
                configuration: clientConfiguration(trusting: extraRoots, applicationProtocols: applicationProtocols))
            contexts[key] = context
            return context
        }
    }
}
