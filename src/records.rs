//! Row types of the segment datasets, the linkdb and the pagerank table, with their
//! Arrow schemas. Like [`crate::datum::CrawlDatum`], these are public schemas,
//! documented column by column in `docs/schemas.md`.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
use serde::{Deserialize, Serialize};

use crate::datum::{FetchStatus, Millis, string_map_type, timestamp_type};
use crate::store::parquet::Record;

fn cached(cell: &'static OnceLock<SchemaRef>, fields: impl FnOnce() -> Vec<Field>) -> SchemaRef {
    cell.get_or_init(|| Arc::new(Schema::new(fields()))).clone()
}

/// One row of `crawl_fetch`: the outcome of fetching one URL of the fetch list.
/// Every URL of `crawl_generate` has exactly one row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FetchRecord {
    /// The URL as it was in the fetch list.
    pub url: String,
    /// Its host.
    pub host: String,
    /// Nutch's fetch status.
    pub status: FetchStatus,
    /// The protocol reason (`ok`, `robots_denied`, `http_404`, `timeout`, ...).
    pub reason: String,
    /// When the fetch finished (ms UTC).
    pub fetch_time: Millis,
    /// The HTTP status, when a response arrived.
    pub http_status: Option<i32>,
    /// The Content-Type header.
    pub content_type: Option<String>,
    /// Bytes of content kept (after decompression, capped).
    pub content_length: Option<i64>,
    /// Location of a redirect, resolved to an absolute URL.
    pub redirect_target: Option<String>,
    /// The ETag header, for conditional re-fetch.
    pub etag: Option<String>,
    /// The Last-Modified header, for conditional re-fetch.
    pub last_modified: Option<String>,
    /// Time from request to the end of the body (ms).
    pub response_time_ms: Option<i64>,
    /// Score from the fetch list (carried for parse's scoring).
    pub score: f64,
    /// Depth from the fetch list.
    pub depth: i32,
}

impl FetchRecord {
    /// The `Location` of a redirect outcome (`fetch_redir_temp`/`fetch_redir_perm`
    /// with a target), as fetch resolved it; `None` for every other row.
    pub fn redirect(&self) -> Option<&str> {
        match self.status {
            FetchStatus::FetchRedirTemp | FetchStatus::FetchRedirPerm => {
                self.redirect_target.as_deref()
            }
            _ => None,
        }
    }
}

impl Record for FetchRecord {
    fn schema() -> SchemaRef {
        static S: OnceLock<SchemaRef> = OnceLock::new();
        cached(&S, || {
            vec![
                Field::new("url", DataType::Utf8, false),
                Field::new("host", DataType::Utf8, false),
                Field::new("status", DataType::Utf8, false),
                Field::new("reason", DataType::Utf8, false),
                Field::new("fetch_time", timestamp_type(), false),
                Field::new("http_status", DataType::Int32, true),
                Field::new("content_type", DataType::Utf8, true),
                Field::new("content_length", DataType::Int64, true),
                Field::new("redirect_target", DataType::Utf8, true),
                Field::new("etag", DataType::Utf8, true),
                Field::new("last_modified", DataType::Utf8, true),
                Field::new("response_time_ms", DataType::Int64, true),
                Field::new("score", DataType::Float64, false),
                Field::new("depth", DataType::Int32, false),
            ]
        })
    }
}

/// One HTTP header of a response (headers may repeat, so a list, not a map).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Header name, lowercase.
    pub name: String,
    /// Header value (lossily decoded as UTF-8).
    pub value: String,
}

/// One row of `content`: the raw response of a successful fetch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentRecord {
    /// The URL fetched.
    pub url: String,
    /// Its host.
    pub host: String,
    /// When the fetch finished (ms UTC).
    pub fetch_time: Millis,
    /// The HTTP status.
    pub http_status: i32,
    /// The Content-Type header.
    pub content_type: Option<String>,
    /// The response headers, in order.
    pub headers: Vec<Header>,
    /// The body, decompressed, at most `fetch.max_content_bytes`.
    #[serde(with = "serde_bytes_compat")]
    pub content: Vec<u8>,
    /// Whether the body was cut at the cap.
    pub truncated: bool,
    /// The peer's IP address.
    pub ip_address: Option<String>,
    /// Score from the fetch list (parse shares it among outlinks).
    pub score: f64,
    /// Depth from the fetch list.
    pub depth: i32,
    /// The DOM after the page's scripts ran in headless Chromium, serialized as HTML
    /// (UTF-8), when the host is rendered (`[fetch.render]`); parse reads it instead of
    /// `content`. Null when the page was not rendered.
    #[serde(default)]
    pub rendered: Option<String>,
    /// How rendering went: `rendered`, `time_budget` (the DOM as it stood at
    /// `fetch.render.timeout`), or `render_failed` (no DOM: the browser failed, see the
    /// fetch log; parse reads `content`). Null when the page was not rendered.
    #[serde(default)]
    pub render_status: Option<String>,
}

mod serde_bytes_compat {
    //! Serializes `Vec<u8>` as bytes (Arrow `Binary`) rather than a list of u8.
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                Ok(v.to_vec())
            }
            fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
                Ok(v)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Vec<u8>, A::Error> {
                let mut out = Vec::new();
                while let Some(b) = a.next_element::<u8>()? {
                    out.push(b);
                }
                Ok(out)
            }
        }
        d.deserialize_byte_buf(V)
    }
}

fn header_list_type() -> DataType {
    let item = Field::new(
        "element",
        DataType::Struct(Fields::from(vec![
            Field::new("name", DataType::Utf8, false),
            Field::new("value", DataType::Utf8, false),
        ])),
        false,
    );
    DataType::List(Arc::new(item))
}

impl Record for ContentRecord {
    fn schema() -> SchemaRef {
        static S: OnceLock<SchemaRef> = OnceLock::new();
        cached(&S, || {
            vec![
                Field::new("url", DataType::Utf8, false),
                Field::new("host", DataType::Utf8, false),
                Field::new("fetch_time", timestamp_type(), false),
                Field::new("http_status", DataType::Int32, false),
                Field::new("content_type", DataType::Utf8, true),
                Field::new("headers", header_list_type(), false),
                Field::new("content", DataType::Binary, false),
                Field::new("truncated", DataType::Boolean, false),
                Field::new("ip_address", DataType::Utf8, true),
                Field::new("score", DataType::Float64, false),
                Field::new("depth", DataType::Int32, false),
                Field::new("rendered", DataType::Utf8, true),
                Field::new("render_status", DataType::Utf8, true),
            ]
        })
    }

    /// The body and the headers.
    fn heavy_bytes(&self) -> usize {
        self.content.len()
            + self.rendered.as_ref().map_or(0, String::len)
            + self
                .headers
                .iter()
                .map(|h| h.name.len() + h.value.len())
                .sum::<usize>()
    }
}

/// One row of `parse_text`: the text of a parsed page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParseTextRecord {
    /// The page URL.
    pub url: String,
    /// Visible text, whitespace collapsed.
    pub text: String,
    /// The main content (boilerplate removed), when extracted.
    pub main_text: Option<String>,
}

impl Record for ParseTextRecord {
    fn schema() -> SchemaRef {
        static S: OnceLock<SchemaRef> = OnceLock::new();
        cached(&S, || {
            vec![
                Field::new("url", DataType::Utf8, false),
                Field::new("text", DataType::Utf8, false),
                Field::new("main_text", DataType::Utf8, true),
            ]
        })
    }

    /// The texts.
    fn heavy_bytes(&self) -> usize {
        self.text.len() + self.main_text.as_ref().map_or(0, String::len)
    }
}

/// One outlink of a page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outlink {
    /// The target, resolved and normalized.
    pub url: String,
    /// Anchor text (or image alt), whitespace collapsed, capped.
    pub anchor: String,
    /// Whether the link carried `rel=nofollow`.
    pub nofollow: bool,
}

fn outlink_list_type() -> DataType {
    let item = Field::new(
        "element",
        DataType::Struct(Fields::from(vec![
            Field::new("url", DataType::Utf8, false),
            Field::new("anchor", DataType::Utf8, false),
            Field::new("nofollow", DataType::Boolean, false),
        ])),
        false,
    );
    DataType::List(Arc::new(item))
}

/// One row of `parse_data`: what parse learned about a page besides its text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParseDataRecord {
    /// The page URL.
    pub url: String,
    /// `parse_success` or `parse_failed`.
    pub status: String,
    /// Why parsing failed or what was special (`ok`, `not_html`, `too_large`, ...).
    pub reason: String,
    /// The `<title>`.
    pub title: Option<String>,
    /// The content type parsed.
    pub content_type: Option<String>,
    /// The charset used to decode the page.
    pub charset: Option<String>,
    /// How the charset was chosen (`bom`, `http_header`, `meta`, `detected`, `default`).
    pub charset_source: Option<String>,
    /// The `lang` attribute of `<html>`.
    pub lang: Option<String>,
    /// `link[rel=canonical]`, resolved.
    pub canonical: Option<String>,
    /// Meta robots / X-Robots-Tag `noindex`.
    pub noindex: bool,
    /// Meta robots / X-Robots-Tag `nofollow` (the page's outlinks were not followed).
    pub nofollow: bool,
    /// Meta robots / X-Robots-Tag `noarchive`.
    pub noarchive: bool,
    /// The page's outlinks, in document order, deduplicated.
    pub outlinks: Vec<Outlink>,
    /// blake3 of the normalized text (hex).
    pub signature: Option<String>,
    /// 64-bit SimHash of the text's word shingles (stored as a signed 64-bit
    /// integer of the same bits: [`simhash_bits`]).
    #[serde(with = "simhash_bits")]
    pub simhash: Option<u64>,
    /// Other metadata (`description`, `keywords`, headings, ...).
    pub metadata: BTreeMap<String, String>,
}

/// A SimHash in Parquet: a signed 64-bit integer with the hash's bits (Delta Lake,
/// and so every reader of a crawl on an object store, has no unsigned type), read
/// back from it or from the unsigned column segments written before.
mod simhash_bits {
    use serde::de::{Deserializer, Visitor};
    use serde::{Deserialize, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(h) => s.serialize_some(&i64::from_ne_bytes(h.to_ne_bytes())),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        Ok(Option::<Bits>::deserialize(d)?.map(|b| b.0))
    }

    struct Bits(u64);

    impl<'de> Deserialize<'de> for Bits {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl Visitor<'_> for V {
                type Value = Bits;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("a 64-bit SimHash")
                }
                fn visit_i64<E>(self, v: i64) -> Result<Bits, E> {
                    Ok(Bits(u64::from_ne_bytes(v.to_ne_bytes())))
                }
                fn visit_u64<E>(self, v: u64) -> Result<Bits, E> {
                    Ok(Bits(v))
                }
            }
            d.deserialize_any(V)
        }
    }
}

impl Record for ParseDataRecord {
    fn schema() -> SchemaRef {
        static S: OnceLock<SchemaRef> = OnceLock::new();
        cached(&S, || {
            vec![
                Field::new("url", DataType::Utf8, false),
                Field::new("status", DataType::Utf8, false),
                Field::new("reason", DataType::Utf8, false),
                Field::new("title", DataType::Utf8, true),
                Field::new("content_type", DataType::Utf8, true),
                Field::new("charset", DataType::Utf8, true),
                Field::new("charset_source", DataType::Utf8, true),
                Field::new("lang", DataType::Utf8, true),
                Field::new("canonical", DataType::Utf8, true),
                Field::new("noindex", DataType::Boolean, false),
                Field::new("nofollow", DataType::Boolean, false),
                Field::new("noarchive", DataType::Boolean, false),
                Field::new("outlinks", outlink_list_type(), false),
                Field::new("signature", DataType::Utf8, true),
                Field::new("simhash", DataType::Int64, true),
                Field::new("metadata", string_map_type(), false),
            ]
        })
    }

    /// The outlinks and the metadata.
    fn heavy_bytes(&self) -> usize {
        self.outlinks
            .iter()
            .map(|o| o.url.len() + o.anchor.len())
            .sum::<usize>()
            + self
                .metadata
                .iter()
                .map(|(k, v)| k.len() + v.len())
                .sum::<usize>()
    }
}

/// One row of `crawl_parse`: what parse tells updatedb. Partitioned by the host of
/// `url` (like the crawldb), so updatedb merges it part by part.
///
/// `kind` is `signature` (one per parsed page: `url` is the page, `signature` set),
/// `link` (one per outlink: `url` is the target, `from_url` the page, `score`
/// the share of the page's score it passes on, `depth` the target's depth) or
/// `redirect` (one per redirect of the segment's `crawl_fetch`: `url` is the target,
/// normalized, `from_url` the redirecting URL, `score` and `depth` its fetch-list
/// values; the redirect shuffle, see docs/tasks-segments.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrawlParseRecord {
    /// The URL the row is about.
    pub url: String,
    /// Its host.
    pub host: String,
    /// `signature`, `link` or `redirect`.
    pub kind: String,
    /// For `link`: the page the link is on.
    pub from_url: Option<String>,
    /// For `link`: the anchor text.
    pub anchor: Option<String>,
    /// For `link`: the score contribution.
    pub score: f64,
    /// For `link`: depth of the target (the page's depth + 1).
    pub depth: i32,
    /// For `signature`: the content signature.
    pub signature: Option<String>,
}

impl Record for CrawlParseRecord {
    fn schema() -> SchemaRef {
        static S: OnceLock<SchemaRef> = OnceLock::new();
        cached(&S, || {
            vec![
                Field::new("url", DataType::Utf8, false),
                Field::new("host", DataType::Utf8, false),
                Field::new("kind", DataType::Utf8, false),
                Field::new("from_url", DataType::Utf8, true),
                Field::new("anchor", DataType::Utf8, true),
                Field::new("score", DataType::Float64, false),
                Field::new("depth", DataType::Int32, false),
                Field::new("signature", DataType::Utf8, true),
            ]
        })
    }
}

/// One row of the linkdb: one inlink of a target URL. Partitioned by the target's
/// host, sorted by (`url`, `from_url`); a (target, source) pair appears once.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct InlinkRecord {
    /// The target URL.
    pub url: String,
    /// The page linking to it.
    pub from_url: String,
    /// The anchor text (capped at `linkdb.max_anchor_length`).
    pub anchor: String,
    /// The segment the link was first seen in.
    pub segment: String,
}

impl Record for InlinkRecord {
    fn schema() -> SchemaRef {
        static S: OnceLock<SchemaRef> = OnceLock::new();
        cached(&S, || {
            vec![
                Field::new("url", DataType::Utf8, false),
                Field::new("from_url", DataType::Utf8, false),
                Field::new("anchor", DataType::Utf8, false),
                Field::new("segment", DataType::Utf8, false),
            ]
        })
    }
}

/// One row of `pagerank/`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageRankRecord {
    /// The page.
    pub url: String,
    /// Its PageRank (scores sum to 1).
    pub score: f64,
    /// Distinct pages linking to it.
    pub in_degree: i64,
    /// Distinct pages it links to.
    pub out_degree: i64,
}

impl Record for PageRankRecord {
    fn schema() -> SchemaRef {
        static S: OnceLock<SchemaRef> = OnceLock::new();
        cached(&S, || {
            vec![
                Field::new("url", DataType::Utf8, false),
                Field::new("score", DataType::Float64, false),
                Field::new("in_degree", DataType::Int64, false),
                Field::new("out_degree", DataType::Int64, false),
            ]
        })
    }
}

/// One row of `hostdb/`: what the crawl knows of one host (docs/hostdb.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostRecord {
    /// The host.
    pub host: String,
    /// Its URLs in the crawldb.
    pub urls: i64,
    /// Of them `db_unfetched`.
    pub db_unfetched: i64,
    /// `db_fetched`.
    pub db_fetched: i64,
    /// `db_gone`.
    pub db_gone: i64,
    /// `db_redir_temp`.
    pub db_redir_temp: i64,
    /// `db_redir_perm`.
    pub db_redir_perm: i64,
    /// `db_notmodified`.
    pub db_notmodified: i64,
    /// `db_duplicate`.
    pub db_duplicate: i64,
    /// crawl_fetch rows of the applied segments (every attempt, all rounds).
    pub fetches: i64,
    /// Of them `fetch_success` or `fetch_notmodified`.
    pub fetch_successes: i64,
    /// `fetch_retry`: network errors, 5xx, 429, timeouts (robots-unavailable included).
    pub fetch_failures: i64,
    /// `fetch_gone`: 4xx, robots-denied.
    pub fetch_gone: i64,
    /// `fetch_redir_temp` or `fetch_redir_perm`.
    pub fetch_redirects: i64,
    /// Failures since the last response the host gave (in fetch-time order).
    pub consecutive_failures: i64,
    /// Failures where no connection could be made or kept (refused, reset, timeout).
    pub connection_errors: i64,
    /// Failures where the name did not resolve.
    pub dns_errors: i64,
    /// Responses with a measured time.
    pub responses: i64,
    /// Their mean time from request to the end of the body (ms).
    pub avg_response_ms: Option<f64>,
    /// The last robots.txt outcome: `parsed`, `allow_all` or `unavailable`.
    pub robots: Option<String>,
    /// Its reason (`ok`, `http_404`, `http_503`, `timeout`, ...).
    pub robots_reason: Option<String>,
    /// Its Crawl-delay for `fetch.robots_agent` (seconds).
    pub robots_crawl_delay: Option<f64>,
    /// When it was fetched.
    pub robots_time: Option<Millis>,
    /// Sitemaps known for the host (`sitemapdb`, else its robots.txt's Sitemap: lines).
    pub sitemaps: i64,
    /// The last fetch attempt.
    pub last_fetch_time: Option<Millis>,
    /// The last success.
    pub last_success_time: Option<Millis>,
    /// The last failure.
    pub last_failure_time: Option<Millis>,
}

impl Record for HostRecord {
    fn schema() -> SchemaRef {
        static S: OnceLock<SchemaRef> = OnceLock::new();
        cached(&S, || {
            let int = |n: &str| Field::new(n, DataType::Int64, false);
            let time = |n: &str| Field::new(n, timestamp_type(), true);
            vec![
                Field::new("host", DataType::Utf8, false),
                int("urls"),
                int("db_unfetched"),
                int("db_fetched"),
                int("db_gone"),
                int("db_redir_temp"),
                int("db_redir_perm"),
                int("db_notmodified"),
                int("db_duplicate"),
                int("fetches"),
                int("fetch_successes"),
                int("fetch_failures"),
                int("fetch_gone"),
                int("fetch_redirects"),
                int("consecutive_failures"),
                int("connection_errors"),
                int("dns_errors"),
                int("responses"),
                Field::new("avg_response_ms", DataType::Float64, true),
                Field::new("robots", DataType::Utf8, true),
                Field::new("robots_reason", DataType::Utf8, true),
                Field::new("robots_crawl_delay", DataType::Float64, true),
                time("robots_time"),
                int("sitemaps"),
                time("last_fetch_time"),
                time("last_success_time"),
                time("last_failure_time"),
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datum::{CrawlDatum, DbStatus};
    use crate::store::parquet::{PartWriter, from_batch, read_part_all, to_batch};

    fn roundtrip<R: Record + PartialEq + std::fmt::Debug + Clone>(rows: Vec<R>) {
        let batch = to_batch(&rows).unwrap();
        assert_eq!(batch.schema(), R::schema());
        assert_eq!(from_batch::<R>(&batch).unwrap(), rows);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("part-00000.parquet");
        let mut w = PartWriter::<R>::create(&p).unwrap();
        for r in rows.clone() {
            w.push(r).unwrap();
        }
        assert_eq!(w.finish().unwrap(), rows.len() as u64);
        assert_eq!(read_part_all::<R>(&p).unwrap(), rows);
    }

    /// A `content` part written before rendering existed (no `rendered`,
    /// `render_status`) still reads, both as null.
    #[test]
    fn content_without_the_render_columns_reads_as_not_rendered() {
        let row = ContentRecord {
            url: "http://a.test/".into(),
            host: "a.test".into(),
            fetch_time: 5,
            http_status: 200,
            content_type: Some("text/html".into()),
            headers: Vec::new(),
            content: b"<p>old</p>".to_vec(),
            truncated: false,
            ip_address: None,
            score: 1.0,
            depth: 0,
            rendered: Some("dropped".into()),
            render_status: Some("rendered".into()),
        };
        let batch = to_batch(std::slice::from_ref(&row)).unwrap();
        let n = batch.num_columns();
        let old = batch.project(&(0..n - 2).collect::<Vec<_>>()).unwrap();
        let back = from_batch::<ContentRecord>(&old).unwrap();
        assert_eq!(back[0].content, row.content);
        assert_eq!((&back[0].rendered, &back[0].render_status), (&None, &None));
    }

    #[test]
    fn every_record_type_roundtrips_through_parquet() {
        let mut d = CrawlDatum::unfetched(
            "http://a.test/".into(),
            "a.test".into(),
            1_700_000_000_000,
            86400,
        );
        d.metadata.insert("k".into(), "v".into());
        let mut d2 = d.clone();
        d2.status = DbStatus::DbRedirPerm;
        d2.redirect_target = Some("http://b.test/".into());
        d2.signature = Some("ab".into());
        roundtrip(vec![d, d2]);
        roundtrip(vec![FetchRecord {
            url: "http://a.test/".into(),
            host: "a.test".into(),
            status: FetchStatus::FetchRedirTemp,
            reason: "http_302".into(),
            fetch_time: 5,
            http_status: Some(302),
            content_type: None,
            content_length: None,
            redirect_target: Some("http://a.test/x".into()),
            etag: None,
            last_modified: None,
            response_time_ms: Some(3),
            score: 1.0,
            depth: 0,
        }]);
        roundtrip(vec![ContentRecord {
            url: "http://a.test/".into(),
            host: "a.test".into(),
            fetch_time: 5,
            http_status: 200,
            content_type: Some("text/html".into()),
            headers: vec![Header {
                name: "a".into(),
                value: "b".into(),
            }],
            content: vec![0, 1, 2, 255],
            truncated: false,
            ip_address: Some("127.0.0.1".into()),
            score: 0.5,
            depth: 1,
            rendered: Some("<html><body>after scripts</body></html>".into()),
            render_status: Some("rendered".into()),
        }]);
        roundtrip(vec![ParseTextRecord {
            url: "u".into(),
            text: "t".into(),
            main_text: None,
        }]);
        roundtrip(vec![ParseDataRecord {
            url: "u".into(),
            status: "parse_success".into(),
            reason: "ok".into(),
            title: Some("T".into()),
            content_type: None,
            charset: None,
            charset_source: None,
            lang: None,
            canonical: None,
            noindex: false,
            nofollow: true,
            noarchive: false,
            outlinks: vec![Outlink {
                url: "v".into(),
                anchor: "a".into(),
                nofollow: false,
            }],
            signature: None,
            simhash: Some(u64::MAX),
            metadata: BTreeMap::new(),
        }]);
        roundtrip(vec![CrawlParseRecord {
            url: "u".into(),
            host: "h".into(),
            kind: "link".into(),
            from_url: Some("f".into()),
            anchor: Some("a".into()),
            score: 0.1,
            depth: 2,
            signature: None,
        }]);
        roundtrip(vec![InlinkRecord {
            url: "u".into(),
            from_url: "f".into(),
            anchor: "a".into(),
            segment: "s".into(),
        }]);
        roundtrip(vec![PageRankRecord {
            url: "u".into(),
            score: 0.5,
            in_degree: 1,
            out_degree: 2,
        }]);
    }
}

#[cfg(test)]
mod schema_doc_tests {
    use super::*;
    use crate::datum::CrawlDatum;

    /// The documented type name of an Arrow type.
    fn type_name(t: &DataType) -> String {
        match t {
            DataType::Utf8 => "string".into(),
            DataType::Int32 => "int32".into(),
            DataType::Int64 => "int64".into(),
            DataType::UInt64 => "uint64".into(),
            DataType::Float64 => "float64".into(),
            DataType::Boolean => "bool".into(),
            DataType::Binary => "binary".into(),
            DataType::Timestamp(_, _) => "timestamp[ms, UTC]".into(),
            DataType::Map(_, _) => "map<string, string>".into(),
            DataType::List(f) => format!("list<{}>", type_name(f.data_type())),
            DataType::Struct(fs) => format!(
                "struct<{}>",
                fs.iter()
                    .map(|f| format!("{}: {}", f.name(), type_name(f.data_type())))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            other => format!("{other:?}"),
        }
    }

    /// Parses the `| column | type | meaning |` table under `## <dataset>`.
    fn documented(doc: &str, dataset: &str) -> Vec<(String, String)> {
        let start = doc
            .find(&format!("\n## {dataset}\n"))
            .unwrap_or_else(|| panic!("docs/schemas.md has no section ## {dataset}"));
        let rest = &doc[start + 4 + dataset.len()..];
        let section = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
        section
            .lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| column"))
            .map(|l| {
                let cells: Vec<&str> = l.split(" | ").collect();
                (
                    cells[0].trim_start_matches("| ").to_string(),
                    cells[1].to_string(),
                )
            })
            .collect()
    }

    fn code(schema: &SchemaRef) -> Vec<(String, String)> {
        schema
            .fields()
            .iter()
            .map(|f| {
                let mut t = type_name(f.data_type());
                if f.is_nullable() {
                    t.push_str(", nullable");
                }
                (f.name().clone(), t)
            })
            .collect()
    }

    #[test]
    fn documented_schemas_match_the_code() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/schemas.md"))
            .unwrap();
        let datasets: Vec<(&str, SchemaRef)> = vec![
            ("crawldb", CrawlDatum::schema()),
            ("crawl_fetch", FetchRecord::schema()),
            ("content", ContentRecord::schema()),
            ("parse_text", ParseTextRecord::schema()),
            ("parse_data", ParseDataRecord::schema()),
            ("crawl_parse", CrawlParseRecord::schema()),
            ("linkdb", InlinkRecord::schema()),
            ("pagerank", PageRankRecord::schema()),
            ("hostdb", HostRecord::schema()),
            ("robots", crate::net::robots::RobotsRecord::schema()),
            ("sitemapdb", crate::sitemaps::SitemapRecord::schema()),
            ("sitemap_urls", crate::sitemaps::SitemapUrlRow::schema()),
            ("pagerank_hits", crate::graph::rows::HitsRecord::schema()),
            (
                "pagerank_hosts",
                crate::graph::rows::HostRankRecord::schema(),
            ),
        ];
        for (name, schema) in datasets {
            assert_eq!(
                documented(&doc, name),
                code(&schema),
                "docs/schemas.md section {name}"
            );
            // On an object store every dataset is a Delta table: each column has a
            // Delta type, and none is unsigned (Delta has no unsigned types).
            crate::store::delta::schema_string(&schema)
                .unwrap_or_else(|e| panic!("{name} is not a Delta table: {e}"));
            assert!(
                !format!("{schema:?}").contains("UInt"),
                "{name} has an unsigned column: Delta readers cannot read it"
            );
        }
    }

    #[test]
    fn a_simhash_reads_back_from_the_unsigned_column_of_older_segments() {
        use arrow::array::{ArrayRef, UInt64Array};
        let old = ParseDataRecord::schema();
        let i = old.index_of("simhash").unwrap();
        let row = ParseDataRecord {
            url: "u".into(),
            status: "parse_success".into(),
            reason: "ok".into(),
            title: None,
            content_type: None,
            charset: None,
            charset_source: None,
            lang: None,
            canonical: None,
            noindex: false,
            nofollow: false,
            noarchive: false,
            outlinks: Vec::new(),
            signature: None,
            simhash: Some(u64::MAX - 5),
            metadata: BTreeMap::new(),
        };
        let batch = crate::store::parquet::to_batch(std::slice::from_ref(&row)).unwrap();
        // Signed in the file, the same bits.
        let col = batch
            .column(i)
            .as_any()
            .downcast_ref::<arrow::array::Int64Array>()
            .unwrap();
        assert_eq!(col.value(0), -6);
        // An older segment's unsigned column.
        let mut fields: Vec<Field> = old.fields().iter().map(|f| f.as_ref().clone()).collect();
        fields[i] = Field::new("simhash", DataType::UInt64, true);
        let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
        columns[i] = std::sync::Arc::new(UInt64Array::from(vec![Some(u64::MAX - 5)]));
        let unsigned =
            arrow::record_batch::RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
                .unwrap();
        let back: Vec<ParseDataRecord> = crate::store::parquet::from_batch(&unsigned).unwrap();
        assert_eq!(back, vec![row]);
    }
}
