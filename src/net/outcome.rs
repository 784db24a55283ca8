//! The mapping from protocol events (HTTP statuses, network errors) to a fetch
//! status and reason, as documented in `docs/fetch.md`.

use std::time::Duration;

use crate::datum::FetchStatus;

/// What a fetch outcome means for the rest of the host's queue.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HostSignal {
    /// Nothing special: go on with the next URL after the delay.
    Continue,
    /// A server or network failure: counts toward `fetch.max_host_exceptions`.
    Failure,
    /// The host name does not resolve: every remaining URL fails the same way.
    DnsFailure,
    /// The server asked to wait (429/503 with Retry-After) this long.
    RetryAfter(Duration),
}

/// The status and reason of an HTTP response's status code; `None` for 3xx
/// redirects (handled by the caller, which knows the Location).
pub fn classify_http(code: u16) -> Option<(FetchStatus, String)> {
    let reason = format!("http_{code}");
    Some(match code {
        200..=299 => (FetchStatus::FetchSuccess, "ok".to_string()),
        304 => (FetchStatus::FetchNotmodified, "not_modified".to_string()),
        300..=399 => return None,
        // Too Many Requests and Request Timeout are transient.
        408 | 429 => (FetchStatus::FetchRetry, reason),
        400..=499 => (FetchStatus::FetchGone, reason),
        _ => (FetchStatus::FetchRetry, reason),
    })
}

/// The status of a redirect response (301/308 permanent, everything else temporary).
pub fn redirect_status(code: u16) -> FetchStatus {
    match code {
        301 | 308 => FetchStatus::FetchRedirPerm,
        _ => FetchStatus::FetchRedirTemp,
    }
}

/// What a non-2xx, non-3xx response means for the host.
pub fn host_signal_for_status(code: u16, retry_after: Option<Duration>) -> HostSignal {
    match (code, retry_after) {
        (429 | 503, Some(d)) => HostSignal::RetryAfter(d),
        (429, None) | (500..=599, None) => HostSignal::Failure,
        (500..=599, Some(_)) => HostSignal::Failure,
        _ => HostSignal::Continue,
    }
}

/// What a response with status `code` means for its host; its Retry-After header
/// (`retry_after`, read at `now_ms`) counts on a 429 or 503. The one rule for pages and
/// for the requests a rendering browser makes.
pub fn response_signal(code: u16, retry_after: Option<&str>, now_ms: i64) -> HostSignal {
    let wait = if matches!(code, 429 | 503) {
        retry_after.and_then(|v| parse_retry_after(v, now_ms))
    } else {
        None
    };
    host_signal_for_status(code, wait)
}

/// What a request that got no response (`reason`, from [`classify_error`]) means for
/// its host: a name that does not resolve closes it, anything else is a failure.
pub fn failure_signal(reason: &str) -> HostSignal {
    if reason == "dns_failure" {
        HostSignal::DnsFailure
    } else {
        HostSignal::Failure
    }
}

/// Parses a Retry-After header: delta seconds or an HTTP date (relative to `now_ms`).
pub fn parse_retry_after(value: &str, now_ms: i64) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let ms = when.timestamp_millis() - now_ms;
    Some(Duration::from_millis(ms.max(0) as u64))
}

/// A marker error returned by the resolver when a host name does not resolve, so
/// that the failure is recognized in reqwest's error chain.
#[derive(Debug)]
pub struct DnsError(pub String);

impl std::fmt::Display for DnsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "dns: {}", self.0)
    }
}

impl std::error::Error for DnsError {}

/// Every reason [`classify_error`] returns: a request that got no HTTP response.
pub const NETWORK_REASONS: [&str; 8] = [
    "dns_failure",
    "connection_refused",
    "timeout",
    "connect_failed",
    "connection_reset",
    "network_error",
    "tls_error",
    "body_error",
];

/// `reason` as one of [`NETWORK_REASONS`], if it is one.
pub fn network_reason(reason: &str) -> Option<&'static str> {
    NETWORK_REASONS.iter().copied().find(|r| *r == reason)
}

/// Whether a network `reason` means the server was never reached: the name did not
/// resolve, or no connection could be made or kept (a TLS handshake error or a
/// broken body means a server answered).
pub fn connect_failure(reason: &str) -> bool {
    !matches!(reason, "tls_error" | "body_error") && network_reason(reason).is_some()
}

/// The reason (`timeout`, `connection_refused`, `dns_failure`, `tls_error`, ...) of a
/// request error, found by walking its source chain (reqwest, hyper-util, io, rustls).
pub fn classify_error(err: &(dyn std::error::Error + 'static)) -> &'static str {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    let mut timeout = false;
    let mut connect = false;
    let mut body = false;
    while let Some(e) = cur {
        if e.downcast_ref::<DnsError>().is_some() {
            return "dns_failure";
        }
        // A failed handshake: a certificate that does not verify (unknown issuer,
        // wrong name, expired), an alert from the server, or a peer that does not
        // speak TLS. tokio-rustls wraps it in an io::Error of kind InvalidData.
        if e.downcast_ref::<tokio_rustls::rustls::Error>().is_some() {
            return "tls_error";
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            match io.kind() {
                K::ConnectionRefused => return "connection_refused",
                K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof => {
                    return "connection_reset";
                }
                K::TimedOut => return "timeout",
                _ => {}
            }
        }
        if let Some(r) = e.downcast_ref::<reqwest::Error>() {
            timeout |= r.is_timeout();
            connect |= r.is_connect();
            body |= r.is_body() || r.is_decode();
        }
        if let Some(h) = e.downcast_ref::<hyper::Error>() {
            if h.is_timeout() {
                timeout = true;
            }
            if h.is_incomplete_message() {
                return "connection_reset";
            }
        }
        let text = e.to_string().to_ascii_lowercase();
        if text.contains("certificate") || text.contains("tls") {
            return "tls_error";
        }
        // io::Error::source skips the wrapped error itself; look inside it.
        let inner = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .map(|i| i as &(dyn std::error::Error + 'static));
        cur = inner.or_else(|| e.source());
    }
    if timeout {
        "timeout"
    } else if connect {
        "connect_failed"
    } else if body {
        "body_error"
    } else {
        "network_error"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_statuses_map_to_nutch_statuses() {
        assert_eq!(
            classify_http(200),
            Some((FetchStatus::FetchSuccess, "ok".into()))
        );
        assert_eq!(
            classify_http(204),
            Some((FetchStatus::FetchSuccess, "ok".into()))
        );
        assert_eq!(
            classify_http(304),
            Some((FetchStatus::FetchNotmodified, "not_modified".into()))
        );
        assert_eq!(classify_http(301), None);
        assert_eq!(
            classify_http(404),
            Some((FetchStatus::FetchGone, "http_404".into()))
        );
        assert_eq!(
            classify_http(410),
            Some((FetchStatus::FetchGone, "http_410".into()))
        );
        assert_eq!(
            classify_http(403),
            Some((FetchStatus::FetchGone, "http_403".into()))
        );
        assert_eq!(
            classify_http(500),
            Some((FetchStatus::FetchRetry, "http_500".into()))
        );
        assert_eq!(
            classify_http(429),
            Some((FetchStatus::FetchRetry, "http_429".into()))
        );
        assert_eq!(redirect_status(301), FetchStatus::FetchRedirPerm);
        assert_eq!(redirect_status(308), FetchStatus::FetchRedirPerm);
        assert_eq!(redirect_status(302), FetchStatus::FetchRedirTemp);
        assert_eq!(redirect_status(303), FetchStatus::FetchRedirTemp);
        assert_eq!(redirect_status(307), FetchStatus::FetchRedirTemp);
    }

    #[test]
    fn retry_after_forms() {
        assert_eq!(
            parse_retry_after(" 120 ", 0),
            Some(Duration::from_secs(120))
        );
        let now = chrono::DateTime::parse_from_rfc2822("Sun, 06 Nov 1994 08:49:37 GMT")
            .unwrap()
            .timestamp_millis();
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:50:37 GMT", now),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:40:37 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn host_signals() {
        let d = Duration::from_secs(5);
        assert_eq!(
            host_signal_for_status(429, Some(d)),
            HostSignal::RetryAfter(d)
        );
        assert_eq!(
            host_signal_for_status(503, Some(d)),
            HostSignal::RetryAfter(d)
        );
        assert_eq!(host_signal_for_status(500, None), HostSignal::Failure);
        assert_eq!(host_signal_for_status(404, None), HostSignal::Continue);
    }

    #[test]
    fn connect_failures_are_the_network_reasons_without_a_server() {
        assert!(connect_failure("connection_refused"));
        assert!(connect_failure("dns_failure"));
        assert!(connect_failure("timeout"));
        assert!(!connect_failure("tls_error"));
        assert!(!connect_failure("http_503"));
        assert_eq!(network_reason("tls_error"), Some("tls_error"));
        assert_eq!(network_reason("robots_unavailable"), None);
    }

    #[test]
    fn io_errors_are_classified() {
        let e = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert_eq!(classify_error(&e), "connection_refused");
        let e = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        assert_eq!(classify_error(&e), "connection_reset");
        let e = std::io::Error::other(DnsError("no such host".into()));
        assert_eq!(classify_error(&e), "dns_failure");
    }

    #[test]
    fn tls_errors_are_classified_inside_io_errors() {
        use tokio_rustls::rustls::{CertificateError, Error as TlsError};
        for tls in [
            TlsError::InvalidCertificate(CertificateError::UnknownIssuer),
            TlsError::InvalidCertificate(CertificateError::NotValidForName),
            TlsError::General("x".into()),
        ] {
            let e = std::io::Error::new(std::io::ErrorKind::InvalidData, tls);
            assert_eq!(classify_error(&e), "tls_error");
        }
    }
}
