//! WARC/1.1 record serialization (ISO 28500:2017): record headers, digests
//! (`sha1:` + RFC 4648 base32, as warcio and wget write them), record ids and
//! per-record gzip members.

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;
use sha1::{Digest, Sha1};

use crate::datum::Millis;

/// One WARC record: its named fields (in order, without `Content-Length`, which
/// is computed) and its block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarcRecord {
    /// Named fields, `WARC-Type` first.
    pub headers: Vec<(String, String)>,
    /// The record block.
    pub block: Vec<u8>,
}

impl WarcRecord {
    /// A record of `warc_type` with `id`, `date` and `block`; more fields are pushed
    /// with [`WarcRecord::add`]. `WARC-Block-Digest` is added by [`WarcRecord::to_bytes`].
    pub fn new(warc_type: &str, id: &str, date: &str, block: Vec<u8>) -> Self {
        WarcRecord {
            headers: vec![
                ("WARC-Type".into(), warc_type.into()),
                ("WARC-Record-ID".into(), id.into()),
                ("WARC-Date".into(), date.into()),
            ],
            block,
        }
    }

    /// Appends a named field.
    pub fn add(&mut self, name: &str, value: impl Into<String>) -> &mut Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The value of the first field called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The record as bytes: version line, fields, `WARC-Block-Digest`,
    /// `Content-Length`, blank line, block, and the two CRLFs that end a record.
    /// Field values have CR and LF replaced by spaces (a field cannot span lines here).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.block.len() + 512);
        out.extend_from_slice(b"WARC/1.1\r\n");
        for (name, value) in &self.headers {
            push_field(&mut out, name, value);
        }
        push_field(&mut out, "WARC-Block-Digest", &sha1_digest(&self.block));
        push_field(&mut out, "Content-Length", &self.block.len().to_string());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.block);
        out.extend_from_slice(b"\r\n\r\n");
        out
    }

    /// The record as one gzip member (a `.warc.gz` file is a concatenation of them).
    pub fn to_gzip_member(&self) -> std::io::Result<Vec<u8>> {
        let raw = self.to_bytes();
        let mut enc = GzEncoder::new(Vec::with_capacity(raw.len() / 3 + 64), Compression::new(6));
        enc.write_all(&raw)?;
        enc.finish()
    }
}

fn push_field(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    for b in value.bytes() {
        out.push(if b == b'\r' || b == b'\n' { b' ' } else { b });
    }
    out.extend_from_slice(b"\r\n");
}

/// RFC 4648 base32 (uppercase, padded) of `bytes`.
pub fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    for chunk in bytes.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let n = buf.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
        let symbols = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < symbols {
                let idx = ((n >> (35 - 5 * i)) & 31) as usize;
                out.push(ALPHABET[idx] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `sha1:<base32>` of `bytes`, the digest form of `WARC-Block-Digest` / `WARC-Payload-Digest`.
pub fn sha1_digest(bytes: &[u8]) -> String {
    format!("sha1:{}", base32(&Sha1::digest(bytes)))
}

/// A `<urn:uuid:...>` record id: a version-4-formatted UUID whose random bits are
/// taken from blake3 of `seed` (so a re-export of the same segment gives the same ids).
pub fn record_id(seed: &[u8]) -> String {
    let h = blake3::hash(seed);
    let mut b = [0u8; 16];
    b.copy_from_slice(&h.as_bytes()[..16]);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "<urn:uuid:{}-{}-{}-{}-{}>",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// A WARC-Date (W3C ISO 8601 in UTC, millisecond precision as WARC/1.1 allows).
pub fn warc_date(ms: Millis) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|d| d.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base32_matches_rfc4648_vectors() {
        assert_eq!(base32(b""), "");
        assert_eq!(base32(b"f"), "MY======");
        assert_eq!(base32(b"fo"), "MZXQ====");
        assert_eq!(base32(b"foo"), "MZXW6===");
        assert_eq!(base32(b"foob"), "MZXW6YQ=");
        assert_eq!(base32(b"fooba"), "MZXW6YTB");
        assert_eq!(base32(b"foobar"), "MZXW6YTBOI======");
    }

    #[test]
    fn sha1_digest_of_empty_block_is_the_known_value() {
        // sha1("") = da39a3ee5e6b4b0d3255bfef95601890afd80709
        assert_eq!(sha1_digest(b""), "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
    }

    #[test]
    fn record_ids_are_v4_uuids_and_stable() {
        let a = record_id(b"x");
        assert_eq!(a, record_id(b"x"));
        assert_ne!(a, record_id(b"y"));
        assert!(a.starts_with("<urn:uuid:") && a.ends_with('>'));
        let uuid = &a[10..a.len() - 1];
        assert_eq!(uuid.len(), 36);
        assert_eq!(&uuid[14..15], "4");
        assert!(matches!(&uuid[19..20], "8" | "9" | "a" | "b"));
    }

    #[test]
    fn record_bytes_have_length_digest_and_terminator() {
        let mut r = WarcRecord::new(
            "resource",
            "<urn:uuid:1>",
            "2026-01-01T00:00:00Z",
            b"abc".to_vec(),
        );
        r.add("WARC-Target-URI", "http://a.test/\r\nx");
        let text = String::from_utf8(r.to_bytes()).unwrap();
        assert!(text.starts_with("WARC/1.1\r\nWARC-Type: resource\r\n"));
        assert!(text.contains("WARC-Target-URI: http://a.test/  x\r\n"));
        assert!(text.contains("Content-Length: 3\r\n\r\nabc\r\n\r\n"));
        assert!(text.contains(&format!("WARC-Block-Digest: {}\r\n", sha1_digest(b"abc"))));
        let gz = r.to_gzip_member().unwrap();
        let mut back = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut back).unwrap();
        assert_eq!(back, r.to_bytes());
    }

    #[test]
    fn warc_dates_are_utc_iso() {
        assert_eq!(warc_date(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    }
}
