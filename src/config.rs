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
}

/// `[crawl]`: settings every stage shares.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CrawlConfig {
    /// Default crawl directory (`--crawl-dir` overrides).
    pub dir: PathBuf,
    /// Number of host partitions of the crawldb and of segment datasets.
    pub partitions: usize,
    /// Worker threads for rayon kernels (0 = one per core).
    pub threads: usize,
}

impl Default for CrawlConfig {
    fn default() -> Self {
        CrawlConfig {
            dir: PathBuf::from("crawl"),
            partitions: 8,
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
    pub scope: String,
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
            scope: "any".into(),
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
}

impl Default for InjectConfig {
    fn default() -> Self {
        InjectConfig {
            score: 1.0,
            fetch_interval: 30 * 86400,
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
    pub count_mode: String,
    /// URLs scoring below this are not generated.
    pub min_score: f64,
    /// Seconds after which a fetch list that never reached updatedb no longer locks its URLs.
    pub gen_delay: i64,
}

impl Default for GenerateConfig {
    fn default() -> Self {
        GenerateConfig {
            top_n: 50_000,
            max_per_host: 100,
            count_mode: "host".into(),
            min_score: f64::NEG_INFINITY,
            gen_delay: 7 * 86400,
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
    pub queue_mode: String,
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
            min_throughput: 0.0,
            min_throughput_window: 30.0,
            min_throughput_after: 60.0,
            resolve: BTreeMap::new(),
            delays: BTreeMap::new(),
            max_host_exceptions: 5,
            max_retry_after: 30.0,
            queue_mode: "host".into(),
            adaptive_delay_factor: 0.0,
            min_delay: 0.0,
            max_delay: 30.0,
            robots_cache_ttl: 0.0,
            follow_redirects: 0,
            ca_file: PathBuf::new(),
            tls_verify: true,
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
}

impl Default for ParseConfig {
    fn default() -> Self {
        ParseConfig {
            max_outlinks: 1000,
            max_anchor_length: 100,
            ignore_nofollow_links: true,
            max_page_bytes: 8 * 1024 * 1024,
            max_page_millis: 10_000,
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
    pub schedule: String,
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
            schedule: "default".into(),
            purge_gone: false,
            sort_buffer_rows: 400_000,
        }
    }
}

/// `[linkdb]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkDbConfig {
    /// Drop links between pages of the same host.
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
            ignore_internal: true,
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
    pub source: String,
    /// Copy scores into the crawldb's `score` column.
    pub update_crawldb: bool,
    /// Teleport target: `uniform` (every page) or `seeds` (the depth-0 crawldb URLs
    /// and the seed hosts' home pages that are in the graph).
    pub teleport: String,
    /// Also compute HITS hub/authority scores into `pagerank/hits/`.
    pub hits: bool,
    /// Also compute HostRank (PageRank of the host graph) into `pagerank/hosts/`.
    pub hostrank: bool,
    /// Drop links whose source and target have the same host (self-links included)
    /// from the page graph.
    pub ignore_internal: bool,
}

impl Default for PageRankConfig {
    fn default() -> Self {
        PageRankConfig {
            damping: 0.85,
            tolerance: 1e-6,
            max_iterations: 100,
            source: "crawl".into(),
            update_crawldb: true,
            teleport: "uniform".into(),
            hits: false,
            hostrank: false,
            ignore_internal: false,
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

    /// Parses TOML text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Config> {
        let cfg: Config = toml::from_str(text).map_err(|e| Error::Config {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        cfg.validate(path)?;
        Ok(cfg)
    }

    /// Checks value ranges, naming the key at fault.
    pub fn validate(&self, path: &Path) -> Result<()> {
        let bad = |key: &str, why: &str| {
            Err(Error::Config {
                path: path.to_path_buf(),
                message: format!("{key}: {why}"),
            })
        };
        if self.crawl.partitions == 0 || self.crawl.partitions > 4096 {
            return bad("crawl.partitions", "must be between 1 and 4096");
        }
        if !matches!(self.urls.scope.as_str(), "any" | "host" | "domain") {
            return bad("urls.scope", "must be \"any\", \"host\" or \"domain\"");
        }
        if !matches!(self.generate.count_mode.as_str(), "host" | "domain") {
            return bad("generate.count_mode", "must be \"host\" or \"domain\"");
        }
        if !matches!(self.updatedb.schedule.as_str(), "default" | "adaptive") {
            return bad("updatedb.schedule", "must be \"default\" or \"adaptive\"");
        }
        if !(0.0..1.0).contains(&self.pagerank.damping) {
            return bad("pagerank.damping", "must be in [0, 1)");
        }
        if !matches!(self.pagerank.source.as_str(), "crawl" | "linkdb") {
            return bad("pagerank.source", "must be \"crawl\" or \"linkdb\"");
        }
        if !matches!(self.pagerank.teleport.as_str(), "uniform" | "seeds") {
            return bad("pagerank.teleport", "must be \"uniform\" or \"seeds\"");
        }
        if self.pagerank.tolerance.is_nan() || self.pagerank.tolerance < 0.0 {
            return bad("pagerank.tolerance", "must be a number >= 0");
        }
        if self.fetch.max_connections == 0 || self.fetch.per_host_connections == 0 {
            return bad(
                "fetch.max_connections / fetch.per_host_connections",
                "must be at least 1",
            );
        }
        if self.fetch.delay < 0.0 {
            return bad("fetch.delay", "must not be negative");
        }
        let f = &self.fetch;
        for (key, v) in [
            ("fetch.connect_timeout", f.connect_timeout),
            ("fetch.read_timeout", f.read_timeout),
            ("fetch.total_timeout", f.total_timeout),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return bad(key, "must be a positive number of seconds");
            }
        }
        for (key, v) in [
            ("fetch.max_crawl_delay", f.max_crawl_delay),
            ("fetch.max_retry_after", f.max_retry_after),
            ("fetch.time_limit", f.time_limit),
            ("fetch.min_throughput", f.min_throughput),
            ("fetch.min_throughput_after", f.min_throughput_after),
            ("fetch.adaptive_delay_factor", f.adaptive_delay_factor),
            ("fetch.min_delay", f.min_delay),
            ("fetch.max_delay", f.max_delay),
            ("fetch.robots_cache_ttl", f.robots_cache_ttl),
        ] {
            if v < 0.0 || v.is_nan() {
                return bad(key, "must not be negative");
            }
        }
        for (pattern, v) in &f.delays {
            if !(*v >= 0.0 && v.is_finite()) {
                return bad(
                    &format!("fetch.delays.\"{pattern}\""),
                    "must be a non-negative number of seconds",
                );
            }
        }
        if !(f.min_throughput_window > 0.0 && f.min_throughput_window.is_finite()) {
            return bad(
                "fetch.min_throughput_window",
                "must be a positive number of seconds",
            );
        }
        if !matches!(f.queue_mode.as_str(), "host" | "domain" | "ip") {
            return bad("fetch.queue_mode", "must be \"host\", \"domain\" or \"ip\"");
        }
        if f.min_delay > f.max_delay {
            return bad("fetch.min_delay", "must not exceed fetch.max_delay");
        }
        if f.robots_cache_ttl > 86400.0 {
            return bad(
                "fetch.robots_cache_ttl",
                "must be at most 86400 seconds (24 h, RFC 9309)",
            );
        }
        let sm = &self.sitemaps;
        if sm.max_urls == 0 || sm.max_urls > 50_000 {
            return bad(
                "sitemaps.max_urls",
                "must be between 1 and 50000 (the protocol's limit)",
            );
        }
        if sm.max_bytes == 0 || sm.max_bytes > 52_428_800 {
            return bad(
                "sitemaps.max_bytes",
                "must be between 1 and 52428800 (50 MB, the protocol's limit)",
            );
        }
        if sm.refetch_interval <= 0 {
            return bad(
                "sitemaps.refetch_interval",
                "must be a positive number of seconds",
            );
        }
        if !(0.0..=1.0).contains(&sm.default_priority) {
            return bad("sitemaps.default_priority", "must be in [0, 1]");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
