//! The process's TLS crypto provider: rustls on ring, installed once before any TLS
//! client is built (reqwest's, ours and object_store's, take the process default).

/// Installs ring as the process's rustls crypto provider, unless one is installed
/// already. Every function that builds a TLS client calls it first; it is cheap
/// after the first call.
pub fn install_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err: a provider is installed already (a program's own): it is used.
        let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    });
}
