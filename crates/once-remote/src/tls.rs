//! TLS for `grpcs://`: rustls on the ring provider, TLS 1.2 and 1.3, ALPN `h2`, the system's trust
//! roots (or the PEM files that `SSL_CERT_FILE`/`SSL_CERT_DIR` name instead), and the server's
//! certificate checked against the URL's host. It says in one sentence why a handshake failed and
//! what to fix; it must never accept a certificate that rustls did not verify.

use std::sync::Arc;

use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::{self, CertificateError, ClientConfig, RootCertStore};

/// What opens TLS sessions to one host: its configuration and the name its certificate must carry.
pub(crate) struct Tls {
    connector: TlsConnector,
    name: ServerName<'static>,
    host: String,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").field("host", &self.host).finish()
    }
}

impl Tls {
    /// Loads the trust roots for sessions to `host` (a DNS name or an IP address, unbracketed).
    /// Loading them once per client, not once per process, lets a test process that sets
    /// `SSL_CERT_FILE` in a child see it.
    pub(crate) fn new(host: &str) -> Result<Tls, String> {
        let name = ServerName::try_from(host.to_owned())
            .map_err(|_| format!("`{host}` is not a name a TLS certificate can carry"))?;
        let loaded = rustls_native_certs::load_native_certs();
        let mut roots = RootCertStore::empty();
        let (added, _unparsable) = roots.add_parsable_certificates(loaded.certs);
        if added == 0 {
            // With no root at all every handshake would fail as "unknown issuer": say why now.
            let why = loaded
                .errors
                .first()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default();
            return Err(format!(
                "no trusted root certificates were found{why}: install the system's CA \
                 certificates or set `SSL_CERT_FILE` to a PEM file of CA certificates"
            ));
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("cannot configure TLS: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        // gRPC servers refuse a TLS session that did not agree on HTTP/2.
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Tls {
            connector: TlsConnector::from(Arc::new(config)),
            name,
            host: host.to_owned(),
        })
    }

    /// The TLS session over `tcp`, or why there is none.
    pub(crate) async fn handshake(&self, tcp: TcpStream) -> Result<TlsStream<TcpStream>, String> {
        self.connector
            .connect(self.name.clone(), tcp)
            .await
            .map_err(|e| self.explain(&e))
    }

    fn explain(&self, e: &std::io::Error) -> String {
        let host = &self.host;
        let rustls_error = e
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>());
        let Some(rustls::Error::InvalidCertificate(certificate)) = rustls_error else {
            // Most often a server that answers the handshake in plaintext, or closes on it.
            return format!(
                "the TLS handshake with `{host}` failed: {e}; if the server does not speak TLS, \
                 use `grpc://`"
            );
        };
        let certificate_of = format!("the TLS certificate of `{host}`");
        match certificate {
            CertificateError::UnknownIssuer => format!(
                "{certificate_of} is not trusted (unknown issuer): if a private CA signed it, \
                 set `SSL_CERT_FILE` to a PEM file that holds it (in place of the system's CAs)"
            ),
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                format!("{certificate_of} is not valid for that name: {certificate}")
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                format!("{certificate_of} has expired: {certificate}")
            }
            other => format!("{certificate_of} is not accepted: {other}"),
        }
    }
}
