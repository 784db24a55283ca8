//! `crawl`: the crawl driver, trawl's `bin/crawl`. Injects the seeds, then runs
//! rounds of generate → fetch → parse → updatedb → linkdb → dedup → pagerank →
//! sitemap → hostdb → index in this one process, each stage through the same library call
//! (and the same one-line summary) as its binary.
//!
//! Resumable: the segment steps (fetch to linkdb) are read off the crawl directory
//! (a segment not fetched, not parsed, not applied to the crawldb or not inverted
//! into the linkdb is finished before anything new is generated), and the round's
//! later steps and the round count off the journal ([`journal`]). A driver killed
//! at any point and rerun with the same arguments goes on where it was: no segment
//! is fetched twice or skipped.
//!
//! Stops: after `--rounds` rounds; when nothing is due (or, with `--wait`, sleeps
//! and tries again); when `<crawl>/STOP` appears (after the stage running then,
//! the file is removed); on SIGINT/SIGTERM (the stage running then stops as it
//! does alone, exit code 4); when fetch reached no server (the segment is applied,
//! exit code 5).

pub mod journal;
pub mod next;

use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::cli::{CommonArgs, Exit, exit};
use crate::error::{Error, Result};
use crate::stage::{Guard, Report, StageCtx};
use crate::store::layout::{CrawlDir, Segment};
use crate::store::names;
use crate::store::object::Mirror;

use crate::round::SegmentUse;
use journal::{InProgress, Journal, RoundRecord, Step};
use next::{Next, Progress, SegmentStep};

/// What `crawl` does (its flags; config overrides travel in [`CommonArgs::set`]).
#[derive(Debug, Clone, Default)]
pub struct CrawlOpts {
    /// Seed files or directories to inject first (none: the crawl exists already).
    pub seeds: Vec<PathBuf>,
    /// Rounds to crawl.
    pub rounds: usize,
    /// When nothing is due: wait this long and try again instead of stopping.
    pub wait: Option<Duration>,
    /// Build the search index each round.
    pub index: bool,
    /// Mark duplicates each round.
    pub dedup: bool,
    /// The partitions asked for (`--num-tasks`): a new crawl gets them, an existing
    /// crawl with another count is refused.
    pub partitions: Option<usize>,
}

/// Why the driver stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// Every round asked for is done.
    RoundsDone,
    /// generate found no URL due (and no `--wait`).
    NothingDue,
    /// Every due URL is on a host held back after failing in a row (the count);
    /// the run is not over: a rerun after the back-off continues it.
    HeldBack(u64),
    /// `<crawl>/STOP` was found after a stage.
    StopFile,
    /// SIGINT or SIGTERM.
    Interrupted(String),
    /// fetch reached no server; the segment was applied.
    Unreachable(String),
}

/// The driver's result: the rounds of this run and why it ended.
#[derive(Debug, Clone)]
pub struct CrawlReport {
    /// Every finished round of the run (resumed runs include the earlier ones).
    pub rounds: Vec<RoundRecord>,
    /// Why it stopped.
    pub ended: Ended,
    /// Whether this invocation continued an earlier one.
    pub resumed: bool,
}

impl fmt::Display for CrawlReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sum = |g: fn(&RoundRecord) -> u64| self.rounds.iter().map(g).sum::<u64>();
        write!(
            f,
            "{} round(s){}: {} urls generated, {} fetched, {} failed, {} new urls; {}",
            self.rounds.len(),
            if self.resumed { " (resumed)" } else { "" },
            sum(|r| r.urls),
            sum(|r| r.fetched),
            sum(|r| r.failed),
            sum(|r| r.new_urls),
            match &self.ended {
                Ended::RoundsDone => "all rounds done".to_string(),
                Ended::NothingDue => "stopped: no URL is due".to_string(),
                Ended::HeldBack(n) => format!(
                    "stopped: the {n} due URLs are all on hosts held back after failing in a row (generate.host_max_failures, generate.host_backoff; readhostdb --failing): rerun later to continue, or --set generate.host_max_failures=0"
                ),
                Ended::StopFile => format!("stopped by the {} file (removed)", names::STOP),
                Ended::Interrupted(s) => format!("interrupted by {s}"),
                Ended::Unreachable(_) => "stopped: fetch reached no server".to_string(),
            }
        )
    }
}

impl Report for CrawlReport {
    const STAGE: &'static str = "crawl";

    fn exit(&self) -> Option<Exit> {
        match &self.ended {
            Ended::Interrupted(s) => Some(Exit::new(
                exit::INTERRUPTED,
                format!(
                    "crawl: interrupted by {s}; everything finished is written: rerun the same command to continue"
                ),
            )),
            Ended::Unreachable(warning) => Some(Exit::new(
                exit::UNREACHABLE,
                format!("crawl: WARNING: {warning}"),
            )),
            _ => None,
        }
    }
}

/// Runs the driver over the crawl directory of `common`; returns the driver's context
/// (for its summary line) with the report.
///
/// On an object store (`s3://...`) every stage of the run opens, pulls and pushes the
/// same working mirror itself (`--work-dir`), as when run alone; between two stages
/// the driver reads the mirror, which holds what the last one committed. The driver's
/// own files (its lock, `crawl_journal.json`, `STOP`, `status.json`) are the
/// machine's: they sit beside the mirror's `crawl/`, not in it (a pull would replace
/// them with the store's), and a rerun on the same work directory continues the run.
pub fn run(common: &CommonArgs, opts: &CrawlOpts) -> Result<(StageCtx, CrawlReport)> {
    // On an object store: pulled once before the first step, then let go (nothing
    // pushed): the driver's first decisions (a crawldb yet? pending segments?) read
    // the crawl.
    let pulled = StageCtx::from_args(common)?;
    let root = pulled.root().to_path_buf();
    let (shown, home) = match pulled.store_uri() {
        None => (root.display().to_string(), root.clone()),
        Some(uri) => (
            uri.as_str().to_string(),
            Mirror::dir_for(uri, common.work_dir.as_deref()),
        ),
    };
    let ctx = if pulled.is_remote() {
        crate::status::set_live(CrawlDir::new(&home).status_file());
        let ctx = StageCtx::new(&home, pulled.config().clone());
        // Its mirror's lock goes with it: every stage opens the mirror itself.
        drop(pulled);
        ctx
    } else {
        pulled
    };
    std::fs::create_dir_all(&root).map_err(|e| Error::io(&root, e))?;
    let dir = CrawlDir::new(&root);
    let home = CrawlDir::new(&home);
    let _held = ctx.hold("crawl", &[Guard::Driver])?;
    let stop = home.stop_file();
    if stop.exists() {
        tracing::warn!(
            "{} was there before this crawl started: removed (it stops a running crawl)",
            stop.display()
        );
        std::fs::remove_file(&stop).map_err(|e| Error::io(&stop, e))?;
    }
    if let (Some(want), true) = (
        opts.partitions,
        crate::store::parquet::dataset_complete(&dir.crawldb_current()),
    ) {
        let have = dir.crawldb_meta()?.partitions;
        if have != want {
            return Err(Error::input(
                "--num-tasks",
                format!(
                    "the crawl in {shown} has {have} partitions, not {want}: drop --num-tasks, or run `repartition --partitions {want}` first"
                ),
            ));
        }
    }
    if opts.seeds.is_empty() && !crate::store::parquet::dataset_complete(&dir.crawldb_current()) {
        return Err(Error::input(
            "--seeds",
            format!(
                "{shown} has no crawldb yet: give --seeds PATH (a seed file or a directory of them)"
            ),
        ));
    }
    let jpath = home.crawl_journal();
    let key = run_key(common, opts);
    let (mut j, resumed) = match Journal::load(&jpath)? {
        Some(j) if j.run_key == key && j.ended.is_none() => {
            tracing::info!(
                "continuing the crawl started at {} ({} of {} rounds done{})",
                crate::datum::format_millis(j.started_ms),
                j.rounds.len(),
                opts.rounds,
                j.current.as_ref().map_or(String::new(), |c| format!(
                    ", round {} in progress",
                    c.round
                ))
            );
            (j, true)
        }
        _ => (Journal::new(key), false),
    };
    let mut driver = Driver {
        common,
        opts,
        root,
        stop,
        jpath,
    };
    let ended = driver.drive(&mut j)?;
    // A run stopped by STOP, a signal or a dead network is continued by a rerun; one
    // that did its rounds or ran out of due URLs is over (a rerun starts a new run).
    if matches!(ended, Ended::RoundsDone | Ended::NothingDue) {
        j.ended = Some(
            match ended {
                Ended::RoundsDone => "all rounds done",
                _ => "no URL due",
            }
            .to_string(),
        );
    }
    j.save(&driver.jpath)?;
    let report = CrawlReport {
        rounds: j.rounds,
        ended,
        resumed,
    };
    Ok((ctx, report))
}

/// What identifies a run: the seeds and the number of rounds.
fn run_key(common: &CommonArgs, opts: &CrawlOpts) -> String {
    let mut h = blake3::Hasher::new();
    for s in &opts.seeds {
        let p = std::fs::canonicalize(s).unwrap_or_else(|_| s.clone());
        h.update(p.to_string_lossy().as_bytes());
        h.update(b"\0");
    }
    h.update(format!("rounds={}", opts.rounds).as_bytes());
    for s in &common.set {
        h.update(s.as_bytes());
        h.update(b"\0");
    }
    h.finalize().to_hex()[..16].to_string()
}

/// How a segment step ended.
enum SegmentEnd {
    /// Its work is done.
    Done,
    /// fetch reached no server (the warning).
    Unreachable(String),
    /// A signal stopped it (the signal).
    Interrupted(String),
}

struct Driver<'a> {
    common: &'a CommonArgs,
    opts: &'a CrawlOpts,
    root: PathBuf,
    stop: PathBuf,
    jpath: PathBuf,
}

/// A reason to stop between two steps.
enum Halt {
    Stop(Ended),
}

type Flow = std::result::Result<(), Halt>;

impl Driver<'_> {
    fn drive(&mut self, j: &mut Journal) -> Result<Ended> {
        if !self.opts.seeds.is_empty() && !j.injected {
            self.inject()?;
            j.injected = true;
            j.save(&self.jpath)?;
        }
        if let Err(Halt::Stop(e)) = self.between() {
            return Ok(e);
        }
        loop {
            if j.current.is_none() {
                if j.rounds.len() >= self.opts.rounds {
                    return Ok(Ended::RoundsDone);
                }
                let n = j.rounds.len() + 1;
                j.current = Some(InProgress {
                    round: n,
                    record: RoundRecord {
                        round: n,
                        ..Default::default()
                    },
                    done: Vec::new(),
                });
                j.save(&self.jpath)?;
            }
            match self.round(j)? {
                Ok(()) => {}
                Err(Halt::Stop(ended @ (Ended::NothingDue | Ended::HeldBack(_)))) => {
                    // The round did not start: forget it.
                    j.current = None;
                    j.save(&self.jpath)?;
                    match self.opts.wait {
                        Some(w) => {
                            tracing::info!(
                                "crawl: no URL is due; waiting {}s (--wait) before generating again",
                                w.as_secs_f64()
                            );
                            if let Err(Halt::Stop(e)) = self.wait(w) {
                                return Ok(e);
                            }
                        }
                        None => return Ok(ended),
                    }
                }
                Err(Halt::Stop(e)) => return Ok(e),
            }
        }
    }

    /// Sleeps `d` in short steps, watching for the STOP file and signals.
    fn wait(&self, d: Duration) -> Flow {
        let end = Instant::now()
            .checked_add(d)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(365 * 86_400));
        while Instant::now() < end {
            crate::signal::sleep(Duration::from_millis(200).min(end - Instant::now()));
            self.between()?;
        }
        Ok(())
    }

    /// Between two steps: stop on a signal or on the STOP file.
    fn between(&self) -> Flow {
        if let Some(s) = crate::signal::received() {
            return Err(Halt::Stop(Ended::Interrupted(s.to_string())));
        }
        if self.stop.exists() {
            let _ = std::fs::remove_file(&self.stop);
            return Err(Halt::Stop(Ended::StopFile));
        }
        Ok(())
    }

    /// One round (or the rest of the round in progress): the steps [`next::next`]
    /// gives, one after the other, until the round is done.
    fn round(&mut self, j: &mut Journal) -> Result<Flow> {
        let started = Instant::now();
        let Some(mut cur) = j.current.clone() else {
            return Ok(Ok(()));
        };
        let n = cur.round;
        let total = self.opts.rounds;
        crate::status::set_round(Some(n));
        // Fetch reached no server: the warning, and the steps run since (not
        // journaled: a rerun runs them again with the rest of the round).
        let mut unreachable: Option<String> = None;
        let mut after: Vec<String> = Vec::new();
        let mut last: Option<(&str, Option<String>)> = None;
        loop {
            let progress = Progress {
                segments: cur.record.segments.clone(),
                done: cur
                    .done
                    .iter()
                    .map(|s| s.name().to_string())
                    .chain(after.iter().cloned())
                    .collect(),
                unreachable: unreachable.is_some(),
            };
            let dir = CrawlDir::open_for_segments(&self.root)?;
            let Next::Run { step, segment } = next::next(&dir, self.round_opts(), &progress)?
            else {
                break;
            };
            let this = (step.stage, segment.clone());
            if last.as_ref() == Some(&this) {
                // It ran and succeeded, yet its work is not there: never loop on it.
                return Err(Error::crawl_dir(
                    &self.root,
                    format!(
                        "{} ran on {} but is the round's next step again (its output is not in the crawl directory): the round stops here",
                        step.stage,
                        segment.as_deref().unwrap_or("the crawl")
                    ),
                ));
            }
            last = Some(this);
            let on_segment = segment.zip(SegmentStep::of(step.stage));
            if step.segment == SegmentUse::Makes {
                eprintln!("crawl: round {n}/{total}: {}", step.stage);
                match self.generate()? {
                    Err(0) => return Ok(Err(Halt::Stop(Ended::NothingDue))),
                    Err(held) => return Ok(Err(Halt::Stop(Ended::HeldBack(held)))),
                    Ok((segs, urls)) => {
                        cur.record.urls = urls;
                        cur.record.segments = segs.iter().map(|s| s.name().to_string()).collect();
                    }
                }
            } else if let Some((name, which)) = on_segment {
                if !cur.record.segments.contains(&name) {
                    cur.record.segments.push(name.clone());
                }
                let seg = next::segment(&dir, &name)?;
                match self.segment_step(which, &seg, &mut cur.record)? {
                    SegmentEnd::Done => {}
                    SegmentEnd::Unreachable(w) => unreachable = Some(w),
                    SegmentEnd::Interrupted(signal) => {
                        j.current = Some(cur);
                        j.save(&self.jpath)?;
                        return Ok(Err(Halt::Stop(Ended::Interrupted(signal))));
                    }
                }
            } else if let Some(global) = Step::of(step.stage) {
                cur.record.new_urls += self.global(global)?;
                if unreachable.is_none() {
                    cur.done.push(global);
                } else {
                    after.push(step.stage.to_string());
                }
            } else {
                // A step of the round crawl does not run (none: a unit test checks).
                tracing::warn!(
                    "crawl: the round's step {} is not one crawl runs: skipped",
                    step.stage
                );
                after.push(step.stage.to_string());
            }
            j.current = Some(cur.clone());
            j.save(&self.jpath)?;
            if unreachable.is_none()
                && let Err(h) = self.between()
            {
                return Ok(Err(h));
            }
        }
        if let Some(w) = unreachable {
            return Ok(Err(Halt::Stop(Ended::Unreachable(w))));
        }
        cur.record.secs += started.elapsed().as_secs_f64();
        let r = &cur.record;
        eprintln!(
            "crawl: round {n}/{total} done: {} urls in {} segment(s), {} fetched, {} failed, {} new urls in {:.2}s",
            r.urls,
            r.segments.len(),
            r.fetched,
            r.failed,
            r.new_urls,
            r.secs
        );
        j.rounds.push(cur.record);
        j.current = None;
        j.save(&self.jpath)?;
        crate::status::set_round(None);
        Ok(Ok(()))
    }

    /// The round's optional steps as this run asks for them.
    fn round_opts(&self) -> crate::round::RoundOpts {
        crate::round::RoundOpts {
            dedup: self.opts.dedup,
            index: self.opts.index,
            warc: false,
            pagerank_whole_graph: false,
        }
    }

    fn ctx(&self) -> Result<StageCtx> {
        StageCtx::from_args(self.common)
    }

    /// Runs a stage (its one-line summary printed); `Some(exit)` when it ended with a
    /// non-zero outcome although its work was done.
    fn stage<R: Report>(
        &self,
        work: impl FnOnce(&StageCtx) -> Result<R>,
    ) -> Result<(R, Option<Exit>)> {
        let ctx = self.ctx()?;
        crate::status::running(R::STAGE);
        let report = work(&ctx)?;
        let exit = ctx.finish(&report).err();
        Ok((report, exit))
    }

    fn inject(&self) -> Result<()> {
        let inputs = crate::crawldb::inject::expand_inputs(&self.opts.seeds)?;
        let opts = crate::crawldb::inject::InjectOpts { inputs };
        self.stage(|ctx| crate::crawldb::inject::run(ctx, &opts, &mut |r| eprintln!("{r}")))?;
        Ok(())
    }

    /// The new fetch list(s) with their URL count, or, when nothing is due, the
    /// due URLs held back on failing hosts (0: none).
    #[allow(clippy::type_complexity)]
    fn generate(&self) -> Result<std::result::Result<(Vec<Segment>, u64), u64>> {
        let (report, exit) = self.stage(|ctx| {
            let opts = crate::crawldb::generate::GenerateOpts::from_config(ctx.config());
            crate::crawldb::generate::run(ctx, &opts)
        })?;
        if exit.as_ref().is_some_and(|e| e.code == exit::NOTHING_DUE) {
            return Ok(Err(report.backed_off));
        }
        let dir = CrawlDir::open_for_segments(&self.root)?;
        let segs = report
            .segments
            .iter()
            .map(|p| dir.segment(p))
            .collect::<Result<Vec<_>>>()?;
        Ok(Ok((segs, report.urls.iter().sum())))
    }

    /// A segment step on `seg`.
    fn segment_step(
        &self,
        which: SegmentStep,
        seg: &Segment,
        rec: &mut RoundRecord,
    ) -> Result<SegmentEnd> {
        let path = Some(seg.path().to_path_buf());
        match which {
            SegmentStep::Fetch => {
                let opts = crate::fetch::FetchOpts { segment: path };
                let (r, exit) = self.stage(|ctx| crate::fetch::run(ctx, &opts))?;
                let ok = |s: crate::datum::FetchStatus| r.stats.by_status.get(s.as_str()).copied();
                let fetched = ok(crate::datum::FetchStatus::FetchSuccess).unwrap_or(0)
                    + ok(crate::datum::FetchStatus::FetchNotmodified).unwrap_or(0);
                let redirects = ok(crate::datum::FetchStatus::FetchRedirTemp).unwrap_or(0)
                    + ok(crate::datum::FetchStatus::FetchRedirPerm).unwrap_or(0);
                rec.fetched += fetched;
                rec.failed += r.stats.rows.saturating_sub(fetched + redirects);
                match exit {
                    Some(e) if e.code == exit::INTERRUPTED => {
                        eprintln!("{}", e.message);
                        return Ok(SegmentEnd::Interrupted(
                            r.interrupted.unwrap_or("a signal").to_string(),
                        ));
                    }
                    Some(e) if e.code == exit::UNREACHABLE => {
                        return Ok(SegmentEnd::Unreachable(r.unreachable_warning()));
                    }
                    Some(e) => eprintln!("{}", e.message),
                    None => {}
                }
            }
            SegmentStep::Parse => {
                let opts = crate::parse::ParseOpts {
                    segment: path,
                    reparse: false,
                };
                self.stage(|ctx| crate::parse::run(ctx, &opts))?;
            }
            SegmentStep::Updatedb => {
                let opts = crate::crawldb::updatedb::UpdateOpts {
                    segments: vec![seg.path().to_path_buf()],
                    no_parse: false,
                };
                let (r, _) = self.stage(|ctx| crate::crawldb::updatedb::run(ctx, &opts))?;
                rec.new_urls += r.added;
            }
            SegmentStep::Linkdb => {
                let opts = crate::graph::linkdb::LinkDbOpts {
                    segments: crate::graph::linkdb::SegmentChoice::Given(vec![
                        seg.path().to_path_buf(),
                    ]),
                };
                self.stage(|ctx| crate::graph::linkdb::run(ctx, &opts))?;
            }
        }
        Ok(SegmentEnd::Done)
    }

    /// A step over the whole crawl; returns the URLs it added to the crawldb.
    fn global(&self, step: Step) -> Result<u64> {
        match step {
            Step::Hostdb => {
                let opts = crate::hostdb::HostDbOpts::default();
                self.stage(|ctx| crate::hostdb::run(ctx, &opts))?;
            }
            Step::Dedup => {
                let opts = crate::dedup::DedupOpts {
                    near: false,
                    max_distance: 3,
                    pass: None,
                };
                self.stage(|ctx| crate::dedup::run(ctx, &opts))?;
            }
            Step::Pagerank => {
                let opts = crate::graph::stage::PageRankOpts::default();
                self.stage(|ctx| crate::graph::stage::run(ctx, &opts))?;
            }
            Step::Sitemap => {
                let opts = crate::sitemaps::SitemapOpts::default();
                let (r, _) = self.stage(|ctx| {
                    let r = crate::sitemaps::run(ctx, &opts)?;
                    crate::sitemaps::print_problems(&r);
                    Ok(r)
                })?;
                return Ok(r.urls_added);
            }
            Step::Index => {
                let opts = crate::index::build::IndexOpts {
                    full: false,
                    index_dir: None,
                };
                self.stage(|ctx| crate::index::build::run(ctx, &opts))?;
            }
        }
        Ok(0)
    }
}

/// Parses a duration: a number with an optional unit `s`, `m`, `h` or `d`; a bare
/// number is in `default_unit` (Nutch's `--wait` counts seconds, its
/// `--time-limit-fetch` minutes).
pub fn parse_duration(s: &str, default_unit: char) -> std::result::Result<Duration, String> {
    let t = s.trim();
    let (num, unit) = match t.chars().last() {
        Some(c) if c.is_ascii_alphabetic() => (&t[..t.len() - 1], c.to_ascii_lowercase()),
        _ => (t, default_unit),
    };
    let secs_per = match unit {
        's' => 1.0,
        'm' => 60.0,
        'h' => 3600.0,
        'd' => 86_400.0,
        _ => return Err(format!("{s:?}: the unit must be s, m, h or d")),
    };
    match num.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n >= 0.0 => {
            Duration::try_from_secs_f64(n * secs_per).map_err(|e| format!("{s:?}: {e}"))
        }
        _ => Err(format!(
            "{s:?}: expected a number >= 0 with an optional unit s, m, h or d (e.g. 30s, 90m, 2h)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_units_and_a_default() {
        assert_eq!(parse_duration("90", 's').unwrap(), Duration::from_secs(90));
        assert_eq!(
            parse_duration("90", 'm').unwrap(),
            Duration::from_secs(5400)
        );
        assert_eq!(
            parse_duration("2h", 's').unwrap(),
            Duration::from_secs(7200)
        );
        assert_eq!(
            parse_duration("1.5m", 's').unwrap(),
            Duration::from_secs(90)
        );
        assert_eq!(
            parse_duration("1d", 's').unwrap(),
            Duration::from_secs(86_400)
        );
        assert!(parse_duration("-1", 's').is_err());
        assert!(parse_duration("5x", 's').unwrap_err().contains("unit"));
        assert!(parse_duration("soon", 's').is_err());
    }
}
