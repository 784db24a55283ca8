//! TLS for the test web: a throw-away certificate authority made at start-up, and
//! leaf certificates issued on the fly for whatever name a client asks for (SNI), so
//! every host of the web (`site{i}.web.test`, the hostile and sitemap hosts, any other
//! name) is served over HTTPS with a certificate valid for its name.
//!
//! The CA's certificate is published (`testweb serve --tls --ca-out FILE`) for the
//! crawler to trust (`fetch.ca_file`); its key never leaves the process. One name,
//! [`UNTRUSTED_HOST`], gets a leaf signed by a second CA that is never published, so a
//! crawler that trusts the published CA must reject it (`tls_error`).
//!
//! The same listener serves plain HTTP and TLS: [`is_tls_handshake`] tells them apart
//! by the first byte of a connection (a TLS record of type handshake is `0x16`; no
//! HTTP request starts with it).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::{CertifiedKey, SigningKey};

use trawl::error::{Error, Result};

/// The host name whose certificate is signed by an unpublished CA: a client that
/// verifies certificates against the published CA must refuse it.
pub const UNTRUSTED_HOST: &str = "untrusted.web.test";

/// The name a leaf is issued for when the client sends no SNI (e.g. it connected to
/// an IP address).
pub const DEFAULT_NAME: &str = "web.test";

/// The most leaf certificates kept; beyond it the cache is emptied (names are chosen
/// by clients, so the cache must not grow without bound).
const MAX_CACHED: usize = 100_000;

/// The first byte of a TLS connection: a record of content type handshake (22).
pub const TLS_HANDSHAKE_BYTE: u8 = 0x16;

/// Whether a connection whose first byte is `first` starts a TLS handshake (an HTTP/1
/// request starts with a method name, ASCII letters).
pub fn is_tls_handshake(first: u8) -> bool {
    first == TLS_HANDSHAKE_BYTE
}

fn tls_err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Net(format!("test web TLS: {what}: {e}"))
}

/// One certificate authority: its certificate and an issuer that signs with its key.
struct Ca {
    cert_der: CertificateDer<'static>,
    cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    fn generate(common_name: &str) -> Result<Ca> {
        let key = KeyPair::generate().map_err(|e| tls_err("CA key", e))?;
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, common_name);
        dn.push(DnType::OrganizationName, "trawl test web");
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.serial_number = Some(1u64.into());
        let cert = params
            .self_signed(&key)
            .map_err(|e| tls_err("CA certificate", e))?;
        Ok(Ca {
            cert_der: cert.der().clone(),
            cert_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        })
    }
}

/// The test web's certificates: the published CA, the unpublished one, the leaf key
/// shared by all leaves, and the leaves issued so far, by name.
pub struct TestCa {
    ca: Ca,
    rogue: Ca,
    leaf_key: KeyPair,
    signing_key: Arc<dyn SigningKey>,
    serial: AtomicU64,
    leaves: Mutex<HashMap<String, Arc<CertifiedKey>>>,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa")
            .field("leaves", &self.cached())
            .finish_non_exhaustive()
    }
}

impl TestCa {
    /// Makes a fresh CA (and the unpublished one). Nothing is written anywhere.
    pub fn generate() -> Result<TestCa> {
        let ca = Ca::generate("trawl test web CA")?;
        let rogue = Ca::generate("trawl test web untrusted CA")?;
        let leaf_key = KeyPair::generate().map_err(|e| tls_err("leaf key", e))?;
        let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
        let signing_key = rustls::crypto::ring::sign::any_supported_type(&der)
            .map_err(|e| tls_err("leaf key", e))?;
        Ok(TestCa {
            ca,
            rogue,
            leaf_key,
            signing_key,
            serial: AtomicU64::new(2),
            leaves: Mutex::new(HashMap::new()),
        })
    }

    /// The published CA certificate, PEM: what a client must trust.
    pub fn ca_pem(&self) -> &str {
        &self.ca.cert_pem
    }

    /// The published CA certificate, DER.
    pub fn ca_der(&self) -> &CertificateDer<'static> {
        &self.ca.cert_der
    }

    /// The number of leaf certificates issued and cached.
    pub fn cached(&self) -> usize {
        self.leaves.lock().map(|m| m.len()).unwrap_or(0)
    }

    /// The certificate for `name` (lower-cased), issued on first use and cached:
    /// signed by the published CA, except for [`UNTRUSTED_HOST`].
    pub fn leaf(&self, name: &str) -> Result<Arc<CertifiedKey>> {
        let name = name.to_ascii_lowercase();
        let mut leaves = match self.leaves.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(k) = leaves.get(&name) {
            return Ok(k.clone());
        }
        let mut params = CertificateParams::new(vec![name.clone()])
            .map_err(|e| tls_err(&format!("name {name:?}"), e))?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, name.as_str());
        params.distinguished_name = dn;
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        params.serial_number = Some(self.serial.fetch_add(1, Ordering::Relaxed).into());
        let issuer = if name == UNTRUSTED_HOST {
            &self.rogue.issuer
        } else {
            &self.ca.issuer
        };
        let cert = params
            .signed_by(&self.leaf_key, issuer)
            .map_err(|e| tls_err(&format!("certificate for {name:?}"), e))?;
        let key = Arc::new(CertifiedKey::new(
            vec![cert.der().clone()],
            self.signing_key.clone(),
        ));
        if leaves.len() >= MAX_CACHED {
            leaves.clear();
        }
        leaves.insert(name, key.clone());
        Ok(key)
    }

    /// A rustls server configuration that answers every SNI name with its leaf
    /// (ALPN `http/1.1` only: the test web speaks HTTP/1.1).
    pub fn server_config(self: &Arc<Self>) -> Result<Arc<rustls::ServerConfig>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_err("protocol versions", e))?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(SniResolver(self.clone())));
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(cfg))
    }
}

/// Resolves a client's SNI name to its leaf certificate ([`TestCa::leaf`]).
#[derive(Debug)]
pub struct SniResolver(pub Arc<TestCa>);

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let name = hello.server_name().unwrap_or(DEFAULT_NAME);
        match self.0.leaf(name) {
            Ok(k) => Some(k),
            Err(e) => {
                tracing::debug!("{e}");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_rustls::rustls::RootCertStore;
    use tokio_rustls::rustls::client::WebPkiServerVerifier;
    use tokio_rustls::rustls::client::danger::ServerCertVerifier;
    use tokio_rustls::rustls::pki_types::{ServerName, UnixTime};

    fn verify(ca: &TestCa, name: &str) -> std::result::Result<(), rustls::Error> {
        let mut roots = RootCertStore::empty();
        roots.add(ca.ca_der().clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .unwrap();
        let leaf = ca.leaf(name).unwrap();
        let server = ServerName::try_from(name.to_string()).unwrap();
        verifier
            .verify_server_cert(&leaf.cert[0], &[], &server, &[], UnixTime::now())
            .map(|_| ())
    }

    #[test]
    fn leaves_verify_against_the_published_ca_except_the_untrusted_host() {
        let ca = TestCa::generate().unwrap();
        for name in ["site0.web.test", "hostile.web.test", "a.b.example"] {
            verify(&ca, name).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let e = verify(&ca, UNTRUSTED_HOST).unwrap_err();
        assert!(
            matches!(e, rustls::Error::InvalidCertificate(_)),
            "untrusted: {e:?}"
        );
        // A leaf for one name is not valid for another.
        let leaf = ca.leaf("site1.web.test").unwrap();
        let mut roots = RootCertStore::empty();
        roots.add(ca.ca_der().clone()).unwrap();
        let verifier = WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .unwrap();
        let other = ServerName::try_from("site2.web.test").unwrap();
        assert!(
            verifier
                .verify_server_cert(&leaf.cert[0], &[], &other, &[], UnixTime::now())
                .is_err()
        );
        assert!(ca.ca_pem().starts_with("-----BEGIN CERTIFICATE-----"));
    }

    #[test]
    fn leaves_are_cached_per_name_case_insensitively() {
        let ca = TestCa::generate().unwrap();
        let a = ca.leaf("site0.web.test").unwrap();
        let b = ca.leaf("SITE0.web.test").unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let c = ca.leaf("site1.web.test").unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(ca.cached(), 2);
        // Not IA5 (ASCII): no certificate, the handshake is refused.
        assert!(ca.leaf("caf\u{e9}.web.test").is_err());
    }

    #[test]
    fn sniffs_tls_records() {
        assert!(is_tls_handshake(0x16));
        for first in b"GHPDOCTB" {
            assert!(!is_tls_handshake(*first));
        }
    }
}
