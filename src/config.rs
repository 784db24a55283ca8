//! The configuration: one TOML file (`data/trawl.toml`), one section per concern.
//!
//! Every key has a default (the `Default` impls below, mirrored and documented in
//! `data/trawl.toml` and `docs/config.md`); a missing file section or key takes it.
//! Unknown keys are errors, so a typo never silently falls back to a default.
//! Stage flags override the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

mod rules;
mod values;

pub use rules::allowed_values;
pub use values::{CountMode, GraphSource, PartitionKey, QueueMode, Schedule, Teleport, UrlScope};

/// The whole configuration.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Settings every stage shares.
    pub crawl: CrawlConfig,
    /// URL normalization and filtering.
    pub urls: UrlConfig,
    /// The `inject` stage.
    pub inject: InjectConfig,
    /// The `generate` stage.
    pub generate: GenerateConfig,
    /// The `fetch` stage.
    pub fetch: FetchConfig,
    /// The `parse` stage.
    pub parse: ParseConfig,
    /// The `updatedb` stage.
    pub updatedb: UpdateDbConfig,
    /// The `linkdb` stage.
    pub linkdb: LinkDbConfig,
    /// The `pagerank` stage.
    pub pagerank: PageRankConfig,
    /// The `sitemap` stage (and `inject --sitemaps`).
    pub sitemaps: SitemapConfig,
    /// The `index` stage (the search index).
    pub index: IndexConfig,
}

/// `[crawl]`: settings every stage shares.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CrawlConfig {
    /// Default crawl directory (`--crawl-dir` overrides).
    pub dir: PathBuf,
    /// Number of host partitions of the crawldb and of segment datasets.
    pub partitions: usize,
    /// What partitions group URLs by: `"host"` (default) or `"domain"` (registrable
    /// domain; what `fetch.queue_mode = "domain"` needs in partition tasks). Fixed
    /// when the crawldb is created; `repartition --partition-key` changes it.
    pub partition_key: PartitionKey,
    /// Worker threads for rayon kernels (0 = one per core).
    pub threads: usize,
}

impl Default for CrawlConfig {
    fn default() -> Self {
        CrawlConfig {
            dir: PathBuf::from("crawl"),
            partitions: 8,
            partition_key: PartitionKey::Host,
            threads: 0,
        }
    }
}

/// `[urls]`: normalization and filters applied by inject, parse and updatedb.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UrlConfig {
    /// Schemes accepted.
    pub schemes: Vec<String>,
    /// URLs longer than this (bytes, after normalization) are rejected.
    pub max_length: usize,
    /// Optional rule file in Nutch's regex-urlfilter format (`+regex` / `-regex`, first match wins).
    pub filter_file: Option<PathBuf>,
    /// Query parameters removed as session ids (case-insensitive).
    pub session_params: Vec<String>,
    /// Sort query parameters by name.
    pub sort_query: bool,
    /// Scope: `any`, `host` (only the seeds' hosts) or `domain` (the seeds' registrable domains).
    pub scope: UrlScope,
    /// Maximum depth (links from a seed) of URLs added to the crawldb; 0 = unlimited.
    pub max_depth: i32,
}

impl Default for UrlConfig {
    fn default() -> Self {
        UrlConfig {
            schemes: vec!["http".into(), "https".into()],
            max_length: 2048,
            filter_file: None,
            session_params: vec![
                "jsessionid".into(),
                "phpsessid".into(),
                "sid".into(),
                "aspsessionid".into(),
            ],
            sort_query: false,
            scope: UrlScope::Any,
            max_depth: 0,
        }
    }
}

/// `[inject]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InjectConfig {
    /// Score of an injected URL without a `score=` key.
    pub score: f64,
    /// Fetch interval (seconds) of an injected URL without a `fetch_interval=` key.
    pub fetch_interval: i64,
    /// Seed rows (of all partitions together) held in memory before they are sorted
    /// and spilled as runs to the staged crawldb version; bounds inject's memory.
    pub sort_buffer_rows: usize,
}

impl Default for InjectConfig {
    fn default() -> Self {
        InjectConfig {
            score: 1.0,
            fetch_interval: 30 * 86400,
            sort_buffer_rows: 1_000_000,
        }
    }
}

/// `[generate]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GenerateConfig {
    /// Maximum URLs in a fetch list (`--top-n`).
    pub top_n: usize,
    /// Maximum URLs per host (or per domain, see `count_mode`) in one fetch list; 0 = no cap.
    pub max_per_host: usize,
    /// What `max_per_host` counts: `host` or `domain` (registrable domain).
    pub count_mode: CountMode,
    /// URLs scoring below this are not generated.
    pub min_score: f64,
    /// Seconds after which a fetch list that never reached updatedb no longer locks its URLs.
    pub gen_delay: i64,
    /// Hosts whose last this many fetches failed in a row (the hostdb's
    /// `consecutive_failures`: network errors, 5xx, 429) are left out of fetch lists
    /// for `host_backoff` seconds after their last failure; 0 = never.
    pub host_max_failures: usize,
    /// Seconds of fetching each host may take per fetch list: a host gets at most
    /// `host_time_budget / (its delay + its mean response time)` URLs (the hostdb's
    /// figures; Crawl-delay raises the delay), below `max_per_host`; 0 = no such cap.
    pub host_time_budget: f64,
    /// Seconds a failing host is left out (see `host_max_failures`).
    pub host_backoff: i64,
}

impl Default for GenerateConfig {
    fn default() -> Self {
        GenerateConfig {
            top_n: 50_000,
            max_per_host: 100,
            count_mode: CountMode::Host,
            min_score: f64::NEG_INFINITY,
            gen_delay: 7 * 86400,
            host_max_failures: 5,
            host_backoff: 3600,
            host_time_budget: 0.0,
        }
    }
}

/// `[fetch]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FetchConfig {
    /// The User-Agent header.
    pub user_agent: String,
    /// The product token matched against robots.txt `User-agent:` lines.
    pub robots_agent: String,
    /// Obey robots.txt.
    pub respect_robots: bool,
    /// Maximum requests in flight over all hosts.
    pub max_connections: usize,
    /// Requests in flight per host queue.
    pub per_host_connections: usize,
    /// Seconds between two requests to one host (robots.txt Crawl-delay raises it).
    pub delay: f64,
    /// A Crawl-delay above this (seconds) skips the host for this round.
    pub max_crawl_delay: f64,
    /// Connect timeout (seconds).
    pub connect_timeout: f64,
    /// Timeout (seconds) between two reads of a response.
    pub read_timeout: f64,
    /// Deadline (seconds) for a whole request, body included.
    pub total_timeout: f64,
    /// Maximum content bytes kept per page (after decompression); longer bodies are truncated.
    pub max_content_bytes: usize,
    /// Stop after this many seconds (0 = no limit); unfetched URLs stay due.
    pub time_limit: f64,
    /// How long (seconds) a fetch task's partition lease lasts unless its heartbeat
    /// renews it (every third of it); a task that could not renew stops sending
    /// requests and fails, and a retry takes the lease over once it expired. 0 = no
    /// heartbeat: the lease lasts the time limit (docs/cluster.md, "Leases").
    pub lease_ttl: f64,
    /// How long (seconds) a task waits for a live lease of another attempt to expire
    /// before it fails (exit 6): a retry meeting the lease of the attempt it replaces
    /// (frozen, or on a lost machine) takes it over once it expired. 0 = fail at once.
    pub lease_wait: f64,
    /// How often (seconds) a fetch publishes a checkpoint of what it fetched since the
    /// last one (rows, pages, robots.txt): a retry of a lost task, or a rerun after a
    /// kill, continues from the checkpoints instead of fetching those URLs again.
    /// 0 = no checkpoints (docs/fetch.md, "Checkpoints").
    pub checkpoint_interval: f64,
    /// Stop early when fewer fetch-list URLs than this finish per second over a whole
    /// `min_throughput_window` (checked from `min_throughput_after` on): the URLs left
    /// get `fetch_retry`/`throughput_limit` and stay due, like Nutch's
    /// `fetcher.throughput.threshold.pages`; 0 = off.
    pub min_throughput: f64,
    /// Length (seconds) of the windows over which throughput is measured.
    pub min_throughput_window: f64,
    /// Seconds from the start of the run before throughput is first checked.
    pub min_throughput_after: f64,
    /// Host patterns mapped to a socket address, like curl's `--connect-to`:
    /// `"*.web.test" = "127.0.0.1:8080"` connects every matching host to that address.
    pub resolve: BTreeMap<String, String>,
    /// Per-queue delays replacing `delay` (seconds), keyed by host pattern like
    /// `resolve` (`"*.example.com" = 5.0`), matched against the queue's key (host,
    /// registrable domain or IP address, see `queue_mode`); robots.txt Crawl-delay
    /// still raises them.
    pub delays: BTreeMap<String, f64>,
    /// Consecutive failures (network errors, 5xx, 429) after which a host's remaining
    /// URLs are skipped this round (fetch_retry, reason `host_failing`); 0 = never.
    pub max_host_exceptions: usize,
    /// Longest Retry-After (seconds) a host queue waits for after a 429/503; a longer
    /// one skips the host's remaining URLs (fetch_retry, reason `retry_after`).
    pub max_retry_after: f64,
    /// What one politeness queue is: `"host"` (default), `"domain"` (registrable
    /// domain, public suffix list) or `"ip"` (the resolved address).
    pub queue_mode: QueueMode,
    /// Adaptive delay (Heritrix's rule): the delay after a request is this factor times
    /// its response time, clamped to [`min_delay`, `max_delay`] and never below the
    /// robots.txt Crawl-delay; 0 = off (the fixed `delay` applies).
    pub adaptive_delay_factor: f64,
    /// Smallest adaptive delay (seconds).
    pub min_delay: f64,
    /// Largest adaptive delay (seconds).
    pub max_delay: f64,
    /// Seconds a robots.txt stays usable in later fetch runs (persisted in the crawl
    /// directory); 0 = fetched again every run; at most 86400.
    pub robots_cache_ttl: f64,
    /// Redirects followed inline per fetch-list URL (each target gets its own
    /// crawl_fetch row); 0 = redirects are only recorded.
    pub follow_redirects: usize,
    /// PEM file of extra trusted root certificates, added to the system's roots (a
    /// private CA, the test web's `--ca-out`); empty = the system's roots only.
    pub ca_file: PathBuf,
    /// Verify server certificates (chain to a trusted root, name, validity); `false`
    /// accepts any certificate, like Nutch's `http.tls.certificates.check = false`.
    pub tls_verify: bool,
    /// `[fetch.render]`: hosts whose pages run their scripts in headless Chromium.
    pub render: RenderConfig,
}

/// `[fetch.render]`: JavaScript rendering in headless Chromium (off while `hosts` is
/// empty). A rendered page's fetched response is stored as fetched; the DOM after its
/// scripts ran goes beside it (`content.rendered`) and is what parse reads.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RenderConfig {
    /// Host patterns (like `fetch.delays`' keys) whose HTML pages are rendered.
    pub hosts: Vec<String>,
    /// Host patterns the browser never requests anything from (ads, trackers).
    pub block_hosts: Vec<String>,
    /// Pages rendered at the same time (open tabs).
    pub max_pages: usize,
    /// Seconds one page may take, its subresources' politeness waits included; at
    /// the budget the DOM is taken as it stands.
    pub timeout: f64,
    /// Seconds without a request in flight after the load event before the DOM is
    /// taken (scripts that fetch data after load).
    pub settle_time: f64,
    /// The resource types (DevTools names) the browser may request; the others are
    /// refused without a request.
    pub resource_types: Vec<String>,
    /// The Chromium binary; empty: `$TRAWL_CHROMIUM`, `/usr/bin/chromium`, or
    /// `chromium` on PATH.
    pub chromium: PathBuf,
}

/// The DevTools resource types `fetch.render.resource_types` may name.
pub const RESOURCE_TYPES: &[&str] = &[
    "Document",
    "Script",
    "XHR",
    "Fetch",
    "Stylesheet",
    "Image",
    "Media",
    "Font",
    "TextTrack",
    "EventSource",
    "Manifest",
    "Other",
];

impl Default for RenderConfig {
    fn default() -> Self {
        RenderConfig {
            hosts: Vec::new(),
            block_hosts: Vec::new(),
            max_pages: 2,
            timeout: 30.0,
            settle_time: 0.5,
            resource_types: ["Document", "Script", "XHR", "Fetch"]
                .map(String::from)
                .to_vec(),
            chromium: PathBuf::new(),
        }
    }
}

impl Default for FetchConfig {
    fn default() -> Self {
        FetchConfig {
            user_agent: format!("trawl/{} (batch crawler)", env!("CARGO_PKG_VERSION")),
            robots_agent: "trawl".into(),
            respect_robots: true,
            max_connections: 256,
            per_host_connections: 1,
            delay: 1.0,
            max_crawl_delay: 30.0,
            connect_timeout: 10.0,
            read_timeout: 20.0,
            total_timeout: 60.0,
            max_content_bytes: 2 * 1024 * 1024,
            time_limit: 0.0,
            lease_ttl: 30.0,
            lease_wait: 60.0,
            checkpoint_interval: 10.0,
            min_throughput: 0.0,
            min_throughput_window: 30.0,
            min_throughput_after: 60.0,
            resolve: BTreeMap::new(),
            delays: BTreeMap::new(),
            max_host_exceptions: 5,
            max_retry_after: 30.0,
            queue_mode: QueueMode::Host,
            adaptive_delay_factor: 0.0,
            min_delay: 0.0,
            max_delay: 30.0,
            robots_cache_ttl: 0.0,
            follow_redirects: 0,
            ca_file: PathBuf::new(),
            tls_verify: true,
            render: RenderConfig::default(),
        }
    }
}

/// `[parse]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ParseConfig {
    /// Maximum outlinks kept per page.
    pub max_outlinks: usize,
    /// Anchor texts are cut to this many characters.
    pub max_anchor_length: usize,
    /// Keep `rel=nofollow` links out of the crawldb.
    pub ignore_nofollow_links: bool,
    /// Pages larger than this (bytes) are not parsed (`parse_failed`, reason `too_large`).
    pub max_page_bytes: usize,
    /// Time budget per page in milliseconds, checked between parsing phases
    /// (decode, DOM, walk, main text); over it the page is `parse_failed`,
    /// reason `time_budget`. 0 = no budget.
    pub max_page_millis: u64,
    /// Pages of a document (PDF) read at most; the rest is left out.
    pub max_document_pages: usize,
    /// Wall time in milliseconds the `docparse` helper gets per document; over it the
    /// helper is stopped and the document is `parse_failed`, reason `time_budget`.
    pub max_document_millis: u64,
    /// Address space in MiB the `docparse` helper gets per document; over it the
    /// document is `parse_failed`, reason `memory_budget`.
    pub max_document_memory_mb: u64,
}

impl Default for ParseConfig {
    fn default() -> Self {
        ParseConfig {
            max_outlinks: 1000,
            max_anchor_length: 100,
            ignore_nofollow_links: true,
            max_page_bytes: 8 * 1024 * 1024,
            max_page_millis: 10_000,
            max_document_pages: 1000,
            max_document_millis: 30_000,
            max_document_memory_mb: 1024,
        }
    }
}

/// `[updatedb]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UpdateDbConfig {
    /// Add URLs discovered as outlinks (`--no-additions` turns it off).
    pub additions_allowed: bool,
    /// Seconds before a `fetch_retry` URL is due again.
    pub retry_interval: i64,
    /// Retries before a URL becomes `db_gone`.
    pub max_retries: i32,
    /// Default re-fetch interval (seconds) of new URLs.
    pub default_interval: i64,
    /// Maximum re-fetch interval (seconds).
    pub max_interval: i64,
    /// Fetch schedule: `default` (fixed) or `adaptive`.
    pub schedule: Schedule,
    /// Drop `db_gone` URLs from the crawldb.
    pub purge_gone: bool,
    /// Segment rows (fetches, signatures, links) of one partition sorted in memory;
    /// beyond it sorted runs are spilled to disk and merged. Peak memory of updatedb
    /// grows with this (about 200-300 bytes a row, times the worker threads), not
    /// with the segment size.
    pub sort_buffer_rows: usize,
}

impl Default for UpdateDbConfig {
    fn default() -> Self {
        UpdateDbConfig {
            additions_allowed: true,
            retry_interval: 86400,
            max_retries: 3,
            default_interval: 30 * 86400,
            max_interval: 90 * 86400,
            schedule: Schedule::Default,
            purge_gone: false,
            sort_buffer_rows: 400_000,
        }
    }
}

/// `[linkdb]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkDbConfig {
    /// Drop links between pages of the same host (Nutch's `db.ignore.internal.links`,
    /// which defaults to true there; here false: the search index's anchors of a
    /// site come from its internal links, docs/search.md).
    pub ignore_internal: bool,
    /// Drop links between different hosts.
    pub ignore_external: bool,
    /// Anchor texts are cut to this many characters.
    pub max_anchor_length: usize,
    /// Inlinks kept per target URL.
    pub max_inlinks: usize,
}

impl Default for LinkDbConfig {
    fn default() -> Self {
        LinkDbConfig {
            ignore_internal: false,
            ignore_external: false,
            max_anchor_length: 100,
            max_inlinks: 10_000,
        }
    }
}

/// `[pagerank]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PageRankConfig {
    /// Damping factor.
    pub damping: f64,
    /// Stop when the L1 change of an iteration (of the scores summing to 1, i.e. the
    /// mean change of the crawldb's scores, which average 1.0) is below this.
    pub tolerance: f64,
    /// Stop after this many iterations.
    pub max_iterations: usize,
    /// Graph source: `crawl` (every segment's outlinks, all links) or `linkdb`.
    pub source: GraphSource,
    /// Copy scores into the crawldb's `score` column.
    pub update_crawldb: bool,
    /// Teleport target: `uniform` (every page) or `seeds` (the depth-0 crawldb URLs
    /// and the seed hosts' home pages that are in the graph).
    pub teleport: Teleport,
    /// Also compute HITS hub/authority scores into `pagerank/hits/`.
    pub hits: bool,
    /// Also compute HostRank (PageRank of the host graph) into `pagerank/hosts/`.
    pub hostrank: bool,
    /// Drop links whose source and target have the same host (self-links included)
    /// from the page graph.
    pub ignore_internal: bool,
    /// Drop a site's template links (a target and anchor text most of a host's pages
    /// link: header, footer, sidebar) from the page graph (`crate::graph::template`).
    pub ignore_template: bool,
}

impl Default for PageRankConfig {
    fn default() -> Self {
        PageRankConfig {
            damping: 0.85,
            tolerance: 1e-6,
            max_iterations: 100,
            source: GraphSource::Crawl,
            update_crawldb: true,
            teleport: Teleport::Uniform,
            hits: false,
            hostrank: false,
            ignore_internal: false,
            ignore_template: true,
        }
    }
}

/// `[sitemaps]`: the `sitemap` stage and `inject --sitemaps` (see docs/sitemaps.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SitemapConfig {
    /// Also try `/sitemap.xml` on every host of the crawldb (not only the sitemaps
    /// that robots.txt files name).
    pub probe_sitemap_xml: bool,
    /// Deepest sitemap-index nesting followed: a sitemap named by robots.txt, inject or
    /// the probe is depth 0, one named by an index at depth d is d + 1.
    pub max_depth: u32,
    /// Seconds before a processed sitemap is fetched again.
    pub refetch_interval: i64,
    /// Most URLs (or child sitemaps) read from one file; the protocol's limit is 50,000.
    pub max_urls: usize,
    /// Most bytes read from one file, uncompressed (and downloaded); the protocol's
    /// limit is 52,428,800 (50 MB).
    pub max_bytes: u64,
    /// Most sitemaps fetched in one run; the rest wait for the next run.
    pub max_sitemaps: usize,
    /// Score of a new URL whose entry has no `<priority>` (the protocol's default, 0.5).
    pub default_priority: f64,
    /// A known, fetched URL whose `<lastmod>` is newer than its last fetch becomes due now.
    pub lastmod_refetch: bool,
}

impl Default for SitemapConfig {
    fn default() -> Self {
        SitemapConfig {
            probe_sitemap_xml: false,
            max_depth: 3,
            refetch_interval: 86400,
            max_urls: 50_000,
            max_bytes: 52_428_800,
            max_sitemaps: 100,
            default_priority: 0.5,
            lastmod_refetch: true,
        }
    }
}

/// `[index]`: the `index` stage (see docs/search.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IndexConfig {
    /// Distinct anchor texts indexed per page (the first ones of the linkdb's
    /// inlinks, in source URL order).
    pub max_anchors: usize,
    /// Bytes of each text field (title, main text, text) indexed per page.
    pub max_text_bytes: usize,
    /// Memory of the index writers' buffers (MB), split between the shards built at
    /// once (one per thread).
    pub writer_memory_mb: u64,
    /// URL patterns (regular expressions, matched anywhere in the URL) of pages
    /// crawled for their links but left out of the index: navigation, search and
    /// print pages.
    pub exclude: Vec<String>,
}

impl Default for IndexConfig {
    fn default() -> Self {
        IndexConfig {
            max_anchors: 32,
            max_text_bytes: 1_000_000,
            writer_memory_mb: 256,
            exclude: Vec::new(),
        }
    }
}

/// Longest interval (seconds) a key or a seed line's `fetch_interval=` may set: 100 years.
pub const MAX_INTERVAL_SECS: i64 = 100 * 365 * 86_400;

/// A refusal of the values read from `path`.
fn refused(path: &Path, message: String) -> Error {
    Error::Config {
        path: path.to_path_buf(),
        message,
    }
}

/// Gives a section without relations between its keys a `validate()` that checks
/// each key against its rule.
macro_rules! validate_by_rules {
    ($($section:ty => $name:literal),+ $(,)?) => {$(
        impl $section {
            #[doc = concat!("Checks every key of `[", $name, "]` against its allowed range; `path` names where the values came from.")]
            pub fn validate(&self, path: &Path) -> Result<()> {
                rules::check_section($name, self).map_err(|m| refused(path, m))
            }
        }
    )+};
}

validate_by_rules! {
    CrawlConfig => "crawl",
    UrlConfig => "urls",
    InjectConfig => "inject",
    GenerateConfig => "generate",
    ParseConfig => "parse",
    LinkDbConfig => "linkdb",
    PageRankConfig => "pagerank",
    SitemapConfig => "sitemaps",
}

impl IndexConfig {
    /// Checks every key of `[index]` against its allowed range, and that every
    /// `exclude` pattern is a regular expression; `path` names where the values came
    /// from.
    pub fn validate(&self, path: &Path) -> Result<()> {
        rules::check_section("index", self).map_err(|m| refused(path, m))?;
        for (i, p) in self.exclude.iter().enumerate() {
            regex::Regex::new(p).map_err(|e| {
                refused(
                    path,
                    format!(
                        "index.exclude[{i}] = {p:?} is not a regular expression: {e} (patterns are Rust regex syntax, matched anywhere in the URL; write \\. for a dot)"
                    ),
                )
            })?;
        }
        Ok(())
    }
}

impl FetchConfig {
    /// Checks every key of `[fetch]` against its allowed range, and that `min_delay`
    /// does not exceed `max_delay`; `path` names where the values came from.
    pub fn validate(&self, path: &Path) -> Result<()> {
        let (low, high) = (("min_delay", self.min_delay), ("max_delay", self.max_delay));
        rules::check_section("fetch", self)
            .and_then(|()| rules::not_above("fetch", low, high))
            .map_err(|m| refused(path, m))
    }

    /// The time to live of a partition task's leases, renewed by a heartbeat
    /// (`lease_ttl`); `None` without one (a one-process run, or `lease_ttl = 0`).
    pub fn lease_heartbeat(&self, is_task: bool) -> Option<std::time::Duration> {
        (is_task && self.lease_ttl > 0.0)
            .then(|| std::time::Duration::try_from_secs_f64(self.lease_ttl).unwrap_or_default())
    }

    /// How long a partition task waits for a live lease of another attempt
    /// (`lease_wait`); a one-process run does not wait (a live lease there is another
    /// run's, which may last its whole time limit).
    pub fn lease_wait(&self, is_task: bool) -> std::time::Duration {
        if !is_task {
            return std::time::Duration::ZERO;
        }
        std::time::Duration::try_from_secs_f64(self.lease_wait).unwrap_or_default()
    }
}

impl UpdateDbConfig {
    /// Checks every key of `[updatedb]` against its allowed range, and that
    /// `default_interval` does not exceed `max_interval`; `path` names where the values
    /// came from.
    pub fn validate(&self, path: &Path) -> Result<()> {
        let low = ("default_interval", self.default_interval);
        let high = ("max_interval", self.max_interval);
        rules::check_section("updatedb", self)
            .and_then(|()| rules::not_above("updatedb", low, high))
            .map_err(|m| refused(path, m))
    }
}

impl Config {
    /// Loads `path`, or the defaults when `path` is `None`.
    pub fn load(path: Option<&Path>) -> Result<Config> {
        let Some(path) = path else {
            return Ok(Config::default());
        };
        let text = std::fs::read_to_string(path).map_err(|e| Error::Config {
            path: path.to_path_buf(),
            message: format!("cannot read: {e}; pass an existing file with --config"),
        })?;
        Config::parse(&text, path)
    }

    /// Loads `path` (or the defaults) with `--set KEY=VALUE` overrides applied on top,
    /// like Nutch's `-D`: `KEY` is `section.key` (`fetch.delay`), or
    /// `section.map.NAME` for the free maps (`fetch.resolve.*.web.test`); `VALUE` is a
    /// TOML value (`0.5`, `true`, `["a", "b"]`, `"text"`), or else taken as a string.
    /// Unknown keys and out-of-range values are refused naming the `--set` at fault.
    pub fn load_with(path: Option<&Path>, sets: &[String]) -> Result<Config> {
        // An empty TRAWL_SET gives one empty value.
        let sets: Vec<&String> = sets.iter().filter(|s| !s.trim().is_empty()).collect();
        if sets.is_empty() {
            return Config::load(path);
        }
        let mut raw = match path {
            Some(p) => {
                // The file alone first, so that its errors name its lines.
                Config::load(Some(p))?;
                let text = std::fs::read_to_string(p).map_err(|e| Error::Config {
                    path: p.to_path_buf(),
                    message: format!("cannot read: {e}; pass an existing file with --config"),
                })?;
                toml::from_str::<toml::Table>(&text).map_err(|e| refused(p, e.to_string()))?
            }
            None => toml::Table::new(),
        };
        for set in sets {
            apply_set(&mut raw, set)?;
        }
        let flags = Path::new("(--set flags)");
        rules::check_known(&raw, "").map_err(|m| refused(flags, m))?;
        rules::check_file(&raw, "").map_err(|m| refused(flags, m))?;
        let cfg: Config = toml::Value::Table(raw)
            .try_into()
            .map_err(|e: toml::de::Error| refused(flags, e.to_string()))?;
        cfg.validate(flags)?;
        Ok(cfg)
    }

    /// Parses TOML text; `path` names it in errors. Unknown keys and values out of
    /// range are refused, naming the key, its line, the value and what is allowed.
    pub fn parse(text: &str, path: &Path) -> Result<Config> {
        let fail = |message: String| refused(path, message);
        let raw: toml::Table = toml::from_str(text).map_err(|e| fail(e.to_string()))?;
        rules::check_known(&raw, text).map_err(fail)?;
        rules::check_file(&raw, text).map_err(fail)?;
        let cfg: Config = toml::from_str(text).map_err(|e| fail(e.to_string()))?;
        cfg.validate(path)?;
        Ok(cfg)
    }

    /// Checks every value against its allowed range, naming the key at fault; `path`
    /// names where the values came from (the file, or the command-line flags that
    /// override it). Stages that apply flags call it again afterwards. Each section
    /// checks its own keys, in the order of the file.
    pub fn validate(&self, path: &Path) -> Result<()> {
        self.crawl.validate(path)?;
        self.urls.validate(path)?;
        self.inject.validate(path)?;
        self.generate.validate(path)?;
        self.fetch.validate(path)?;
        self.parse.validate(path)?;
        self.updatedb.validate(path)?;
        self.linkdb.validate(path)?;
        self.pagerank.validate(path)?;
        self.sitemaps.validate(path)?;
        self.index.validate(path)
    }

    /// Checks the configuration after command-line flags overrode some keys: a bad flag
    /// value is refused like a bad file value, naming the key it sets.
    pub fn validate_flags(&self) -> Result<()> {
        self.validate(Path::new("(command-line flags)"))
    }
}

/// Applies one `--set KEY=VALUE` to the raw table (see [`Config::load_with`]).
fn apply_set(raw: &mut toml::Table, set: &str) -> Result<()> {
    let bad = |message: String| Error::input(format!("--set {set}"), message);
    let Some((key, value)) = set.split_once('=') else {
        return Err(bad(
            "expected KEY=VALUE, e.g. --set fetch.delay=0.5 (keys: data/trawl.toml, docs/config.md)"
                .into(),
        ));
    };
    let key = key.trim();
    let Some((section, rest)) = key.split_once('.') else {
        return Err(bad(format!(
            "{key:?} names no key: write section.key, e.g. fetch.delay"
        )));
    };
    if section.is_empty() || rest.is_empty() {
        return Err(bad(format!(
            "{key:?} names no key: write section.key, e.g. fetch.delay"
        )));
    }
    // A value that is not TOML (a bare word, a path) is a string.
    let value = toml::from_str::<toml::Table>(&format!("v = {value}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.to_string()));
    let table = raw
        .entry(section.to_string())
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let Some(table) = table.as_table_mut() else {
        return Err(bad(format!("[{section}] is not a section")));
    };
    // A free map's entries: `fetch.resolve.NAME=VALUE`; a subsection's keys:
    // `fetch.render.KEY=VALUE`.
    let map = rules::free_map_of(section, rest).or_else(|| rules::subsection_of(section, rest));
    match map {
        Some((name, entry)) => {
            let inner = table
                .entry(name.to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            let Some(inner) = inner.as_table_mut() else {
                return Err(bad(format!("{section}.{name} is not a table")));
            };
            inner.insert(entry.to_string(), value);
        }
        None => {
            table.insert(rest.to_string(), value);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--set` overrides keys (numbers, bare strings, free-map entries) over the file,
    /// and refuses unknown keys and bad values naming them.
    #[test]
    fn set_overrides_keys_and_is_validated() {
        let sets: Vec<String> = [
            "fetch.delay=0.25",
            "generate.top_n=7",
            "fetch.user_agent=my bot/1.0",
            "fetch.resolve.*.x.test=127.0.0.1:1",
            "",
        ]
        .map(String::from)
        .to_vec();
        let cfg = Config::load_with(None, &sets).unwrap();
        assert_eq!(cfg.fetch.delay, 0.25);
        assert_eq!(cfg.generate.top_n, 7);
        assert_eq!(cfg.fetch.user_agent, "my bot/1.0");
        assert_eq!(
            cfg.fetch.resolve.get("*.x.test").map(String::as_str),
            Some("127.0.0.1:1")
        );
        for (set, says) in [
            ("fetch.dealy=1", "did you mean fetch.delay?"),
            ("fetch.delay=-1", "fetch.delay = -1"),
            ("fetch.delay", "expected KEY=VALUE"),
            ("delay=1", "names no key"),
            ("fetch.delay=fast", "fetch.delay"),
        ] {
            let e = Config::load_with(None, &[set.to_string()])
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "--set {set}: {e}");
        }
    }

    /// data/trawl.toml documents every key with its default: it must parse, and apart
    /// from the test web's resolve mapping it must equal the built-in defaults.
    #[test]
    fn shipped_config_documents_the_defaults() {
        let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/data/trawl.toml"));
        let text = std::fs::read_to_string(path).unwrap();
        let mut cfg = Config::parse(&text, path).unwrap();
        assert_eq!(
            cfg.fetch.resolve.get("*.web.test").map(String::as_str),
            Some("127.0.0.1:18080")
        );
        cfg.fetch.resolve.clear();
        let shipped = toml::to_string(&cfg).unwrap();
        let defaults = toml::to_string(&Config::default()).unwrap();
        assert_eq!(shipped, defaults);
        // Every key of the defaults appears (uncommented or commented) in the file.
        let table: toml::Table = toml::from_str(&defaults).unwrap();
        for (section, keys) in &table {
            let keys = keys.as_table().unwrap();
            assert!(
                text.contains(&format!("[{section}]")),
                "section [{section}] missing"
            );
            for key in keys.keys() {
                let documented = text.contains(&format!("{key} ="))
                    || text.contains(&format!("[{section}.{key}]"));
                assert!(documented, "key {section}.{key} not documented");
            }
        }
    }

    /// docs/config.md has a row per checked key and data/trawl.toml an `# Allowed:`
    /// comment right above it, both saying what the validation accepts.
    #[test]
    fn docs_state_every_allowed_range() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let docs = std::fs::read_to_string(root.join("docs/config.md")).unwrap();
        let shipped = std::fs::read_to_string(root.join("data/trawl.toml")).unwrap();
        let mut missing = Vec::new();
        for (key, desc) in allowed_values() {
            let row = format!("| `{key}` | {desc} |");
            if !docs.contains(&row) {
                missing.push(format!("docs/config.md: {row}"));
            }
            let (section, name) = key.split_once('.').unwrap();
            if name.contains('.') {
                continue;
            }
            let start = shipped.find(&format!("\n[{section}]\n")).unwrap();
            let body = &shipped[start + 1..];
            let body = &body[..body.find("\n[").unwrap_or(body.len())];
            let comment = format!("# Allowed: {desc}.\n{name} =");
            if !body.contains(&comment) {
                missing.push(format!("data/trawl.toml [{section}]: {comment}"));
            }
        }
        assert!(missing.is_empty(), "missing:\n{}", missing.join("\n"));
    }

    #[test]
    fn bad_values_name_file_key_line_value_and_range() {
        let p = Path::new("t.toml");
        for (text, want) in [
            (
                "[fetch]\ndelay = nan\n",
                "config t.toml: fetch.delay = nan (line 2) is not allowed: expected a number from 0 to 86400 seconds; the default is 1.0",
            ),
            (
                "[fetch]\n\ndelay = inf\n",
                "fetch.delay = inf (line 3) is not allowed",
            ),
            (
                "[inject]\nscore = nan\n",
                "inject.score = nan (line 2) is not allowed: expected a finite number; the default is 1.0",
            ),
            (
                "[inject]\nfetch_interval = -1\n",
                "inject.fetch_interval = -1 (line 2) is not allowed: expected an integer from 1 to 3153600000 seconds",
            ),
            (
                "[updatedb]\nmax_retries = -1\n",
                "updatedb.max_retries = -1 (line 2) is not allowed: expected an integer from 0 to 1000; the default is 3",
            ),
            (
                "[urls]\nschemes = [\"gopher\"]\n",
                "urls.schemes = [\"gopher\"] (line 2) is not allowed: expected a non-empty list of \"http\", \"https\"",
            ),
            ("[urls]\nschemes = []\n", "urls.schemes = []"),
            (
                "[fetch]\nmax_connections = -1\n",
                "fetch.max_connections = -1 (line 2) is not allowed: expected an integer from 1 to 65536",
            ),
            (
                "[fetch]\nmax_connections = 2.5\n",
                "fetch.max_connections = 2.5 (line 2) is not allowed: expected an integer",
            ),
            (
                "[fetch]\ndelay = \"fast\"\n",
                "fetch.delay = \"fast\" (line 2) is not allowed: expected a number",
            ),
            (
                "[fetch.delays]\n\"*.a.test\" = -1\n",
                "fetch.delays.\"*.a.test\" = -1 (line 2) is not allowed: expected a number from 0 to 86400 seconds",
            ),
            (
                "[generate]\nmin_score = nan\n",
                "generate.min_score = nan (line 2) is not allowed: expected a finite number, or -inf (no minimum); the default is -inf",
            ),
            (
                "[fetch]\nuser_agent = \"a\\nb\"\n",
                "fetch.user_agent = \"a\\nb\" (line 2) is not allowed",
            ),
            (
                "[updatedb]\ndefault_interval = 100\nmax_interval = 10\n",
                "updatedb.default_interval = 100 is above updatedb.max_interval = 10",
            ),
        ] {
            let e = Config::parse(text, p).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        // -inf is the default of generate.min_score and stays allowed.
        assert!(Config::parse("[generate]\nmin_score = -inf\n", p).is_ok());
        // Overrides from flags are checked the same way.
        let mut cfg = Config::default();
        cfg.fetch.delay = f64::NAN;
        let e = cfg.validate_flags().unwrap_err().to_string();
        assert!(
            e.starts_with("config (command-line flags): fetch.delay = nan is not allowed"),
            "{e}"
        );
    }

    /// A value outside an enum's set is refused by the rules (key, line, allowed
    /// values, default), never with serde's message.
    #[test]
    fn bad_enum_values_name_key_line_and_allowed_values() {
        let p = Path::new("t.toml");
        for (section, key, names, default) in [
            (
                "urls",
                "scope",
                UrlScope::NAMES,
                UrlScope::default().as_str(),
            ),
            ("generate", "count_mode", CountMode::NAMES, "host"),
            ("fetch", "queue_mode", QueueMode::NAMES, "host"),
            ("updatedb", "schedule", Schedule::NAMES, "default"),
            ("pagerank", "source", GraphSource::NAMES, "crawl"),
            ("pagerank", "teleport", Teleport::NAMES, "uniform"),
        ] {
            let text = format!("[{section}]\n\n{key} = \"planet\"\n");
            let e = Config::parse(&text, p).unwrap_err().to_string();
            let allowed: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
            let want = format!(
                "config t.toml: {section}.{key} = \"planet\" (line 3) is not allowed: expected one of {}; the default is \"{default}\"",
                allowed.join(", ")
            );
            assert_eq!(e, want);
            for name in names {
                let text = format!("[{section}]\n{key} = \"{name}\"\n");
                assert!(Config::parse(&text, p).is_ok(), "{text}");
            }
        }
    }

    #[test]
    fn unknown_keys_suggest_the_nearest() {
        let p = Path::new("t.toml");
        for (text, want) in [
            (
                "[fetch]\ndelai = 2\n",
                "config t.toml: unknown key fetch.delai (line 2); did you mean fetch.delay?",
            ),
            (
                "[crawl]\n\ndelay = 2\n",
                "unknown key crawl.delay (line 3); did you mean fetch.delay?",
            ),
            (
                "delay = 2\n",
                "unknown key delay (line 1); did you mean fetch.delay?",
            ),
            (
                "[fecth]\ndelay = 2\n",
                "unknown section [fecth] (line 1); did you mean [fetch]?",
            ),
            ("[fetch.foo]\nx = 1\n", "unknown key fetch.foo (line 1)"),
            (
                "[fetch]\nzzzzzzzz = 1\n",
                "unknown key fetch.zzzzzzzz (line 2) (every key",
            ),
        ] {
            let e = Config::parse(text, p).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        // Free maps take any pattern; the optional filter file is a known key.
        let ok = "[fetch.delays]\n\"*.a.test\" = 2.0\n[fetch.resolve]\n\"b.test\" = \"127.0.0.1:9\"\n[urls]\nfilter_file = \"f.txt\"\n";
        assert!(Config::parse(ok, p).is_ok());
    }

    /// `[fetch.render]` is a section inside `[fetch]`: its keys are checked like any
    /// other (unknown ones refused with the nearest, values against their rule with
    /// the line), and `--set fetch.render.KEY=VALUE` sets them.
    #[test]
    fn render_subsection_keys_are_checked_and_settable() {
        let p = Path::new("t.toml");
        let text = "[fetch.render]\nhosts = [\"*.app.test\"]\nmax_pages = 4\ntimeout = 10.0\n";
        let cfg = Config::parse(text, p).unwrap();
        assert_eq!(cfg.fetch.render.hosts, ["*.app.test"]);
        assert_eq!(
            (cfg.fetch.render.max_pages, cfg.fetch.render.timeout),
            (4, 10.0)
        );
        for (text, want) in [
            (
                "[fetch.render]\ntimout = 3\n",
                "unknown key fetch.render.timout (line 2); did you mean fetch.render.timeout?",
            ),
            (
                "[fetch.render]\n\nmax_pages = 0\n",
                "fetch.render.max_pages = 0 (line 3) is not allowed: expected an integer from 1 to 256 pages; the default is 2",
            ),
            (
                "[fetch.render]\ntimeout = 0\n",
                "fetch.render.timeout = 0 (line 2) is not allowed: expected a number above 0 and up to 3600 seconds",
            ),
            (
                "[fetch.render]\nresource_types = [\"Script\", \"Pictures\"]\n",
                "fetch.render.resource_types = [\"Script\", \"Pictures\"] (line 2) is not allowed: expected a non-empty list of \"Document\"",
            ),
            ("[fetch]\nrender = 3\n", "unknown key fetch.render"),
        ] {
            let e = Config::parse(text, p).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let sets = [
            "fetch.render.hosts=[\"a.test\"]".to_string(),
            "fetch.render.settle_time=0".to_string(),
        ];
        let cfg = Config::load_with(None, &sets).unwrap();
        assert_eq!(cfg.fetch.render.hosts, ["a.test"]);
        assert_eq!(cfg.fetch.render.settle_time, 0.0);
        let e = Config::load_with(None, &["fetch.render.max_pages=999".to_string()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("(--set flags): fetch.render.max_pages = 999"),
            "{e}"
        );
        let e = Config::load_with(None, &["fetch.render.tabs=2".to_string()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown key fetch.render.tabs"), "{e}");
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let p = Path::new("t.toml");
        let e = Config::parse("[fetch]\ndelai = 2\n", p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("delai"), "{e}");
        let e = Config::parse("[urls]\nscope = \"planet\"\n", p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("urls.scope"), "{e}");
        for (text, key) in [
            ("[fetch]\nqueue_mode = \"site\"\n", "fetch.queue_mode"),
            (
                "[fetch]\nrobots_cache_ttl = 90000\n",
                "fetch.robots_cache_ttl",
            ),
            ("[fetch]\nmin_delay = 5\nmax_delay = 1\n", "fetch.min_delay"),
        ] {
            let e = Config::parse(text, p).unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        }
    }
}
