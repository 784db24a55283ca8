//! The crawl round, defined once: which stages run in which order, how each runs as
//! partition tasks, driver-side steps and a commit, which exit codes are outcomes
//! rather than failures, and what a round does after fetch reached no server.
//!
//! `crawl` follows it in one process ([`crate::driver`]); the Spark driver
//! (`cluster/trawl_spark.py`) asks for it with `trawl plan` (a JSON document, see
//! docs/cluster.md) and only schedules what it is given: it spells no stage name,
//! pass, exit code or dataset path of its own.

use serde::Serialize;

use crate::cli::exit;

/// How a step uses the round's segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SegmentUse {
    /// Works on the whole crawl.
    None,
    /// Makes the round's segment: its commit prints the segment's path as the last
    /// line of stdout.
    Makes,
    /// Takes the round's segment as its first argument.
    Takes,
}

/// One unit of a step's run, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "run", rename_all = "snake_case")]
pub enum Unit {
    /// Partition tasks (`--job J --partitions S --attempt A` plus `flags`): one per
    /// partition set, or with `all` one task over every partition (a pass that needs
    /// more than a partition set: `why` says what it holds).
    Tasks {
        /// Extra flags of these tasks (a pass: `--pass histogram`).
        flags: &'static [&'static str],
        /// One task over every partition (`--partitions all`).
        all: bool,
        /// With `all`: what the one task holds, for the driver's progress line.
        #[serde(skip_serializing_if = "Option::is_none")]
        why: Option<&'static str>,
    },
    /// A step in the driver's process between two passes (`--job J` plus `flags`:
    /// generate's `--cutoff`).
    Driver {
        /// Its flags.
        flags: &'static [&'static str],
    },
    /// Partition tasks run once per iteration: `--iteration K` (K = 0, 1, ...) added
    /// to `flags`. After each iteration's tasks the driver runs the step `check`
    /// (`--job J` + `check` + `--iteration K`) in its process, which prints one JSON
    /// line, `{"iteration": K, "delta": D, "again": true|false}`: with `again` the
    /// next iteration runs; without, the `then` tasks run with `--iteration K`.
    Iterate {
        /// Flags of each iteration's tasks (`--pass iterate`).
        flags: &'static [&'static str],
        /// Flags of the check after each iteration (`--check`).
        check: &'static [&'static str],
        /// Flags of the tasks after the last iteration (`--pass rewrite`).
        then: &'static [&'static str],
    },
    /// The job's commit (`--job J --commit`), in the driver's process.
    Commit,
    /// The stage run whole, without task flags, as one task: a step that has no
    /// partition tasks yet.
    Whole,
}

/// What an exit code of a step's last unit means for the round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Nothing was due: the round does not happen, the rounds end (exit code 3).
    NothingDue,
    /// fetch reached no server: the steps marked `after_unreachable` still run, then
    /// the rounds end with this code (5).
    Unreachable,
}

/// One step of the round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Step {
    /// The stage (a command of the registry, [`crate::cli::COMMANDS`]).
    pub stage: &'static str,
    /// How it uses the round's segment.
    pub segment: SegmentUse,
    /// Its units, in order.
    pub units: &'static [Unit],
    /// Exit codes of its units that are not failures.
    pub ok: &'static [u8],
    /// Exit codes that are outcomes of the round (see [`Outcome`]).
    pub outcomes: &'static [(u8, Outcome)],
    /// Its tasks hold fetch leases on their partitions' hosts: they need a time limit
    /// (the lease's length).
    pub leases: bool,
    /// It still runs after fetch reached no server (it records the failures).
    pub after_unreachable: bool,
    /// Only when asked for: the driver's option that turns it on or off.
    pub optional: Option<Optional>,
}

impl Step {
    /// The exit code that means `outcome` for this step, if it has that outcome.
    pub fn code_of(&self, outcome: Outcome) -> Option<u8> {
        self.outcomes
            .iter()
            .find(|(_, o)| *o == outcome)
            .map(|(code, _)| *code)
    }

    /// What exit code `code` of this step means for the round, if it is an outcome.
    pub fn outcome_of(&self, code: u8) -> Option<Outcome> {
        self.outcomes
            .iter()
            .find(|(c, _)| *c == code)
            .map(|(_, o)| *o)
    }

    /// The step as one line of `trawl plan steps` (for scripts; docs/cluster.md, "The
    /// plan"): tab-separated, its stage, how it uses the round's segment (`none`,
    /// `makes`, `takes`), whether it runs after fetch reached no server (`yes`,
    /// `no`), the exit codes of its outcomes "nothing due" and "no server reached"
    /// (`-` when it has none), and the code of a run stopped by a signal.
    pub fn line(&self) -> String {
        let code = |o| self.code_of(o).map_or("-".to_string(), |c| c.to_string());
        let uses = match self.segment {
            SegmentUse::None => "none",
            SegmentUse::Makes => "makes",
            SegmentUse::Takes => "takes",
        };
        format!(
            "{}\t{uses}\t{}\t{}\t{}\t{}",
            self.stage,
            if self.after_unreachable { "yes" } else { "no" },
            code(Outcome::NothingDue),
            code(Outcome::Unreachable),
            exit::INTERRUPTED
        )
    }
}

/// A step a round runs only when asked, or unless told not to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Optional {
    /// Runs unless `--no-dedup`.
    Dedup,
    /// Runs unless `--no-index`.
    Index,
    /// Runs only with `--warc`.
    Warc,
}

const TASKS: Unit = Unit::Tasks {
    flags: &[],
    all: false,
    why: None,
};

const OK: &[u8] = &[exit::OK];

const fn partitioned(stage: &'static str, segment: SegmentUse) -> Step {
    Step {
        stage,
        segment,
        units: &[TASKS, Unit::Commit],
        ok: OK,
        outcomes: &[],
        leases: false,
        after_unreachable: false,
        optional: None,
    }
}

/// `inject`: partition tasks, then the commit.
pub const INJECT: Step = partitioned("inject", SegmentUse::None);

/// `generate`: a histogram pass, the cut-off in the driver, a select pass, the commit
/// (which prints the segment; exit code 3 when nothing is due).
pub const GENERATE: Step = Step {
    stage: "generate",
    segment: SegmentUse::Makes,
    units: &[
        Unit::Tasks {
            flags: &["--pass", "histogram"],
            all: false,
            why: None,
        },
        Unit::Driver {
            flags: &["--cutoff"],
        },
        Unit::Tasks {
            flags: &["--pass", "select"],
            all: false,
            why: None,
        },
        Unit::Commit,
    ],
    // A task's partitions may have nothing due; only the commit decides.
    ok: &[exit::OK, exit::NOTHING_DUE],
    outcomes: &[(exit::NOTHING_DUE, Outcome::NothingDue)],
    leases: false,
    after_unreachable: false,
    optional: None,
};

/// `fetch`: partition tasks under fetch leases, then the commit (exit code 5 when no
/// server was reached).
pub const FETCH: Step = Step {
    stage: "fetch",
    segment: SegmentUse::Takes,
    units: &[TASKS, Unit::Commit],
    ok: &[exit::OK, exit::UNREACHABLE],
    outcomes: &[(exit::UNREACHABLE, Outcome::Unreachable)],
    leases: true,
    after_unreachable: false,
    optional: None,
};

/// `parse`, `updatedb`, `linkdb`: partition tasks over the segment, then the commit;
/// they record a dead network's failures too.
pub const PARSE: Step = Step {
    after_unreachable: true,
    ..partitioned("parse", SegmentUse::Takes)
};
/// See [`PARSE`].
pub const UPDATEDB: Step = Step {
    after_unreachable: true,
    ..partitioned("updatedb", SegmentUse::Takes)
};
/// See [`PARSE`].
pub const LINKDB: Step = Step {
    after_unreachable: true,
    ..partitioned("linkdb", SegmentUse::Takes)
};

/// `dedup`: keys tasks (the candidates shuffled to buckets), groups tasks (a bucket's
/// groups), the resolve task (with `--near`, the groups joined across buckets from
/// their pairs alone), rewrite tasks, the commit.
pub const DEDUP: Step = Step {
    units: &[
        Unit::Tasks {
            flags: &["--pass", "keys"],
            all: false,
            why: None,
        },
        Unit::Tasks {
            flags: &["--pass", "groups"],
            all: false,
            why: None,
        },
        Unit::Tasks {
            flags: &["--pass", "resolve"],
            all: true,
            why: Some(
                "with --near, the groups joined across buckets from their pairs alone; without, nothing",
            ),
        },
        Unit::Tasks {
            flags: &["--pass", "rewrite"],
            all: false,
            why: None,
        },
        Unit::Commit,
    ],
    optional: Some(Optional::Dedup),
    ..partitioned("dedup", SegmentUse::None)
};

/// `pagerank`: links tasks (each link routed to its source's partition), graph tasks
/// (each partition's nodes and edges), the iteration (iterate tasks, then the check in
/// the driver, until it stops), rewrite tasks with the last iteration's ranks, the
/// commit.
pub const PAGERANK: Step = Step {
    units: &[
        Unit::Tasks {
            flags: &["--pass", "links"],
            all: false,
            why: None,
        },
        Unit::Tasks {
            flags: &["--pass", "graph"],
            all: false,
            why: None,
        },
        Unit::Iterate {
            flags: &["--pass", "iterate"],
            check: &["--check"],
            then: &["--pass", "rewrite"],
        },
        Unit::Commit,
    ],
    ..partitioned("pagerank", SegmentUse::None)
};

/// `pagerank` with HITS or HostRank (`pagerank.hits`, `pagerank.hostrank`): the
/// scores pass as one task (the whole graph, which those need), rewrite tasks, the
/// commit.
pub const PAGERANK_WHOLE_GRAPH: Step = Step {
    units: &[
        Unit::Tasks {
            flags: &["--pass", "scores"],
            all: true,
            why: Some("the whole link graph: HITS and HostRank are not partitioned"),
        },
        Unit::Tasks {
            flags: &["--pass", "rewrite"],
            all: false,
            why: None,
        },
        Unit::Commit,
    ],
    ..partitioned("pagerank", SegmentUse::None)
};

/// `sitemap`: the sitemaps of each partition's hosts under their fetch leases (their
/// URLs written per target partition), merge tasks (a partition's URLs into its
/// crawldb parts), the commit.
pub const SITEMAP: Step = Step {
    units: &[
        TASKS,
        Unit::Tasks {
            flags: &["--pass", "merge"],
            all: false,
            why: None,
        },
        Unit::Commit,
    ],
    leases: true,
    ..partitioned("sitemap", SegmentUse::None)
};

/// `hostdb`: partition tasks (a host's rows come from its partition alone), then the
/// commit; after a dead network too (the hosts' failures drive generate's back-off).
pub const HOSTDB: Step = Step {
    after_unreachable: true,
    ..partitioned("hostdb", SegmentUse::None)
};

/// `index`: partition tasks (each builds the shards of its partitions: a page's
/// document lives in its host's partition's shard), then the commit.
pub const INDEX: Step = Step {
    optional: Some(Optional::Index),
    ..partitioned("index", SegmentUse::None)
};

/// `warc`: the segment's WARC export as partition tasks, then the commit.
pub const WARC: Step = Step {
    optional: Some(Optional::Warc),
    ..partitioned("warc", SegmentUse::Takes)
};

/// Every step a round can run, in order: generate, the segment's steps, then the
/// steps over the whole crawl (hostdb after those that change the crawldb, so its
/// counts are the round's last; the index last, with every score set).
pub const ROUND: &[Step] = &[
    GENERATE, FETCH, PARSE, UPDATEDB, LINKDB, DEDUP, PAGERANK, SITEMAP, HOSTDB, INDEX, WARC,
];

/// Which optional steps a round runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundOpts {
    /// Mark duplicates (`crawl` and the Spark driver: unless `--no-dedup`).
    pub dedup: bool,
    /// Build the search index (unless `--no-index`).
    pub index: bool,
    /// Export the segment as WARC (`--warc`; the Spark driver only).
    pub warc: bool,
    /// PageRank with HITS or HostRank: its scores pass as one task over the whole
    /// graph ([`PAGERANK_WHOLE_GRAPH`]).
    pub pagerank_whole_graph: bool,
}

impl Default for RoundOpts {
    fn default() -> Self {
        RoundOpts {
            dedup: true,
            index: true,
            warc: false,
            pagerank_whole_graph: false,
        }
    }
}

/// The steps of a round with `opts`, in order.
pub fn steps(opts: RoundOpts) -> Vec<Step> {
    ROUND
        .iter()
        .filter(|s| match s.optional {
            None => true,
            Some(Optional::Dedup) => opts.dedup,
            Some(Optional::Index) => opts.index,
            Some(Optional::Warc) => opts.warc,
        })
        .map(|s| match s.stage {
            "pagerank" if opts.pagerank_whole_graph => PAGERANK_WHOLE_GRAPH,
            _ => *s,
        })
        .collect()
}

/// The step of `stage` (any step of the round, or inject), for drivers that run one
/// stage as a job of its own (`trawl_spark.py inject`, `warc`).
pub fn step(stage: &str) -> Option<Step> {
    std::iter::once(&INJECT)
        .chain(ROUND)
        .find(|s| s.stage == stage)
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines `trawl plan steps` prints for round.sh.
    #[test]
    fn step_lines() {
        assert_eq!(GENERATE.line(), "generate\tmakes\tno\t3\t-\t4");
        assert_eq!(FETCH.line(), "fetch\ttakes\tno\t-\t5\t4");
        assert_eq!(PARSE.line(), "parse\ttakes\tyes\t-\t-\t4");
        assert_eq!(HOSTDB.line(), "hostdb\tnone\tyes\t-\t-\t4");
        assert_eq!(PAGERANK.line(), "pagerank\tnone\tno\t-\t-\t4");
    }

    #[test]
    fn every_step_is_a_command_and_ends_with_a_commit_or_runs_whole() {
        for s in std::iter::once(&INJECT).chain(ROUND) {
            assert!(
                crate::cli::command(s.stage).is_some(),
                "{} is a command of the registry",
                s.stage
            );
            if let Some(Unit::Iterate { flags, check, then }) =
                s.units.iter().find(|u| matches!(u, Unit::Iterate { .. }))
            {
                assert!(!flags.is_empty() && !check.is_empty() && !then.is_empty());
            }
            let last = s.units.last().copied();
            assert!(
                matches!(last, Some(Unit::Commit)) || s.units == [Unit::Whole],
                "{}: {:?}",
                s.stage,
                s.units
            );
            for (code, _) in s.outcomes {
                assert!(
                    s.ok.contains(code),
                    "{}: outcome {code} is an ok code",
                    s.stage
                );
            }
        }
    }

    #[test]
    fn the_default_round_is_crawls() {
        let names: Vec<&str> = steps(RoundOpts::default())
            .iter()
            .map(|s| s.stage)
            .collect();
        assert_eq!(
            names,
            [
                "generate", "fetch", "parse", "updatedb", "linkdb", "dedup", "pagerank", "sitemap",
                "hostdb", "index"
            ]
        );
        let lean = RoundOpts {
            dedup: false,
            index: false,
            warc: true,
            pagerank_whole_graph: true,
        };
        let pagerank = steps(lean).into_iter().find(|s| s.stage == "pagerank");
        assert_eq!(pagerank, Some(PAGERANK_WHOLE_GRAPH));
        let names: Vec<&str> = steps(lean).iter().map(|s| s.stage).collect();
        assert!(!names.contains(&"dedup") && !names.contains(&"index"));
        assert_eq!(names.last(), Some(&"warc"));
        assert_eq!(GENERATE.outcome_of(3), Some(Outcome::NothingDue));
        assert_eq!(FETCH.outcome_of(5), Some(Outcome::Unreachable));
        assert_eq!(FETCH.outcome_of(0), None);
    }
}
