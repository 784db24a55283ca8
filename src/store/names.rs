//! Every dataset name and file name of the crawl directory: the only place they are
//! spelled. Code elsewhere asks [`CrawlDir`](super::layout::CrawlDir) and
//! [`Segment`](super::layout::Segment) for paths, or names a dataset with
//! [`SegmentDataset`] / [`VersionedDb`].

use std::fmt;

/// A dataset of a segment (`segments/<name>/<dataset>/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SegmentDataset {
    /// `crawl_generate/`: the fetch list (written by generate).
    CrawlGenerate,
    /// `crawl_fetch/`: one fetch status per URL (fetch).
    CrawlFetch,
    /// `content/`: raw pages (fetch).
    Content,
    /// `robots/`: one row per robots.txt origin (fetch; read by the sitemap stage).
    Robots,
    /// `parse_text/`: extracted text (parse).
    ParseText,
    /// `parse_data/`: outlinks, metadata, signatures (parse).
    ParseData,
    /// `crawl_parse/`: parse statuses and signatures for updatedb (parse).
    CrawlParse,
    /// `parse_inlinks/`: every outlink of `parse_data` inverted (target, source,
    /// anchor), partitioned by the target's host: linkdb's shuffle (parse).
    ParseInlinks,
}

impl SegmentDataset {
    /// Every segment dataset, in the order the stages write them: every tool that
    /// lists, copies, merges or deletes segment data goes through this list.
    pub const ALL: [SegmentDataset; 8] = [
        SegmentDataset::CrawlGenerate,
        SegmentDataset::CrawlFetch,
        SegmentDataset::Content,
        SegmentDataset::Robots,
        SegmentDataset::ParseText,
        SegmentDataset::ParseData,
        SegmentDataset::CrawlParse,
        SegmentDataset::ParseInlinks,
    ];

    /// The directory name of the dataset inside its segment.
    pub const fn as_str(self) -> &'static str {
        match self {
            SegmentDataset::CrawlGenerate => "crawl_generate",
            SegmentDataset::CrawlFetch => "crawl_fetch",
            SegmentDataset::Content => "content",
            SegmentDataset::Robots => "robots",
            SegmentDataset::ParseText => "parse_text",
            SegmentDataset::ParseData => "parse_data",
            SegmentDataset::CrawlParse => "crawl_parse",
            SegmentDataset::ParseInlinks => "parse_inlinks",
        }
    }

    /// The dataset named `name` (a directory name, as [`SegmentDataset::as_str`]).
    pub fn parse(name: &str) -> Option<SegmentDataset> {
        SegmentDataset::ALL.into_iter().find(|d| d.as_str() == name)
    }
}

impl fmt::Display for SegmentDataset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A versioned dataset of the crawl directory (`<name>/current/`, `<name>/old/`,
/// `<name>/.lock`), written through [`super::versioned::VersionedDataset`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VersionedDb {
    /// `crawldb/`: one row per URL.
    CrawlDb,
    /// `linkdb/`: inlinks per target URL.
    LinkDb,
    /// `sitemapdb/`: one row per known sitemap.
    SitemapDb,
    /// `hostdb/`: one row per host.
    HostDb,
}

impl VersionedDb {
    /// The directory name under the crawl directory.
    pub const fn as_str(self) -> &'static str {
        match self {
            VersionedDb::CrawlDb => CRAWLDB,
            VersionedDb::LinkDb => LINKDB,
            VersionedDb::SitemapDb => SITEMAPDB,
            VersionedDb::HostDb => HOSTDB,
        }
    }
}

impl fmt::Display for VersionedDb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `crawldb/`.
pub const CRAWLDB: &str = "crawldb";
/// `linkdb/`.
pub const LINKDB: &str = "linkdb";
/// `sitemapdb/`.
pub const SITEMAPDB: &str = "sitemapdb";
/// `hostdb/`: one row per host (versioned like the crawldb).
pub const HOSTDB: &str = "hostdb";
/// `sitemap_urls/`: in a sitemap task's attempt, the URLs its sitemaps listed, one
/// file per target partition (the sitemap stage's shuffle, read by its commit).
pub const SITEMAP_URLS: &str = "sitemap_urls";
/// `pagerank/`.
pub const PAGERANK: &str = "pagerank";
/// `pagerank/hits/`: hub and authority scores (with `--hits`).
pub const PAGERANK_HITS: &str = "hits";
/// `index/`: the search index (tantivy), built by the `index` stage.
pub const INDEX: &str = "index";
/// `pagerank/hosts/`: HostRank (with `--hostrank`).
pub const PAGERANK_HOSTS: &str = "hosts";
/// `segments/`.
pub const SEGMENTS: &str = "segments";
/// `warc/`: the default output directory of `warc`.
pub const WARC: &str = "warc";
/// `current/`: the installed version of a versioned dataset.
pub const CURRENT: &str = "current";
/// `old/`: the previous version of a versioned dataset.
pub const OLD: &str = "old";
/// `.lock`: the lock file of a versioned dataset.
pub const LOCK: &str = ".lock";
/// The extension of a segment's lock file (`segments/<name>.lock`).
pub const LOCK_EXT: &str = "lock";
/// `_meta.json`: facts stored with a dataset version or a segment.
pub const META: &str = "_meta.json";
/// `_SUCCESS`: the marker (and manifest) of a complete dataset.
pub const SUCCESS: &str = "_SUCCESS";
/// `<segment>.repartition-new`: a segment rewritten by `repartition`, complete and
/// sealed, waiting to replace `<segment>` (a kill between the two renames of the
/// swap is finished by the next `repartition`).
pub const REPARTITION_NEW: &str = "repartition-new";
/// `<segment>.repartition-old`: a segment `repartition` replaced, deleted once the
/// new one is in place.
pub const REPARTITION_OLD: &str = "repartition-old";
/// `_fragments/`: the per-(source part, target part) files of a repartition
/// shuffle, inside the dataset being written (removed before it is sealed).
pub const FRAGMENTS: &str = "_fragments";
/// `robots_cache.json`: robots.txt rules kept between fetch runs.
pub const ROBOTS_CACHE: &str = "robots_cache.json";
/// `fetch.last_end`: when the last fetch (or sitemap) run ended (ms UTC), for
/// politeness across runs.
pub const FETCH_LAST_END: &str = "fetch.last_end";

/// `_jobs/`: the attempts of partition tasks waiting for their commit
/// (see [`super::jobs`]).
pub const JOBS: &str = "_jobs";
/// `_jobs/fetch-checkpoints/`: what fetch attempts checkpointed, by segment (a name
/// no job may take).
pub const FETCH_CHECKPOINTS: &str = "fetch-checkpoints";
/// `fetch_state/`: fetch's state per partition (`fetch_state/<n>/p<i>/`: the
/// partition's `fetch.last_end`, `robots_cache.json` and `fetch.lease`), for `n`
/// partitions.
pub const FETCH_STATE: &str = "fetch_state";
/// `fetch.lease`: the lease of a partition being fetched ([`super::lease`]).
pub const FETCH_LEASE: &str = "fetch.lease";
/// `crawl_journal.json`: the crawl driver's journal (its run, the rounds done, the
/// steps of the round in progress; `crate::driver::journal`).
pub const CRAWL_JOURNAL: &str = "crawl_journal.json";
/// `crawl.lock`: held by a running crawl driver.
pub const CRAWL_LOCK: &str = "crawl.lock";
/// `report.html`: the crawl report (`crate::report`).
pub const REPORT: &str = "report.html";
/// `status.json`: what the crawl is doing now (`crate::status`).
pub const STATUS: &str = "status.json";
/// `STOP`: created by the user to stop a running crawl driver after its current
/// stage (Nutch's `.STOP`); the driver removes it.
pub const STOP: &str = "STOP";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in SegmentDataset::ALL {
            assert_eq!(SegmentDataset::parse(d.as_str()), Some(d));
        }
        assert_eq!(SegmentDataset::parse("nope"), None);
        assert!(SegmentDataset::ALL.contains(&SegmentDataset::Robots));
    }
}
