//! What a round runs next: the one decision `crawl` follows in one process and
//! `trawl plan next` answers for the Spark driver (docs/cluster.md, "The next step").
//!
//! It is read off the crawl directory (which segments still need fetch, parse,
//! updatedb or linkdb) and the round's [`Progress`] (its segments, the steps over the
//! whole crawl it has done, whether fetch reached no server), which the driver keeps:
//! `crawl` in its journal, the Spark driver in a file that `trawl plan done` writes
//! after each step and `trawl plan next --progress` reads ([`Progress::record`]), so a
//! driver restarted with the same file goes on where the lost one stopped. A driver
//! that lost its progress (restarted elsewhere) asks with none: the pending segments
//! are finished first, then the round's steps over the whole crawl run, as `crawl`
//! does on a rerun.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::round::{self, Outcome, RoundOpts, SegmentUse, Step};
use crate::store::layout::{CrawlDir, Segment};
use crate::store::names::SegmentDataset;
use crate::store::parquet::{read_json, write_json};

/// What the round in progress has done (kept by the driver, handed to [`next`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// The round's segments (their names): made by its generate, or pending when it
    /// began. None yet: the round generates (when no segment is pending).
    pub segments: Vec<String>,
    /// The stages the round has run; those over the whole crawl (dedup, pagerank,
    /// sitemap, hostdb, index) and the round's closing ones (warc) are not run again.
    /// The segment steps need not be listed: they are read off the segments.
    pub done: Vec<String>,
    /// Fetch reached no server in this round: only the steps that record the failures
    /// follow (`after_unreachable`), then the round ends.
    pub unreachable: bool,
}

impl Progress {
    /// The progress a driver keeps in `path` between its steps (`trawl plan next
    /// --progress`, written by `trawl plan done`): none yet when the file is absent.
    /// A progress naming a segment the crawl at `dir` does not hold (left by a driver
    /// of another crawl at the same path, or of segments merged since) is stale: it is
    /// set aside with a warning, and the round starts from the crawl directory alone.
    pub fn load(path: &Path, dir: &CrawlDir) -> Result<Progress> {
        if !path.exists() {
            return Ok(Progress::default());
        }
        let p: Progress = read_json(path).map_err(|e| {
            Error::input(
                format!("--progress {}", path.display()),
                format!("the round's progress cannot be read ({e}): remove the file; the round then goes on from what the crawl directory holds"),
            )
        })?;
        let segments = dir.segments_dir();
        if let Some(gone) = p.segments.iter().find(|s| !segments.join(s).is_dir()) {
            tracing::warn!(
                "{}: names segment {gone}, which {} does not hold: the progress is set aside and the round goes on from the crawl directory",
                path.display(),
                dir.root().display()
            );
            return Ok(Progress::default());
        }
        Ok(p)
    }

    /// Writes the progress to `path` atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        write_json(path, self)
    }

    /// Records that `step` ran (on the round's `segments`, or made them) and ended
    /// with exit code `code`, and returns what the code means for the round: a code
    /// that is not one of the step's ok codes is refused (the step failed: nothing is
    /// recorded, and a rerun runs it again).
    pub fn record(
        &mut self,
        step: &Step,
        segments: &[String],
        code: u8,
    ) -> Result<Option<Outcome>> {
        if !step.ok.contains(&code) {
            return Err(Error::input(
                format!("--exit {code}"),
                format!(
                    "is not an exit code of a {} that did its work (those are {:?}): a failed step is not recorded; run it again",
                    step.stage, step.ok
                ),
            ));
        }
        for s in segments {
            if !self.segments.contains(s) {
                self.segments.push(s.clone());
            }
        }
        if !self.done.iter().any(|d| d == step.stage) {
            self.done.push(step.stage.to_string());
        }
        let outcome = step.outcome_of(code);
        if outcome == Some(Outcome::Unreachable) {
            self.unreachable = true;
        }
        Ok(outcome)
    }
}

/// The answer of [`next`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Run `step`, on the segment `segment` when the step takes one.
    Run {
        /// The step.
        step: Step,
        /// The segment's name, for a step that takes the round's segment.
        segment: Option<String>,
    },
    /// The round is over.
    RoundDone,
}

/// The steps a segment still needs, in order (fetch, parse, updatedb, linkdb).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    /// Its crawl_fetch is not complete.
    pub fetch: bool,
    /// Its parse_data or crawl_parse is not complete.
    pub parse: bool,
    /// The crawldb has not applied it.
    pub updatedb: bool,
    /// The linkdb has not inverted it.
    pub linkdb: bool,
}

impl Needs {
    /// The steps, in the round's order.
    pub fn steps(self) -> impl Iterator<Item = SegmentStep> {
        [
            (self.fetch, SegmentStep::Fetch),
            (self.parse, SegmentStep::Parse),
            (self.updatedb, SegmentStep::Updatedb),
            (self.linkdb, SegmentStep::Linkdb),
        ]
        .into_iter()
        .filter_map(|(need, step)| need.then_some(step))
    }

    fn any(self) -> bool {
        self.steps().next().is_some()
    }
}

/// A step whose work is read off the segment ([`Needs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentStep {
    /// `fetch`.
    Fetch,
    /// `parse`.
    Parse,
    /// `updatedb`.
    Updatedb,
    /// `linkdb`.
    Linkdb,
}

impl SegmentStep {
    const ALL: [SegmentStep; 4] = [
        SegmentStep::Fetch,
        SegmentStep::Parse,
        SegmentStep::Updatedb,
        SegmentStep::Linkdb,
    ];

    /// The stage's name.
    pub fn name(self) -> &'static str {
        match self {
            SegmentStep::Fetch => "fetch",
            SegmentStep::Parse => "parse",
            SegmentStep::Updatedb => "updatedb",
            SegmentStep::Linkdb => "linkdb",
        }
    }

    /// The segment step of the stage `name`, if it is one.
    pub fn of(name: &str) -> Option<SegmentStep> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// The segments not yet fetched, parsed, applied or inverted, oldest first.
pub fn pending(dir: &CrawlDir) -> Result<Vec<(Segment, Needs)>> {
    let meta = dir.crawldb_meta()?;
    let inverted = crate::graph::linkdb::read_meta(dir)?.map(|m| m.inverted_segments);
    let mut out = Vec::new();
    for seg in dir.segments()? {
        let name = seg.name().to_string();
        let needs = Needs {
            fetch: !seg.has(SegmentDataset::CrawlFetch),
            parse: !seg.has(SegmentDataset::ParseData) || !seg.has(SegmentDataset::CrawlParse),
            updatedb: !meta.is_applied(&name),
            linkdb: !inverted.as_ref().is_some_and(|l| l.contains(&name)),
        };
        if !needs.any() {
            continue;
        }
        if needs.fetch && !seg.has(SegmentDataset::CrawlGenerate) {
            tracing::warn!(
                "segment {name} has neither a complete crawl_generate nor crawl_fetch: left alone"
            );
            continue;
        }
        if !needs.updatedb && !needs.fetch && needs.parse {
            // Applied, its parse pruned (prunesegs): nothing left to do with it.
            continue;
        }
        out.push((seg, needs));
    }
    Ok(out)
}

/// What the round runs next on the crawl at `dir` with `opts`, after `progress`:
///
/// 1. the first step a pending segment needs (oldest segment first);
/// 2. generate, when the round has no segment and none is pending;
/// 3. the round's steps over the whole crawl not done yet, in the round's order;
/// 4. its closing steps on its last segment (warc);
///
/// after fetch reached no server, only the steps that record the failures.
pub fn next(dir: &CrawlDir, opts: RoundOpts, progress: &Progress) -> Result<Next> {
    let steps = round::steps(opts);
    let runs = |s: &Step| !progress.unreachable || s.after_unreachable;
    let step_of = |stage: &str| steps.iter().find(|s| s.stage == stage).copied();
    let pending = if dir.root().exists() {
        pending(dir)?
    } else {
        Vec::new()
    };
    for (seg, needs) in &pending {
        // A segment's first need, or nothing of it: parse never runs on a segment
        // that is not fetched.
        if let Some(step) = needs.steps().next().and_then(|s| step_of(s.name()))
            && runs(&step)
        {
            return Ok(Next::Run {
                step,
                segment: Some(seg.name().to_string()),
            });
        }
    }
    let done = |s: &Step| progress.done.iter().any(|d| d == s.stage);
    if progress.segments.is_empty() && progress.done.is_empty() && !progress.unreachable {
        if pending.is_empty()
            && let Some(step) = steps.iter().find(|s| s.segment == SegmentUse::Makes)
        {
            return Ok(Next::Run {
                step: *step,
                segment: None,
            });
        }
        // Pending segments that cannot run now: nothing else either.
        return Ok(Next::RoundDone);
    }
    if let Some(step) = steps
        .iter()
        .find(|s| s.segment == SegmentUse::None && !done(s) && runs(s))
    {
        return Ok(Next::Run {
            step: *step,
            segment: None,
        });
    }
    let closing = steps.iter().find(|s| {
        s.segment == SegmentUse::Takes && SegmentStep::of(s.stage).is_none() && !done(s) && runs(s)
    });
    if let (Some(step), Some(last)) = (closing, progress.segments.last()) {
        return Ok(Next::Run {
            step: *step,
            segment: Some(last.clone()),
        });
    }
    Ok(Next::RoundDone)
}

/// The segment `name` of the crawl at `dir` (a name as [`next`] gives it).
pub fn segment(dir: &CrawlDir, name: &str) -> Result<Segment> {
    dir.segment(&dir.segments_dir().join(Path::new(name)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::journal;

    /// `crawl` runs every step [`next`] can give it (warc is the Spark driver's alone):
    /// generate, the segment steps, and the steps over the whole crawl its journal
    /// records.
    #[test]
    fn crawl_runs_every_step_of_the_round() {
        let opts = RoundOpts::default();
        for step in round::steps(opts) {
            match step.segment {
                SegmentUse::Makes => assert_eq!(step.stage, "generate"),
                SegmentUse::Takes => assert!(
                    SegmentStep::of(step.stage).is_some(),
                    "{} takes the segment but is no segment step",
                    step.stage
                ),
                SegmentUse::None => assert!(
                    journal::Step::of(step.stage).is_some(),
                    "{} is not a step of crawl's journal",
                    step.stage
                ),
            }
        }
        let with_warc = RoundOpts { warc: true, ..opts };
        let closing: Vec<&str> = round::steps(with_warc)
            .iter()
            .filter(|s| s.segment == SegmentUse::Takes && SegmentStep::of(s.stage).is_none())
            .map(|s| s.stage)
            .collect();
        assert_eq!(closing, ["warc"]);
    }

    /// What `trawl plan done` records: the segments, the stage, fetch's "no server
    /// reached"; a failed step is refused; a progress naming a segment the crawl does
    /// not hold is set aside.
    #[test]
    fn progress_records_steps_and_outcomes_and_sets_a_stale_one_aside() {
        let steps = round::steps(RoundOpts::default());
        let step = |name: &str| *steps.iter().find(|s| s.stage == name).unwrap();
        let mut p = Progress::default();
        assert_eq!(
            p.record(&step("generate"), &["s1".into()], 0).unwrap(),
            None
        );
        assert_eq!(
            p.record(
                &step("fetch"),
                &["s1".into()],
                crate::cli::exit::UNREACHABLE
            )
            .unwrap(),
            Some(Outcome::Unreachable)
        );
        assert!(p.record(&step("parse"), &["s1".into()], 1).is_err());
        assert_eq!(p.segments, ["s1"]);
        assert_eq!(p.done, ["generate", "fetch"]);
        assert!(p.unreachable);
        let mut q = Progress::default();
        assert_eq!(
            q.record(&step("generate"), &[], crate::cli::exit::NOTHING_DUE)
                .unwrap(),
            Some(Outcome::NothingDue)
        );

        let root = std::env::temp_dir().join(format!("trawl-progress-{}", std::process::id()));
        let dir = CrawlDir::new(&root);
        std::fs::create_dir_all(dir.segments_dir().join("s1")).unwrap();
        let file = root.join("progress.json");
        assert_eq!(Progress::load(&file, &dir).unwrap(), Progress::default());
        p.save(&file).unwrap();
        assert_eq!(Progress::load(&file, &dir).unwrap(), p);
        std::fs::remove_dir_all(dir.segments_dir().join("s1")).unwrap();
        assert_eq!(Progress::load(&file, &dir).unwrap(), Progress::default());
        std::fs::write(&file, "not json").unwrap();
        let e = Progress::load(&file, &dir).unwrap_err().to_string();
        assert!(
            e.contains("--progress") && e.contains("remove the file"),
            "{e}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn needs_come_in_the_round_order() {
        let n = Needs {
            fetch: false,
            parse: true,
            updatedb: true,
            linkdb: false,
        };
        let names: Vec<&str> = n.steps().map(SegmentStep::name).collect();
        assert_eq!(names, ["parse", "updatedb"]);
        for s in SegmentStep::ALL {
            assert_eq!(SegmentStep::of(s.name()), Some(s));
        }
    }
}
