//! `CrawlDatum`: one row of the crawldb (and of a segment's `crawl_generate`), its
//! status vocabulary and its Arrow schema.
//!
//! The column names, types and status strings are a public interface: analysts query
//! them with DuckDB, polars or Spark. `docs/schemas.md` documents every column; the
//! schema test in `tests/` keeps the two in step.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, Float64Array, Int32Array, Int64Array, MapBuilder, MapFieldNames, StringBuilder,
    TimestampMillisecondArray,
};
use arrow::datatypes::{DataType, Field, FieldRef, Schema, SchemaRef, TimeUnit};
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch, UTC.
pub type Millis = i64;

/// The current time in milliseconds since the Unix epoch (UTC).
pub fn now_millis() -> Millis {
    chrono::Utc::now().timestamp_millis()
}

/// Formats a millisecond timestamp as RFC 3339 UTC (for logs and dumps).
pub fn format_millis(ms: Millis) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| format!("{ms}ms"))
}

/// The status of a URL in the crawldb (Nutch's `db_*` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DbStatus {
    /// Known but never fetched (or due for a first fetch).
    DbUnfetched,
    /// Fetched successfully.
    DbFetched,
    /// Gone: 404/410, denied by robots.txt, or too many retries.
    DbGone,
    /// Temporarily redirected; the target is in `redirect_target`.
    DbRedirTemp,
    /// Permanently redirected; the target is in `redirect_target`.
    DbRedirPerm,
    /// Fetched again and found unchanged.
    DbNotmodified,
    /// Marked as a duplicate of another page by `dedup`.
    DbDuplicate,
}

impl DbStatus {
    /// Every status, in a fixed order (for stats tables).
    pub const ALL: [DbStatus; 7] = [
        DbStatus::DbUnfetched,
        DbStatus::DbFetched,
        DbStatus::DbGone,
        DbStatus::DbRedirTemp,
        DbStatus::DbRedirPerm,
        DbStatus::DbNotmodified,
        DbStatus::DbDuplicate,
    ];

    /// The string stored in Parquet (`db_fetched`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            DbStatus::DbUnfetched => "db_unfetched",
            DbStatus::DbFetched => "db_fetched",
            DbStatus::DbGone => "db_gone",
            DbStatus::DbRedirTemp => "db_redir_temp",
            DbStatus::DbRedirPerm => "db_redir_perm",
            DbStatus::DbNotmodified => "db_notmodified",
            DbStatus::DbDuplicate => "db_duplicate",
        }
    }

    /// Parses a stored status string.
    pub fn parse(s: &str) -> Option<DbStatus> {
        DbStatus::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

impl std::fmt::Display for DbStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome of one fetch (Nutch's `fetch_*` names), stored in `crawl_fetch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FetchStatus {
    /// Content was fetched (HTTP 2xx).
    FetchSuccess,
    /// A transient failure; retry later.
    FetchRetry,
    /// A temporary redirect (302, 303, 307).
    FetchRedirTemp,
    /// A permanent redirect (301, 308).
    FetchRedirPerm,
    /// The page is gone (404, 410, robots denied, ...).
    FetchGone,
    /// A conditional request answered 304 Not Modified.
    FetchNotmodified,
}

impl FetchStatus {
    /// Every fetch status, in a fixed order.
    pub const ALL: [FetchStatus; 6] = [
        FetchStatus::FetchSuccess,
        FetchStatus::FetchRetry,
        FetchStatus::FetchRedirTemp,
        FetchStatus::FetchRedirPerm,
        FetchStatus::FetchGone,
        FetchStatus::FetchNotmodified,
    ];

    /// The string stored in Parquet (`fetch_success`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            FetchStatus::FetchSuccess => "fetch_success",
            FetchStatus::FetchRetry => "fetch_retry",
            FetchStatus::FetchRedirTemp => "fetch_redir_temp",
            FetchStatus::FetchRedirPerm => "fetch_redir_perm",
            FetchStatus::FetchGone => "fetch_gone",
            FetchStatus::FetchNotmodified => "fetch_notmodified",
        }
    }
}

impl std::fmt::Display for FetchStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One row of the crawldb: everything trawl knows about one URL.
///
/// Also the row type of a segment's `crawl_generate` (the fetch list), which is a
/// copy of the crawldb rows that generate selected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrawlDatum {
    /// The normalized URL (the key).
    pub url: String,
    /// The URL's host, lowercase (the partition key).
    pub host: String,
    /// The crawldb status.
    pub status: DbStatus,
    /// When the URL is next due for fetching (ms, UTC).
    pub fetch_time: Millis,
    /// When the content last changed, as far as trawl knows (ms, UTC).
    pub modified_time: Option<Millis>,
    /// When the URL was last fetched (ms, UTC); null if never.
    pub fetched_time: Option<Millis>,
    /// Re-fetch interval in seconds.
    pub fetch_interval: i64,
    /// Consecutive transient failures.
    pub retries: i32,
    /// Priority score (OPIC or PageRank); generate picks the highest first.
    pub score: f64,
    /// blake3 of the content (hex), null until fetched and parsed.
    pub signature: Option<String>,
    /// Links from a seed (seeds are 0).
    pub depth: i32,
    /// HTTP status of the last fetch.
    pub http_status: Option<i32>,
    /// Content type of the last fetch.
    pub content_type: Option<String>,
    /// The protocol reason of the last fetch outcome (`robots_denied`, `http_404`, ...).
    pub reason: Option<String>,
    /// Where the URL redirects to, for `db_redir_*`.
    pub redirect_target: Option<String>,
    /// Free-form string metadata (inject keys, `etag`, `last_modified`, ...).
    pub metadata: BTreeMap<String, String>,
}

impl CrawlDatum {
    /// A fresh `db_unfetched` datum due now.
    pub fn unfetched(url: String, host: String, now: Millis, interval_secs: i64) -> Self {
        CrawlDatum {
            url,
            host,
            status: DbStatus::DbUnfetched,
            fetch_time: now,
            modified_time: None,
            fetched_time: None,
            fetch_interval: interval_secs,
            retries: 0,
            score: 0.0,
            signature: None,
            depth: 0,
            http_status: None,
            content_type: None,
            reason: None,
            redirect_target: None,
            metadata: BTreeMap::new(),
        }
    }

    /// The Arrow schema of the crawldb and of `crawl_generate`.
    pub fn schema() -> SchemaRef {
        static SCHEMA: std::sync::OnceLock<SchemaRef> = std::sync::OnceLock::new();
        SCHEMA
            .get_or_init(|| {
                Arc::new(Schema::new(vec![
                    Field::new("url", DataType::Utf8, false),
                    Field::new("host", DataType::Utf8, false),
                    Field::new("status", DataType::Utf8, false),
                    Field::new("fetch_time", timestamp_type(), false),
                    Field::new("modified_time", timestamp_type(), true),
                    Field::new("fetched_time", timestamp_type(), true),
                    Field::new("fetch_interval", DataType::Int64, false),
                    Field::new("retries", DataType::Int32, false),
                    Field::new("score", DataType::Float64, false),
                    Field::new("signature", DataType::Utf8, true),
                    Field::new("depth", DataType::Int32, false),
                    Field::new("http_status", DataType::Int32, true),
                    Field::new("content_type", DataType::Utf8, true),
                    Field::new("reason", DataType::Utf8, true),
                    Field::new("redirect_target", DataType::Utf8, true),
                    Field::new("metadata", string_map_type(), false),
                ]))
            })
            .clone()
    }
}

impl CrawlDatum {
    /// The rows as one record batch of [`CrawlDatum::schema`], built column by column
    /// (what serde would give, several times faster).
    pub fn to_batch(rows: &[CrawlDatum]) -> std::result::Result<RecordBatch, ArrowError> {
        let n = rows.len();
        let strings = |f: &dyn Fn(&CrawlDatum) -> &str| {
            let bytes = rows.iter().map(|d| f(d).len()).sum();
            let mut b = StringBuilder::with_capacity(n, bytes);
            rows.iter().for_each(|d| b.append_value(f(d)));
            Arc::new(b.finish()) as ArrayRef
        };
        let opt_strings = |f: &dyn Fn(&CrawlDatum) -> Option<&str>| {
            let mut b = StringBuilder::new();
            rows.iter().for_each(|d| b.append_option(f(d)));
            Arc::new(b.finish()) as ArrayRef
        };
        let times = |f: &dyn Fn(&CrawlDatum) -> Option<Millis>| {
            let a: TimestampMillisecondArray = rows.iter().map(f).collect();
            Arc::new(a.with_timezone("UTC")) as ArrayRef
        };
        let mut meta = MapBuilder::new(
            Some(MapFieldNames {
                entry: "entries".into(),
                key: "keys".into(),
                value: "values".into(),
            }),
            StringBuilder::new(),
            StringBuilder::new(),
        );
        for d in rows {
            for (k, v) in &d.metadata {
                meta.keys().append_value(k);
                meta.values().append_value(v);
            }
            meta.append(true)?;
        }
        let columns: Vec<ArrayRef> = vec![
            strings(&|d| &d.url),
            strings(&|d| &d.host),
            strings(&|d| d.status.as_str()),
            times(&|d| Some(d.fetch_time)),
            times(&|d| d.modified_time),
            times(&|d| d.fetched_time),
            Arc::new(
                rows.iter()
                    .map(|d| d.fetch_interval)
                    .collect::<Int64Array>(),
            ),
            Arc::new(rows.iter().map(|d| d.retries).collect::<Int32Array>()),
            Arc::new(rows.iter().map(|d| d.score).collect::<Float64Array>()),
            opt_strings(&|d| d.signature.as_deref()),
            Arc::new(rows.iter().map(|d| d.depth).collect::<Int32Array>()),
            Arc::new(rows.iter().map(|d| d.http_status).collect::<Int32Array>()),
            opt_strings(&|d| d.content_type.as_deref()),
            opt_strings(&|d| d.reason.as_deref()),
            opt_strings(&|d| d.redirect_target.as_deref()),
            Arc::new(meta.finish()),
        ];
        RecordBatch::try_new(Self::schema(), columns)
    }
}

/// The timestamp type used by every dataset: milliseconds, UTC.
pub fn timestamp_type() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
}

/// The `map<string, string>` type used for metadata columns.
pub fn string_map_type() -> DataType {
    let entries = Field::new(
        "entries",
        DataType::Struct(
            vec![
                Field::new("keys", DataType::Utf8, false),
                Field::new("values", DataType::Utf8, true),
            ]
            .into(),
        ),
        false,
    );
    DataType::Map(Arc::new(entries), false)
}

/// The fields of a schema, as serde_arrow wants them.
pub fn fields_of(schema: &SchemaRef) -> Vec<FieldRef> {
    schema.fields().iter().cloned().collect()
}
