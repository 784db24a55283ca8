//! The HTTP messages inside WARC `request` and `response` blocks, rebuilt from what
//! a segment stores.
//!
//! trawl's HTTP client decodes `gzip`/`deflate`/`br` bodies and, when it does,
//! removes `Content-Encoding` and `Content-Length` from the headers it hands on, so
//! the stored headers already describe the decoded payload except for framing:
//! `Transfer-Encoding` (the payload is de-chunked) and `Content-Length` (absent after
//! decoding, or wrong when the body was cut at `fetch.max_content_bytes`). Those two
//! are replaced by a `Content-Length` equal to the stored payload, and their original
//! values are kept in the WARC fields `X-Trawl-Original-Transfer-Encoding` and
//! `X-Trawl-Original-Content-Length`.

use reqwest::StatusCode;

use crate::records::ContentRecord;

/// A response block and what the WARC record needs to know about it.
#[derive(Debug, Clone)]
pub struct ResponseBlock {
    /// Status line, headers, blank line, payload.
    pub block: Vec<u8>,
    /// Where the payload starts in `block`.
    pub payload_offset: usize,
    /// Extra WARC fields recording header rewrites.
    pub warc_fields: Vec<(String, String)>,
}

/// The `application/http; msgtype=response` block of a content row.
pub fn response_block(rec: &ContentRecord) -> ResponseBlock {
    let code = u16::try_from(rec.http_status).unwrap_or(0);
    let reason = StatusCode::from_u16(code)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let mut head = format!("HTTP/1.1 {code} {reason}\r\n");
    let mut warc_fields = Vec::new();
    for h in &rec.headers {
        let name = h.name.as_str();
        if name.eq_ignore_ascii_case("transfer-encoding") {
            warc_fields.push(("X-Trawl-Original-Transfer-Encoding".into(), h.value.clone()));
            continue;
        }
        if name.eq_ignore_ascii_case("content-length") {
            if h.value.trim() != rec.content.len().to_string() {
                warc_fields.push(("X-Trawl-Original-Content-Length".into(), h.value.clone()));
            }
            continue;
        }
        head.push_str(name);
        head.push_str(": ");
        head.push_str(&single_line(&h.value));
        head.push_str("\r\n");
    }
    head.push_str(&format!("content-length: {}\r\n\r\n", rec.content.len()));
    let payload_offset = head.len();
    let mut block = head.into_bytes();
    block.extend_from_slice(&rec.content);
    ResponseBlock {
        block,
        payload_offset,
        warc_fields,
    }
}

/// What trawl sent for one URL: its request headers besides those of every request.
#[derive(Debug, Clone, Default)]
pub struct RequestInfo {
    /// The configured User-Agent.
    pub user_agent: String,
    /// `If-None-Match`, when the fetch list carried an ETag.
    pub if_none_match: Option<String>,
    /// `If-Modified-Since`, when the fetch list carried a Last-Modified.
    pub if_modified_since: Option<String>,
}

/// The `application/http; msgtype=request` block of the GET trawl sent for `url`
/// (the headers its client sends: Host, User-Agent, Accept, Accept-Encoding, and
/// the conditional headers of a re-fetch). `None` for a URL that does not parse.
pub fn request_block(url: &str, info: &RequestInfo) -> Option<Vec<u8>> {
    let u = url::Url::parse(url).ok()?;
    let host = u.host_str()?;
    let host = match u.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    };
    let mut target = u.path().to_string();
    if let Some(q) = u.query() {
        target.push('?');
        target.push_str(q);
    }
    let mut text = format!(
        "GET {target} HTTP/1.1\r\nhost: {host}\r\nuser-agent: {}\r\naccept: */*\r\naccept-encoding: gzip,deflate,br\r\n",
        single_line(&info.user_agent)
    );
    if let Some(e) = &info.if_none_match {
        text.push_str(&format!("if-none-match: {}\r\n", single_line(e)));
    }
    if let Some(lm) = &info.if_modified_since {
        text.push_str(&format!("if-modified-since: {}\r\n", single_line(lm)));
    }
    text.push_str("\r\n");
    Some(text.into_bytes())
}

fn single_line(v: &str) -> String {
    v.replace(['\r', '\n'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Header;

    fn content(headers: &[(&str, &str)], body: &[u8]) -> ContentRecord {
        ContentRecord {
            url: "http://a.test:8080/p?q=1".into(),
            host: "a.test".into(),
            fetch_time: 1_700_000_000_000,
            http_status: 200,
            content_type: Some("text/html".into()),
            headers: headers
                .iter()
                .map(|(n, v)| Header {
                    name: n.to_string(),
                    value: v.to_string(),
                })
                .collect(),
            content: body.to_vec(),
            truncated: false,
            ip_address: Some("127.0.0.1".into()),
            score: 1.0,
            depth: 0,
            rendered: None,
            render_status: None,
        }
    }

    #[test]
    fn response_block_fixes_framing_and_records_originals() {
        let rec = content(
            &[
                ("content-type", "text/html"),
                ("transfer-encoding", "chunked"),
                ("content-length", "999"),
            ],
            b"hello",
        );
        let r = response_block(&rec);
        let text = String::from_utf8(r.block.clone()).unwrap();
        assert_eq!(
            text,
            "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: 5\r\n\r\nhello"
        );
        assert_eq!(&r.block[r.payload_offset..], b"hello");
        assert_eq!(
            r.warc_fields,
            vec![
                (
                    "X-Trawl-Original-Transfer-Encoding".to_string(),
                    "chunked".to_string()
                ),
                (
                    "X-Trawl-Original-Content-Length".to_string(),
                    "999".to_string()
                ),
            ]
        );
    }

    #[test]
    fn matching_content_length_is_not_reported() {
        let r = response_block(&content(&[("content-length", "2")], b"hi"));
        assert!(r.warc_fields.is_empty());
        assert!(
            String::from_utf8(r.block)
                .unwrap()
                .ends_with("content-length: 2\r\n\r\nhi")
        );
    }

    #[test]
    fn request_block_has_host_with_port_and_conditionals() {
        let info = RequestInfo {
            user_agent: "trawl/0.1".into(),
            if_none_match: Some("\"e1\"".into()),
            if_modified_since: None,
        };
        let b = request_block("http://a.test:8080/p?q=1", &info).unwrap();
        assert_eq!(
            String::from_utf8(b).unwrap(),
            "GET /p?q=1 HTTP/1.1\r\nhost: a.test:8080\r\nuser-agent: trawl/0.1\r\naccept: */*\r\n\
             accept-encoding: gzip,deflate,br\r\nif-none-match: \"e1\"\r\n\r\n"
        );
        assert!(request_block("not a url", &info).is_none());
    }
}
