//! `updatedb`: merges the fetch and parse results of segments into the crawldb.
//!
//! Per crawldb partition, in parallel: the segment rows of that partition
//! (`crawl_fetch`, `crawl_parse`, plus redirect targets routed to their host's
//! partition) are read and sorted by URL, then merged with the streamed crawldb
//! part; each URL goes through [`state::reduce`]. Segments already listed in
//! `applied_segments` are skipped, so applying a segment twice changes nothing.

use std::collections::HashSet;

use crate::config::Config;
use crate::crawldb::merge::{self, Keyed, SegRow};
use crate::crawldb::state::{Ctx, Inlink};
use crate::crawldb::stream::read_partition;
use crate::crawldb::{current_part, lock, write_version};
use crate::datum::{CrawlDatum, FetchStatus, now_millis};
use crate::error::{Error, Result};
use crate::layout::{CrawlDir, Segment};
use crate::records::{CrawlParseRecord, FetchRecord};
use crate::storage::{PartWriter, partition_for_host};
use crate::urls::{UrlPolicy, host_of};

/// Options of one updatedb run.
#[derive(Debug, Clone, Default)]
pub struct UpdateOptions {
    /// Segments (names or paths); empty = the newest fetched segment not yet applied.
    pub segments: Vec<std::path::PathBuf>,
}

/// What updatedb did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpdateReport {
    /// Segments merged.
    pub applied: Vec<String>,
    /// Segments skipped because they were already merged.
    pub skipped: Vec<String>,
    /// Rows in the new crawldb.
    pub rows: u64,
    /// URLs added from links and redirects.
    pub added: u64,
    /// URLs whose row a fetch changed.
    pub fetched: u64,
    /// Rows dropped (`purge_gone`).
    pub purged: u64,
}

#[derive(Debug, Default)]
struct PartStats {
    rows: u64,
    added: u64,
    fetched: u64,
    purged: u64,
}

/// Runs updatedb on `root`.
pub fn run(root: &std::path::Path, cfg: &Config, opts: &UpdateOptions) -> Result<UpdateReport> {
    let dir = CrawlDir::open_existing(root)?;
    let _lock = lock(&dir, "updatedb")?;
    let mut meta = dir.crawldb_meta()?;
    let mut report = UpdateReport::default();

    let candidates: Vec<Segment> = if opts.segments.is_empty() {
        let newest =
            dir.segments()?.into_iter().rev().find(|s| {
                s.has("crawl_fetch") && !meta.applied_segments.iter().any(|a| a == s.name())
            });
        match newest {
            Some(s) => vec![s],
            None => {
                tracing::info!("no fetched segment left to apply");
                return Ok(report);
            }
        }
    } else {
        opts.segments
            .iter()
            .map(|p| dir.segment(p))
            .collect::<Result<_>>()?
    };
    let mut segments = Vec::new();
    let mut seen = HashSet::new();
    for s in candidates {
        if meta.applied_segments.iter().any(|a| a == s.name()) || !seen.insert(s.name().to_string())
        {
            tracing::warn!(
                "segment {} is already applied to the crawldb: skipping it",
                s.name()
            );
            report.skipped.push(s.name().to_string());
            continue;
        }
        if !s.has("crawl_fetch") {
            return Err(Error::crawl_dir(
                s.path(),
                format!(
                    "segment {} was never fetched (no complete crawl_fetch/): run fetch on it first",
                    s.name()
                ),
            ));
        }
        if !s.has("crawl_parse") {
            tracing::warn!(
                "segment {} has no crawl_parse/: updating statuses only (no signatures, no new links); run parse first to get them",
                s.name()
            );
        }
        let seg_parts = s.meta()?.partitions;
        segments.push((s, seg_parts));
    }
    if segments.is_empty() {
        return Ok(report);
    }

    let n = meta.partitions;
    let now = now_millis();
    let mut ctx = Ctx::new(&cfg.updatedb, cfg.urls.max_depth, now);
    ctx.additions = cfg.updatedb.additions_allowed;
    let policy = UrlPolicy::new(&cfg.urls, &meta.seed_hosts)?;

    // Redirect targets may live in any partition: route them first (small: one per redirect).
    let mut redirects: Vec<Vec<(String, String, Inlink)>> = (0..n).map(|_| Vec::new()).collect();
    for (s, seg_parts) in &segments {
        for p in 0..*seg_parts {
            let rows: Vec<FetchRecord> = read_partition(
                &s.dataset("crawl_fetch"),
                p,
                *seg_parts,
                *seg_parts,
                |r: &FetchRecord| &r.host,
            )?;
            for f in rows {
                if !matches!(
                    f.status,
                    FetchStatus::FetchRedirTemp | FetchStatus::FetchRedirPerm
                ) {
                    continue;
                }
                let Some(target) = &f.redirect_target else {
                    continue;
                };
                let Ok(url) = policy.check(target) else {
                    continue;
                };
                let url = url.to_string();
                let host = host_of(&url);
                let inl = Inlink {
                    score: f.score,
                    depth: f.depth,
                    redirect: true,
                };
                redirects[partition_for_host(&host, n)].push((url, host, inl));
            }
        }
    }

    for (s, _) in &segments {
        meta.applied_segments.push(s.name().to_string());
    }
    let stats = write_version(&dir, &mut meta, "updatedb", |i, w| {
        merge_partition(
            &dir,
            i,
            n,
            &segments,
            redirects[i].clone(),
            &ctx,
            &policy,
            w,
        )
    })?;
    for st in stats {
        report.rows += st.rows;
        report.added += st.added;
        report.fetched += st.fetched;
        report.purged += st.purged;
    }
    report.applied = segments.iter().map(|(s, _)| s.name().to_string()).collect();
    Ok(report)
}

/// Merges one partition.
#[allow(clippy::too_many_arguments)]
fn merge_partition(
    dir: &CrawlDir,
    i: usize,
    n: usize,
    segments: &[(Segment, usize)],
    redirects: Vec<(String, String, Inlink)>,
    ctx: &Ctx,
    policy: &UrlPolicy,
    w: &mut PartWriter<CrawlDatum>,
) -> Result<PartStats> {
    let mut fetches: Vec<FetchRecord> = Vec::new();
    let mut parse: Vec<Keyed> = Vec::new();
    for (s, seg_parts) in segments {
        fetches.extend(read_partition(
            &s.dataset("crawl_fetch"),
            i,
            n,
            *seg_parts,
            |r: &FetchRecord| &r.host,
        )?);
        if s.has("crawl_parse") {
            let rows: Vec<CrawlParseRecord> = read_partition(
                &s.dataset("crawl_parse"),
                i,
                n,
                *seg_parts,
                |r: &CrawlParseRecord| &r.host,
            )?;
            for r in rows {
                match r.kind.as_str() {
                    "signature" => {
                        if let Some(sig) = r.signature {
                            parse.push(Keyed {
                                url: r.url,
                                host: r.host,
                                row: SegRow::Sig(sig),
                            });
                        }
                    }
                    "link" => parse.push(Keyed {
                        url: r.url,
                        host: r.host,
                        row: SegRow::Link(Inlink {
                            score: r.score,
                            depth: r.depth,
                            redirect: false,
                        }),
                    }),
                    other => {
                        return Err(Error::crawl_dir(
                            s.dataset("crawl_parse"),
                            format!(
                                "unknown row kind {other:?} for {}; re-run parse on segment {}",
                                r.url,
                                s.name()
                            ),
                        ));
                    }
                }
            }
        }
    }
    for (url, host, inl) in redirects {
        parse.push(Keyed {
            url,
            host,
            row: SegRow::Link(inl),
        });
    }
    fetches.sort_by(|a, b| a.url.cmp(&b.url).then(a.fetch_time.cmp(&b.fetch_time)));
    parse.sort_by(|a, b| a.url.cmp(&b.url));

    let admit = |url: &str| policy.check(url).is_ok();
    let t = merge::merge_part(&current_part(dir, i), &fetches, &parse, ctx, &admit, w)?;
    Ok(PartStats {
        rows: t.rows,
        added: t.added,
        fetched: t.fetched,
        purged: t.purged,
    })
}
