//! The crawl driver's journal, `crawl_journal.json`: which run of `crawl` this is,
//! how many of its rounds are done, and which steps of the round in progress have
//! finished. Written atomically after every step, so a driver killed at any point
//! resumes at the first step not recorded (the stages themselves are crash-safe: a
//! step killed half-way is run again).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::store::parquet::{read_json, write_json};

/// The journal's format version.
const VERSION: u32 = 1;

/// One round's steps after its segment is applied (the segment steps, fetch to
/// linkdb, are read off the segment itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// `hostdb`: the per-host counters.
    Hostdb,
    /// `dedup`: duplicates by signature.
    Dedup,
    /// `pagerank`: scores of the link graph.
    Pagerank,
    /// `sitemap`: sitemaps due.
    Sitemap,
    /// `index`: the search index.
    Index,
}

impl Step {
    /// The stage's name.
    pub fn name(self) -> &'static str {
        match self {
            Step::Hostdb => "hostdb",
            Step::Dedup => "dedup",
            Step::Pagerank => "pagerank",
            Step::Sitemap => "sitemap",
            Step::Index => "index",
        }
    }

    /// The step of the stage `name` (`None` for a stage the journal does not record:
    /// the segment's steps are read off the segment).
    pub fn of(name: &str) -> Option<Step> {
        [
            Step::Hostdb,
            Step::Dedup,
            Step::Pagerank,
            Step::Sitemap,
            Step::Index,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }
}

/// What one finished round did (kept in the journal, printed in the final summary).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoundRecord {
    /// The round's number in its run (1-based).
    pub round: usize,
    /// The segments the round fetched.
    pub segments: Vec<String>,
    /// URLs in the fetch lists.
    pub urls: u64,
    /// Pages fetched with a 2xx (content rows).
    pub fetched: u64,
    /// crawl_fetch rows that were not a success (errors, gone, robots-denied, retries).
    pub failed: u64,
    /// New URLs added to the crawldb (outlinks, redirect targets, sitemap URLs).
    pub new_urls: u64,
    /// Wall time of the round (seconds).
    pub secs: f64,
}

/// The round in progress.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InProgress {
    /// Its number (1-based, within the run).
    pub round: usize,
    /// What it did so far.
    pub record: RoundRecord,
    /// The steps after the segment that have finished.
    pub done: Vec<Step>,
}

/// The journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    /// Format version.
    pub version: u32,
    /// What identifies the run (the arguments that decide its work: seeds, rounds):
    /// a rerun with the same key continues the run, another key starts a new one.
    pub run_key: String,
    /// When the run started (ms UTC).
    pub started_ms: i64,
    /// Whether the seeds were injected.
    pub injected: bool,
    /// The rounds finished.
    pub rounds: Vec<RoundRecord>,
    /// The round in progress.
    pub current: Option<InProgress>,
    /// Why the run ended (`all rounds done`, `no URL due`); `None` while it runs or
    /// when it was stopped (STOP, a signal, no server reached) and a rerun continues it.
    pub ended: Option<String>,
}

impl Journal {
    /// A new run.
    pub fn new(run_key: String) -> Journal {
        Journal {
            version: VERSION,
            run_key,
            started_ms: crate::datum::now_millis(),
            injected: false,
            rounds: Vec::new(),
            current: None,
            ended: None,
        }
    }

    /// The journal at `path`, if there is one.
    pub fn load(path: &Path) -> Result<Option<Journal>> {
        if !path.exists() {
            return Ok(None);
        }
        let j: Journal = read_json(path).map_err(|e| {
            crate::error::Error::crawl_dir(
                path,
                format!(
                    "the crawl driver's journal cannot be read ({e}): remove the file to start a new run (segments not finished are still finished first)"
                ),
            )
        })?;
        if j.version != VERSION {
            return Err(crate::error::Error::crawl_dir(
                path,
                format!(
                    "journal version {} is not {VERSION}, the version this crawl understands: remove the file to start a new run",
                    j.version
                ),
            ));
        }
        Ok(Some(j))
    }

    /// Writes the journal atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        write_json(path, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_other_versions() {
        let dir = std::env::temp_dir().join(format!("trawl-journal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = crate::store::layout::CrawlDir::new(&dir).crawl_journal();
        assert_eq!(Journal::load(&p).unwrap(), None);
        let mut j = Journal::new("k".into());
        j.current = Some(InProgress {
            round: 2,
            record: RoundRecord {
                round: 2,
                segments: vec!["s".into()],
                ..Default::default()
            },
            done: vec![Step::Dedup, Step::Pagerank],
        });
        j.save(&p).unwrap();
        assert_eq!(Journal::load(&p).unwrap(), Some(j.clone()));
        j.version = 99;
        j.save(&p).unwrap();
        let e = Journal::load(&p).unwrap_err().to_string();
        assert!(e.contains("journal version 99"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
