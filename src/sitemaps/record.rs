//! `sitemapdb/`: one row per sitemap trawl knows, with what became of its last fetch
//! and when it is due again. Versioned like the crawldb (`current`, `old`).

use std::sync::{Arc, OnceLock};

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use serde::{Deserialize, Serialize};

use super::parse::{ChangeFreq, Scope, SitemapUrl};
use crate::datum::{Millis, timestamp_type};
use crate::error::Result;
use crate::store::layout::CrawlDir;
use crate::store::names::VersionedDb;
use crate::store::parquet::{PartWriter, Record};
use crate::urls::host_of;

/// One row of `sitemapdb/`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SitemapRecord {
    /// The sitemap's URL (the key).
    pub url: String,
    /// Its host.
    pub host: String,
    /// How it became known: `robots`, `probe`, `inject`, `index`.
    pub source: String,
    /// The robots.txt URL or index URL that named it.
    pub referrer: Option<String>,
    /// Where its URLs may be: `origin + path prefix` areas (`http://a.test/`,
    /// `http://a.test/blog/`).
    pub scope: Vec<String>,
    /// Index nesting depth (0 = named by robots.txt, inject or the probe).
    pub depth: i32,
    /// `ok`, `not_modified`, `failed`, `robots_denied`, `too_deep`, `deferred`.
    pub status: String,
    /// Why: `ok`, `http_404`, `timeout`, `redirect_other_host`, `crawl_delay`, ...
    pub reason: String,
    /// HTTP status of the last response.
    pub http_status: Option<i32>,
    /// `urlset`, `index`, `text` or `unknown`; null when nothing was parsed.
    pub format: Option<String>,
    /// The file was gzip-compressed.
    pub gzipped: bool,
    /// Uncompressed bytes read.
    pub bytes: i64,
    /// URLs (or child sitemaps) accepted.
    pub urls_found: i64,
    /// Entries rejected (bad URL, outside the scope, filtered, no `<loc>`).
    pub urls_rejected: i64,
    /// Entries dropped over the per-file URL limit.
    pub urls_cut: i64,
    /// URLs this fetch added to the crawldb.
    pub urls_added: i64,
    /// Problems found in the file (malformed XML, bad values, limits).
    pub problems: i64,
    /// The first problem, with its position.
    pub first_problem: Option<String>,
    /// ETag of the last 200 response (sent as If-None-Match).
    pub etag: Option<String>,
    /// Last-Modified of the last 200 response (sent as If-Modified-Since).
    pub last_modified: Option<String>,
    /// When it was last fetched (ms UTC).
    pub fetched_time: Option<Millis>,
    /// When it is due again (ms UTC).
    pub next_fetch_time: Millis,
}

impl SitemapRecord {
    /// The scope stored in the record.
    pub fn scope(&self) -> Scope {
        Scope {
            areas: self
                .scope
                .iter()
                .filter_map(|a| url::Url::parse(a).ok())
                .map(|u| (u.origin().ascii_serialization(), u.path().to_string()))
                .collect(),
        }
    }

    /// The stored form of a scope.
    pub fn scope_strings(scope: &Scope) -> Vec<String> {
        scope.areas.iter().map(|(o, p)| format!("{o}{p}")).collect()
    }
}

impl Record for SitemapRecord {
    fn schema() -> SchemaRef {
        static S: OnceLock<SchemaRef> = OnceLock::new();
        S.get_or_init(|| {
            Arc::new(Schema::new(vec![
                Field::new("url", DataType::Utf8, false),
                Field::new("host", DataType::Utf8, false),
                Field::new("source", DataType::Utf8, false),
                Field::new("referrer", DataType::Utf8, true),
                Field::new(
                    "scope",
                    DataType::List(Arc::new(Field::new("element", DataType::Utf8, false))),
                    false,
                ),
                Field::new("depth", DataType::Int32, false),
                Field::new("status", DataType::Utf8, false),
                Field::new("reason", DataType::Utf8, false),
                Field::new("http_status", DataType::Int32, true),
                Field::new("format", DataType::Utf8, true),
                Field::new("gzipped", DataType::Boolean, false),
                Field::new("bytes", DataType::Int64, false),
                Field::new("urls_found", DataType::Int64, false),
                Field::new("urls_rejected", DataType::Int64, false),
                Field::new("urls_cut", DataType::Int64, false),
                Field::new("urls_added", DataType::Int64, false),
                Field::new("problems", DataType::Int64, false),
                Field::new("first_problem", DataType::Utf8, true),
                Field::new("etag", DataType::Utf8, true),
                Field::new("last_modified", DataType::Utf8, true),
                Field::new("fetched_time", timestamp_type(), true),
                Field::new("next_fetch_time", timestamp_type(), false),
            ]))
        })
        .clone()
    }
}

/// Writes a new version of `sitemapdb/` (one part, sorted by URL) and installs it.
/// The caller holds the crawldb lock.
pub fn write_sitemapdb(dir: &CrawlDir, mut rows: Vec<SitemapRecord>) -> Result<()> {
    rows.sort_by(|a, b| a.url.cmp(&b.url));
    let db = dir.versioned(VersionedDb::SitemapDb);
    let staged = db.stage()?;
    let mut w = PartWriter::<SitemapRecord>::create(&staged.part_path(0))?;
    for r in rows {
        w.push(r)?;
    }
    w.finish()?;
    db.install(staged, "sitemap")
}

/// One row of a sitemap task's `sitemap_urls/` (the stage's shuffle): a URL a
/// sitemap listed, in the file of the partition of the URL's host, with where it
/// stands in the one-process order (`origin` of the sitemap, then `seq`), so that
/// the commit keeps, as a one-process run does, the first sitemap that named it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SitemapUrlRow {
    /// The URL (normalized).
    pub url: String,
    /// Its host.
    pub host: String,
    /// `<lastmod>` (ms UTC).
    pub lastmod: Option<Millis>,
    /// `<changefreq>`.
    pub changefreq: Option<String>,
    /// `<priority>`.
    pub priority: Option<f64>,
    /// The sitemap that listed it.
    pub sitemap: String,
    /// The origin the sitemap was fetched from (the task's fetch order is by origin).
    pub origin: String,
    /// Its rank in the task's fetch results.
    pub seq: i64,
}

impl SitemapUrlRow {
    /// The row of `e`, listed by `sitemap` fetched from `origin`, `seq`-th in the
    /// task's results.
    pub fn new(e: &SitemapUrl, sitemap: &str, origin: &str, seq: i64) -> Self {
        SitemapUrlRow {
            url: e.url.clone(),
            host: host_of(&e.url),
            lastmod: e.lastmod,
            changefreq: e.changefreq.map(|c| c.as_str().to_string()),
            priority: e.priority,
            sitemap: sitemap.to_string(),
            origin: origin.to_string(),
            seq,
        }
    }

    /// The entry and its sitemap, as the merge takes them.
    pub fn into_entry(self) -> (SitemapUrl, String) {
        (
            SitemapUrl {
                changefreq: self.changefreq.as_deref().and_then(ChangeFreq::parse),
                url: self.url,
                lastmod: self.lastmod,
                priority: self.priority,
            },
            self.sitemap,
        )
    }
}

impl Record for SitemapUrlRow {
    fn schema() -> SchemaRef {
        static S: OnceLock<SchemaRef> = OnceLock::new();
        S.get_or_init(|| {
            Arc::new(Schema::new(vec![
                Field::new("url", DataType::Utf8, false),
                Field::new("host", DataType::Utf8, false),
                Field::new("lastmod", timestamp_type(), true),
                Field::new("changefreq", DataType::Utf8, true),
                Field::new("priority", DataType::Float64, true),
                Field::new("sitemap", DataType::Utf8, false),
                Field::new("origin", DataType::Utf8, false),
                Field::new("seq", DataType::Int64, false),
            ]))
        })
        .clone()
    }
}
