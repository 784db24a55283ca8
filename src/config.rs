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

/// Longest interval (seconds) a key or a seed line's `fetch_interval=` may set: 100 years.
pub const MAX_INTERVAL_SECS: i64 = 100 * 365 * 86_400;

/// One day in seconds: the longest delay, timeout or wait a key may set.
const DAY: f64 = 86_400.0;
/// One year in seconds: the longest run-time limit a key may set.
const YEAR: f64 = 365.0 * DAY;

/// What a key accepts.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// An integer in `[min, max]` (`max == i64::MAX`: no upper bound).
    Int(i64, i64),
    /// A finite number between `min` and `max` (`f64::MAX`: no upper bound); the bounds
    /// are excluded when `open_min` / `open_max`.
    Num {
        min: f64,
        max: f64,
        open_min: bool,
        open_max: bool,
    },
    /// Any finite number, or `-inf` (a lower bound that is off).
    FloorOrNegInf,
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// A non-empty list of these strings.
    ListOf(&'static [&'static str]),
    /// A non-empty string without control characters.
    Text,
}

/// `[min, max]`.
const fn closed(min: f64, max: f64) -> Rule {
    Rule::Num {
        min,
        max,
        open_min: false,
        open_max: false,
    }
}

/// `(0, max]`.
const fn positive(max: f64) -> Rule {
    Rule::Num {
        min: 0.0,
        max,
        open_min: true,
        open_max: false,
    }
}

/// Any finite number >= `min`.
const fn at_least(min: f64) -> Rule {
    closed(min, f64::MAX)
}

const UNBOUNDED: i64 = i64::MAX;

/// Every checked key: `section.key`, what it accepts, and the unit named in messages
/// (empty when none). docs/config.md lists the same ranges.
const RULES: &[(&str, Rule, &str)] = &[
    ("crawl.dir", Rule::Text, ""),
    ("crawl.partitions", Rule::Int(1, 4096), ""),
    ("crawl.threads", Rule::Int(0, 1024), ""),
    ("urls.schemes", Rule::ListOf(&["http", "https"]), ""),
    ("urls.max_length", Rule::Int(1, 65_536), "bytes"),
    ("urls.scope", Rule::OneOf(&["any", "host", "domain"]), ""),
    ("urls.max_depth", Rule::Int(0, 1_000_000), ""),
    ("inject.score", at_least(f64::MIN), ""),
    (
        "inject.fetch_interval",
        Rule::Int(1, MAX_INTERVAL_SECS),
        "seconds",
    ),
    ("generate.top_n", Rule::Int(1, UNBOUNDED), ""),
    ("generate.max_per_host", Rule::Int(0, UNBOUNDED), ""),
    ("generate.count_mode", Rule::OneOf(&["host", "domain"]), ""),
    ("generate.min_score", Rule::FloorOrNegInf, ""),
    (
        "generate.gen_delay",
        Rule::Int(0, MAX_INTERVAL_SECS),
        "seconds",
    ),
    ("fetch.user_agent", Rule::Text, ""),
    ("fetch.robots_agent", Rule::Text, ""),
    ("fetch.max_connections", Rule::Int(1, 65_536), ""),
    ("fetch.per_host_connections", Rule::Int(1, 65_536), ""),
    ("fetch.delay", closed(0.0, DAY), "seconds"),
    ("fetch.max_crawl_delay", closed(0.0, DAY), "seconds"),
    ("fetch.connect_timeout", positive(DAY), "seconds"),
    ("fetch.read_timeout", positive(DAY), "seconds"),
    ("fetch.total_timeout", positive(DAY), "seconds"),
    ("fetch.max_content_bytes", Rule::Int(1, 1 << 30), "bytes"),
    ("fetch.time_limit", closed(0.0, YEAR), "seconds"),
    ("fetch.min_throughput", at_least(0.0), "URLs per second"),
    ("fetch.min_throughput_window", positive(DAY), "seconds"),
    ("fetch.min_throughput_after", closed(0.0, YEAR), "seconds"),
    ("fetch.max_host_exceptions", Rule::Int(0, UNBOUNDED), ""),
    ("fetch.max_retry_after", closed(0.0, DAY), "seconds"),
    (
        "fetch.queue_mode",
        Rule::OneOf(&["host", "domain", "ip"]),
        "",
    ),
    ("fetch.adaptive_delay_factor", closed(0.0, 1000.0), ""),
    ("fetch.min_delay", closed(0.0, DAY), "seconds"),
    ("fetch.max_delay", closed(0.0, DAY), "seconds"),
    (
        "fetch.robots_cache_ttl",
        closed(0.0, DAY),
        "seconds (24 h, RFC 9309)",
    ),
    ("fetch.follow_redirects", Rule::Int(0, 20), ""),
    ("parse.max_outlinks", Rule::Int(0, UNBOUNDED), ""),
    (
        "parse.max_anchor_length",
        Rule::Int(0, UNBOUNDED),
        "characters",
    ),
    ("parse.max_page_bytes", Rule::Int(1, UNBOUNDED), "bytes"),
    (
        "parse.max_page_millis",
        Rule::Int(0, 86_400_000),
        "milliseconds",
    ),
    (
        "updatedb.retry_interval",
        Rule::Int(0, MAX_INTERVAL_SECS),
        "seconds",
    ),
    ("updatedb.max_retries", Rule::Int(0, 1000), ""),
    (
        "updatedb.default_interval",
        Rule::Int(1, MAX_INTERVAL_SECS),
        "seconds",
    ),
    (
        "updatedb.max_interval",
        Rule::Int(1, MAX_INTERVAL_SECS),
        "seconds",
    ),
    (
        "updatedb.schedule",
        Rule::OneOf(&["default", "adaptive"]),
        "",
    ),
    ("updatedb.sort_buffer_rows", Rule::Int(1, UNBOUNDED), "rows"),
    (
        "linkdb.max_anchor_length",
        Rule::Int(0, UNBOUNDED),
        "characters",
    ),
    ("linkdb.max_inlinks", Rule::Int(1, UNBOUNDED), ""),
    (
        "pagerank.damping",
        Rule::Num {
            min: 0.0,
            max: 1.0,
            open_min: false,
            open_max: true,
        },
        "",
    ),
    ("pagerank.tolerance", at_least(0.0), ""),
    ("pagerank.max_iterations", Rule::Int(1, 1_000_000), ""),
    ("pagerank.source", Rule::OneOf(&["crawl", "linkdb"]), ""),
    ("pagerank.teleport", Rule::OneOf(&["uniform", "seeds"]), ""),
    ("sitemaps.max_depth", Rule::Int(0, 100), ""),
    (
        "sitemaps.refetch_interval",
        Rule::Int(1, MAX_INTERVAL_SECS),
        "seconds",
    ),
    (
        "sitemaps.max_urls",
        Rule::Int(1, 50_000),
        "(the protocol's limit)",
    ),
    (
        "sitemaps.max_bytes",
        Rule::Int(1, 52_428_800),
        "bytes (50 MB, the protocol's limit)",
    ),
    ("sitemaps.max_sitemaps", Rule::Int(1, UNBOUNDED), ""),
    ("sitemaps.default_priority", closed(0.0, 1.0), ""),
];

/// The rule of the values of a free map (`[fetch.delays]`): seconds like `fetch.delay`.
const DELAYS_RULE: Rule = closed(0.0, DAY);

/// Sections whose keys are free (host patterns), not a fixed set.
const FREE_MAPS: &[&str] = &["fetch.delays", "fetch.resolve"];

impl Rule {
    /// Whether `v` satisfies the rule.
    fn accepts(self, v: &toml::Value) -> bool {
        let number = || match v {
            toml::Value::Float(f) => Some(*f),
            toml::Value::Integer(i) => Some(*i as f64),
            _ => None,
        };
        match self {
            Rule::Int(min, max) => v.as_integer().is_some_and(|i| (min..=max).contains(&i)),
            Rule::Num {
                min,
                max,
                open_min,
                open_max,
            } => number().is_some_and(|f| {
                f.is_finite()
                    && if open_min { f > min } else { f >= min }
                    && if open_max { f < max } else { f <= max }
            }),
            Rule::FloorOrNegInf => {
                number().is_some_and(|f| f.is_finite() || f == f64::NEG_INFINITY)
            }
            Rule::OneOf(allowed) => v.as_str().is_some_and(|s| allowed.contains(&s)),
            Rule::ListOf(allowed) => v.as_array().is_some_and(|items| {
                !items.is_empty()
                    && items
                        .iter()
                        .all(|i| i.as_str().is_some_and(|s| allowed.contains(&s)))
            }),
            Rule::Text => v
                .as_str()
                .is_some_and(|s| !s.trim().is_empty() && !s.chars().any(char::is_control)),
        }
    }

    /// What the rule accepts, for messages and docs: "an integer from 1 to 4096".
    fn describe(self, unit: &str) -> String {
        let unit = if unit.is_empty() {
            String::new()
        } else {
            format!(" {unit}")
        };
        let quoted = |allowed: &[&str]| {
            allowed
                .iter()
                .map(|s| format!("\"{s}\""))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Rule::Int(min, UNBOUNDED) => format!("an integer >= {min}{unit}"),
            Rule::Int(min, max) => format!("an integer from {min} to {max}{unit}"),
            Rule::Num { min, .. } if min == f64::MIN => format!("a finite number{unit}"),
            Rule::Num {
                min,
                max,
                open_min,
                open_max,
            } => match (open_min, open_max, max == f64::MAX) {
                (false, _, true) => format!("a finite number >= {min}{unit}"),
                (true, _, true) => format!("a finite number > {min}{unit}"),
                (false, false, false) => format!("a number from {min} to {max}{unit}"),
                (true, false, false) => format!("a number above {min} and up to {max}{unit}"),
                (false, true, false) => {
                    format!("a number from {min} up to (not including) {max}{unit}")
                }
                (true, true, false) => {
                    format!("a number between {min} and {max} (both excluded){unit}")
                }
            },
            Rule::FloorOrNegInf => "a finite number, or -inf (no minimum)".into(),
            Rule::OneOf(allowed) => format!("one of {}", quoted(allowed)),
            Rule::ListOf(allowed) => format!("a non-empty list of {}", quoted(allowed)),
            Rule::Text => "a non-empty string without control characters".into(),
        }
    }
}

/// Shows a value as TOML spells it (strings quoted, `nan`, `inf`), cut to 80 characters.
fn show(v: &toml::Value) -> String {
    let s = match v {
        // One line whatever the string holds (control characters escaped).
        toml::Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s,
    }
}

/// The value at `section.key` of a parsed document.
fn lookup<'a>(table: &'a toml::Table, key: &str) -> Option<&'a toml::Value> {
    let (section, name) = key.split_once('.')?;
    table.get(section)?.as_table()?.get(name)
}

/// The 1-based line where `path` (section, key, ...) is written in `text`, if found.
fn line_of(text: &str, path: &[&str]) -> Option<usize> {
    let doc = toml::de::DeTable::parse(text).ok()?;
    let mut table = doc.get_ref();
    let mut span = None;
    for (i, name) in path.iter().enumerate() {
        let (k, v) = table.iter().find(|(k, _)| k.get_ref() == name)?;
        span = Some(k.span());
        if i + 1 < path.len() {
            match v.get_ref() {
                toml::de::DeValue::Table(t) => table = t,
                _ => return None,
            }
        }
    }
    let start = span?.start;
    Some(text.get(..start)?.matches('\n').count() + 1)
}

/// Edit distance of two short strings (for "did you mean").
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The known key nearest to `key` (`section.key`), when near enough to be a typo or a
/// key put in the wrong section.
fn nearest<'a>(key: &str, known: &'a [String]) -> Option<&'a str> {
    let name = key.rsplit('.').next().unwrap_or(key);
    if let Some(k) = known
        .iter()
        .find(|k| k.rsplit('.').next() == Some(name) && k.as_str() != key)
    {
        return Some(k);
    }
    let (d, best) = known
        .iter()
        .map(|k| (distance(key, k), k.as_str()))
        .min_by_key(|(d, _)| *d)?;
    (d <= (key.len() / 3).max(2)).then_some(best)
}

/// Every `section.key` of the configuration (sections alone for the free maps).
fn known_keys() -> Vec<String> {
    let mut keys = Vec::new();
    if let Ok(defaults) = toml::Table::try_from(Config::default()) {
        for (section, value) in &defaults {
            if let Some(t) = value.as_table() {
                keys.extend(t.keys().map(|k| format!("{section}.{k}")));
            }
        }
    }
    // Keys whose default (None) does not serialize.
    keys.push("urls.filter_file".into());
    keys.sort();
    keys
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

    /// Parses TOML text; `path` names it in errors. Unknown keys and values out of
    /// range are refused, naming the key, its line, the value and what is allowed.
    pub fn parse(text: &str, path: &Path) -> Result<Config> {
        let fail = |message: String| Error::Config {
            path: path.to_path_buf(),
            message,
        };
        let raw: toml::Table = toml::from_str(text).map_err(|e| fail(e.to_string()))?;
        check_known(&raw, text).map_err(fail)?;
        check_rules(&raw, Some(text)).map_err(fail)?;
        let cfg: Config = toml::from_str(text).map_err(|e| fail(e.to_string()))?;
        cfg.validate(path)?;
        Ok(cfg)
    }

    /// Checks every value against its allowed range, naming the key at fault; `path`
    /// names where the values came from (the file, or the command-line flags that
    /// override it). Stages that apply flags call it again afterwards.
    pub fn validate(&self, path: &Path) -> Result<()> {
        let fail = |message: String| Error::Config {
            path: path.to_path_buf(),
            message,
        };
        let table = toml::Table::try_from(self)
            .map_err(|e| fail(format!("a value is out of range: {e}")))?;
        check_rules(&table, None).map_err(fail)?;
        if self.fetch.min_delay > self.fetch.max_delay {
            return Err(fail(format!(
                "fetch.min_delay = {} is above fetch.max_delay = {}: min_delay must not exceed max_delay",
                self.fetch.min_delay, self.fetch.max_delay
            )));
        }
        if self.updatedb.default_interval > self.updatedb.max_interval {
            return Err(fail(format!(
                "updatedb.default_interval = {} is above updatedb.max_interval = {}: default_interval must not exceed max_interval",
                self.updatedb.default_interval, self.updatedb.max_interval
            )));
        }
        Ok(())
    }

    /// Checks the configuration after command-line flags overrode some keys: a bad flag
    /// value is refused like a bad file value, naming the key it sets.
    pub fn validate_flags(&self) -> Result<()> {
        self.validate(Path::new("(command-line flags)"))
    }
}

/// Refuses keys and sections the configuration does not have, suggesting the nearest.
fn check_known(raw: &toml::Table, text: &str) -> std::result::Result<(), String> {
    let known = known_keys();
    let mut sections: Vec<&str> = known
        .iter()
        .filter_map(|k| k.split_once('.').map(|(s, _)| s))
        .collect();
    sections.dedup();
    let refuse = |what: &str, name: &str, path: &[&str], hint: Option<&str>| {
        let line = line_of(text, path).map_or(String::new(), |l| format!(" (line {l})"));
        let hint = hint.map_or(String::new(), |k| format!("; did you mean {k}?"));
        Err(format!(
            "unknown {what} {name}{line}{hint} (every key is listed in data/trawl.toml and docs/config.md)"
        ))
    };
    for (section, value) in raw {
        let Some(table) = value.as_table() else {
            return refuse("key", section, &[section], nearest(section, &known));
        };
        if !sections.contains(&section.as_str()) {
            let hint = sections
                .iter()
                .map(|s| (distance(section, s), *s))
                .min_by_key(|(d, _)| *d)
                .filter(|(d, _)| *d <= 2)
                .map(|(_, s)| format!("[{s}]"));
            return refuse(
                "section",
                &format!("[{section}]"),
                &[section],
                hint.as_deref(),
            );
        }
        for key in table.keys() {
            let full = format!("{section}.{key}");
            if FREE_MAPS.contains(&full.as_str()) || known.contains(&full) {
                continue;
            }
            return refuse("key", &full, &[section, key], nearest(&full, &known));
        }
    }
    Ok(())
}

/// Checks every ruled key present in `table`; `text` (the file) locates the line.
fn check_rules(table: &toml::Table, text: Option<&str>) -> std::result::Result<(), String> {
    let defaults = toml::Table::try_from(Config::default()).unwrap_or_default();
    let refuse = |key: &str, path: &[&str], v: &toml::Value, rule: Rule, unit: &str| {
        let line = text
            .and_then(|t| line_of(t, path))
            .map_or(String::new(), |l| format!(" (line {l})"));
        let default = lookup(&defaults, key)
            .map_or(String::new(), |d| format!("; the default is {}", show(d)));
        Err(format!(
            "{key} = {}{line} is not allowed: expected {}{default}",
            show(v),
            rule.describe(unit)
        ))
    };
    for &(key, rule, unit) in RULES {
        let Some(v) = lookup(table, key) else {
            continue;
        };
        if !rule.accepts(v) {
            let path: Vec<&str> = key.split('.').collect();
            return refuse(key, &path, v, rule, unit);
        }
    }
    if let Some(delays) = table
        .get("fetch")
        .and_then(|f| f.get("delays"))
        .and_then(toml::Value::as_table)
    {
        for (pattern, v) in delays {
            if !DELAYS_RULE.accepts(v) {
                let key = format!("fetch.delays.\"{pattern}\"");
                return refuse(
                    &key,
                    &["fetch", "delays", pattern],
                    v,
                    DELAYS_RULE,
                    "seconds",
                );
            }
        }
    }
    Ok(())
}

/// The allowed values of every checked key, as `(section.key, description)`, in the
/// order of the sections (docs/config.md and data/trawl.toml state the same).
pub fn allowed_values() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = RULES
        .iter()
        .map(|&(key, rule, unit)| (key.to_string(), rule.describe(unit)))
        .collect();
    out.push((
        "fetch.delays.<pattern>".into(),
        DELAYS_RULE.describe("seconds"),
    ));
    out
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
