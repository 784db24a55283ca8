//! The one shape every stage has.
//!
//! A stage is `fn run(ctx: &StageCtx, opts: &XOpts) -> Result<XReport>`:
//! - [`StageCtx`] carries what every stage gets from the command line and the config
//!   file (the crawl directory's root, the loaded [`Config`], the start time);
//! - `XOpts` is the stage's own options (flags already merged over the config);
//! - `XReport` implements [`Report`]: its `Display` is the one-line summary, and
//!   [`Report::exit`] says whether the binary ends with a non-zero code although the
//!   work succeeded (generate's "nothing due", fetch's "no server reached").
//!
//! Work that is done per partition is a visible unit in each stage
//! (`fn run_partition(ctx, i, ..)`), so that a scheduler other than rayon (a cluster
//! task) can run exactly these units.
//!
//! A binary in `stages/` is then only:
//!
//! ```ignore
//! fn run() -> anyhow::Result<()> {
//!     let args = Args::parse();
//!     let mut ctx = StageCtx::from_args(&args.common)?;
//!     // flags override config keys: ctx.config_mut().x.y = ..; then ctx.validate_flags()?
//!     let report = trawl::x::run(&ctx, &XOpts { .. })?;
//!     ctx.finish(&report)?;
//!     Ok(())
//! }
//! ```

use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::cli::{CommonArgs, Exit, TaskArgs};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::store::jobs::{self, Job, PartitionSet};
use crate::store::layout::CrawlDir;
use crate::store::object::{CrawlUri, GcReport, Mirror, Scope};

/// What every stage gets: the crawl directory's root, the configuration, the start time.
///
/// With an object-store crawl directory (`--crawl-dir s3://..`), the root is a local
/// working mirror ([`Mirror`]): [`StageCtx::from_args`] pulls the current versions
/// into it, the stage runs on it as on any local directory, and
/// [`StageCtx::finish`] pushes what changed and commits it (docs/object-store.md).
#[derive(Debug, Clone)]
pub struct StageCtx {
    root: PathBuf,
    cfg: Config,
    started: Instant,
    task: TaskMode,
    mirror: Option<Arc<Mirror>>,
}

/// How a run of a partitioned stage is split (`--job`, `--partitions`, `--attempt`,
/// `--commit`; see [`StageCtx::steps`] and docs/cluster.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TaskMode {
    /// The whole stage in this process: one task over every partition, then its commit.
    #[default]
    Whole,
    /// One task of job `job`: attempt `attempt` on `partitions`; nothing is installed.
    Task {
        /// The job id.
        job: String,
        /// The partitions the task works on.
        partitions: PartitionSet,
        /// The attempt id.
        attempt: String,
    },
    /// The commit of job `job`.
    Commit {
        /// The job id.
        job: String,
    },
}

/// One step of a stage run (see [`StageCtx::steps`]).
#[derive(Debug, Clone)]
pub enum Step {
    /// Run the task on `partitions` as attempt `attempt` of `job`, writing only
    /// through `job.attempt_writer(partitions, attempt)`.
    Task {
        /// The job.
        job: Job,
        /// The partitions (checked against the dataset's partition count).
        partitions: PartitionSet,
        /// The attempt id.
        attempt: String,
    },
    /// Commit `job`: install its chosen attempts ([`Job::choose`]), then remove it.
    Commit {
        /// The job.
        job: Job,
    },
}

impl StageCtx {
    /// A context for the crawl directory at `root` with configuration `cfg`, started now.
    pub fn new(root: impl Into<PathBuf>, cfg: Config) -> Self {
        StageCtx {
            root: root.into(),
            cfg,
            started: Instant::now(),
            task: TaskMode::Whole,
            mirror: None,
        }
    }

    /// The context for a partitioned stage's task flags (`--job`, `--partitions`,
    /// `--attempt`, `--commit`); the ids and the partition list are checked here.
    pub fn with_task(mut self, args: &TaskArgs) -> Result<Self> {
        self.task = TaskMode::from_args(args)?;
        Ok(self)
    }

    /// How this run is split into tasks (see [`TaskMode`]).
    pub fn task(&self) -> &TaskMode {
        &self.task
    }

    /// The lock a one-process run and a commit hold while they install (`take`
    /// takes it); `None` for a task, which only reads and writes its own attempt
    /// (many run at once, on several machines).
    pub fn lock_unless_task<L>(&self, take: impl FnOnce() -> Result<L>) -> Result<Option<L>> {
        match self.task {
            TaskMode::Task { .. } => Ok(None),
            _ => take().map(Some),
        }
    }

    /// The steps of this run of `stage` over a dataset of `partitions` parts, in
    /// order: a one-process run is a task over every partition (a private job,
    /// attempt `0`; jobs a killed one-process run left are removed first) followed
    /// by its commit; `--partitions`/`--attempt` is that task alone, `--commit` the
    /// commit alone. Call it while holding the lock the stage's commit needs.
    pub fn steps(&self, stage: &str, partitions: usize) -> Result<Vec<Step>> {
        Ok(match &self.task {
            TaskMode::Whole => {
                jobs::remove_stale_local(&self.root, stage)?;
                let job = Job::local(&self.root, stage)?;
                vec![
                    Step::Task {
                        job: job.clone(),
                        partitions: PartitionSet::all(partitions),
                        attempt: "0".into(),
                    },
                    Step::Commit { job },
                ]
            }
            TaskMode::Task {
                job,
                partitions: set,
                attempt,
            } => {
                let set = set.resolve(partitions);
                set.check_within(partitions, stage)?;
                vec![Step::Task {
                    job: Job::open(&self.root, job)?,
                    partitions: set,
                    attempt: attempt.clone(),
                }]
            }
            TaskMode::Commit { job } => vec![Step::Commit {
                job: Job::open(&self.root, job)?,
            }],
        })
    }

    /// A binary's context from its common flags: initializes logging, loads the
    /// configuration (`--config`), sizes rayon's pool (`crawl.threads`) and resolves
    /// the crawl directory (`--crawl-dir`, else `crawl.dir`).
    ///
    /// An object-store URI is pulled into its working mirror (`--work-dir`), held
    /// locked until the stage ends, and the ctx's root is the mirror.
    pub fn from_args(common: &CommonArgs) -> Result<Self> {
        Self::open(common, Scope::Whole)
    }

    /// [`StageCtx::from_args`] for a step of job `job` that runs in the driver
    /// beside its commit (generate's `--cutoff`): on an object store the mirror
    /// holds the job's attempts and no part data ([`Scope::Job`]).
    pub fn from_job_args(common: &CommonArgs, job: &str) -> Result<Self> {
        jobs::check_job_id(job)?;
        Self::open(
            common,
            Scope::Job {
                job: job.to_string(),
            },
        )
    }

    /// [`StageCtx::from_args`] for a step that reads only the crawl directory's
    /// small files (`readdb --partitions`): on an object store no part is
    /// downloaded ([`Scope::Meta`]).
    pub fn from_meta_args(common: &CommonArgs) -> Result<Self> {
        Self::open(common, Scope::Meta)
    }

    fn open(common: &CommonArgs, scope: Scope) -> Result<Self> {
        let (cfg, root) = common.setup()?;
        match CrawlUri::parse(&root)? {
            CrawlUri::Local(root) => {
                // A one-process run of a stage that changes the crawl keeps status.json
                // current once its work begins (tasks of a job do not: many run at
                // once); nothing is written before, so a refused stage changes nothing.
                let name = crate::cli::binary_name();
                if scope == Scope::Whole && writes(&name) {
                    crate::status::set_live(CrawlDir::new(&root).status_file());
                }
                Ok(StageCtx::new(root, cfg))
            }
            CrawlUri::Object(uri) => {
                let mirror = Mirror::open_scoped(
                    &uri,
                    common.work_dir.as_deref(),
                    &crate::cli::binary_name(),
                    scope,
                )?;
                let mut ctx = StageCtx::new(mirror.root(), cfg);
                ctx.mirror = Some(Arc::new(mirror));
                Ok(ctx)
            }
        }
    }

    /// [`StageCtx::from_args`] for a partitioned stage, with its task flags
    /// ([`StageCtx::with_task`]).
    pub fn from_task_args(common: &CommonArgs, task: &TaskArgs) -> Result<Self> {
        let mode = TaskMode::from_args(task)?;
        let mut ctx = Self::open(common, mode.scope())?;
        ctx.task = mode;
        Ok(ctx)
    }

    /// Where leases are kept when the crawl directory is on an object store (the
    /// mirror's store); `None` for a local directory (lease files).
    pub fn lease_store(&self) -> Option<Arc<dyn crate::store::lease::LeaseStore>> {
        self.mirror
            .clone()
            .map(|m| m as Arc<dyn crate::store::lease::LeaseStore>)
    }

    /// Whether the crawl directory is on an object store (the root is its local
    /// working mirror).
    pub fn is_remote(&self) -> bool {
        self.mirror.is_some()
    }

    /// The crawl directory's root as given (it may not exist yet: inject creates it).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The crawl directory, not checked (inject, which creates it).
    pub fn crawl_dir(&self) -> CrawlDir {
        CrawlDir::new(&self.root)
    }

    /// The crawl directory, which must exist with a complete crawldb
    /// ([`CrawlDir::open_existing`]).
    pub fn open_existing(&self) -> Result<CrawlDir> {
        let dir = CrawlDir::open_existing(&self.root)?;
        self.check_partition_key(&dir)?;
        Ok(dir)
    }

    /// The crawl directory, which must exist; a crawldb is not required (stages that
    /// only read or write segments: [`CrawlDir::open_for_segments`]).
    pub fn open_for_segments(&self) -> Result<CrawlDir> {
        let dir = CrawlDir::open_for_segments(&self.root)?;
        self.check_partition_key(&dir)?;
        Ok(dir)
    }

    /// Refuses a configuration whose `crawl.partition_key` differs from the key the
    /// crawl records in its crawldb's `_meta.json` (the crawl's is what every stage
    /// partitions by; `repartition --partition-key` changes it).
    fn check_partition_key(&self, dir: &CrawlDir) -> Result<()> {
        if !crate::store::parquet::dataset_complete(&dir.crawldb_current()) {
            return Ok(());
        }
        crate::store::partition::check_key(
            &dir.crawldb_current(),
            dir.crawldb_meta()?.partition_key,
            self.cfg.crawl.partition_key,
        )
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The configuration, for a binary's flags to override keys before the run; call
    /// [`StageCtx::validate_flags`] afterwards.
    pub fn config_mut(&mut self) -> &mut Config {
        &mut self.cfg
    }

    /// Validates the configuration again after flags overrode keys (errors name the flag).
    pub fn validate_flags(&self) -> Result<()> {
        self.cfg.validate_flags()
    }

    /// When the stage started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Prints the report's one-line summary (`<stage>: <report> in <secs>s`) and returns
    /// the report's exit outcome, if any, for the binary to end with.
    ///
    /// With an object-store crawl directory, first pushes and commits what the stage
    /// changed; a failed push (another writer committed first, a network error) ends
    /// the stage with the error's exit code and no summary.
    pub fn finish<R: Report>(&self, report: &R) -> std::result::Result<(), Exit> {
        self.finish_line(R::STAGE, &report.to_string())?;
        match report.exit() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// [`StageCtx::finish`] for a step with a summary but no [`Report`] type
    /// (generate's `--cutoff`): pushes, then prints `<stage>: <line> in <secs>s`.
    pub fn finish_line(&self, stage: &str, line: &str) -> std::result::Result<(), Exit> {
        if let Some(mirror) = &self.mirror {
            match mirror.push() {
                Ok(pushed) => tracing::info!(
                    "{}: committed [{}], {} objects uploaded ({} bytes, {} PUT)",
                    mirror.uri().as_str(),
                    pushed.committed.join(", "),
                    pushed.uploaded,
                    pushed.requests.bytes_up,
                    pushed.requests.put
                ),
                Err(e) => {
                    return Err(Exit::new(
                        crate::cli::exit_code(&e),
                        format!("Error: {stage} did its work, but it was not committed: {e}"),
                    ));
                }
            }
        }
        crate::cli::summary(stage, self.started, line);
        self.write_status(stage, line);
        Ok(())
    }

    /// `status.json` after a stage that changes the crawl ended (one-process runs on
    /// a local crawl directory; read tools leave the directory as it was).
    fn write_status(&self, stage: &str, line: &str) {
        let name = stage.split_whitespace().next().unwrap_or(stage);
        if self.mirror.is_some() || self.task != TaskMode::Whole || !writes(name) {
            return;
        }
        let mut fields = serde_json::Map::new();
        fields.insert("summary".into(), serde_json::json!(line));
        fields.insert(
            "secs".into(),
            serde_json::json!(self.started.elapsed().as_secs_f64()),
        );
        crate::status::write(
            &CrawlDir::new(&self.root).status_file(),
            &crate::status::status(name, "done", fields),
        );
    }
}

impl TaskMode {
    /// The mode given by a stage's task flags; the ids and the partition list are
    /// checked here.
    pub fn from_args(args: &TaskArgs) -> Result<Self> {
        Ok(
            match (&args.job, &args.partitions, &args.attempt, args.commit) {
                (None, None, None, false) => TaskMode::Whole,
                (Some(job), None, None, true) => {
                    jobs::check_job_id(job)?;
                    TaskMode::Commit { job: job.clone() }
                }
                (Some(job), Some(spec), Some(attempt), false) => {
                    jobs::check_job_id(job)?;
                    jobs::check_attempt_id(attempt)?;
                    let partitions = PartitionSet::parse(spec)
                        .map_err(|m| Error::input(format!("--partitions {spec}"), m))?;
                    TaskMode::Task {
                        job: job.clone(),
                        partitions,
                        attempt: attempt.clone(),
                    }
                }
                _ => {
                    return Err(Error::input(
                        "--job",
                        "give --job ID with either --partitions SPEC --attempt ID (run one task) \
                     or --commit (install the job's finished attempts)",
                    ));
                }
            },
        )
    }

    /// What an object-store mirror pulls and pushes for this mode.
    fn scope(&self) -> Scope {
        match self {
            TaskMode::Whole => Scope::Whole,
            TaskMode::Task {
                job, partitions, ..
            } => Scope::Task {
                job: job.clone(),
                partitions: partitions.clone(),
            },
            TaskMode::Commit { job } => Scope::Job { job: job.clone() },
        }
    }
}

/// Whether the command `name` changes the crawl, and so keeps `status.json` current
/// (the registry's [`crate::cli::Command::writes`]).
fn writes(name: &str) -> bool {
    crate::cli::command(name).is_some_and(|c| c.writes)
}

impl Report for GcReport {
    const STAGE: &'static str = "gc";
}

/// A stage's result. `Display` is its one-line summary (without the stage's name and
/// the elapsed time, which [`StageCtx::finish`] adds).
pub trait Report: Display {
    /// The stage's name as it starts the summary line (the binary's name).
    const STAGE: &'static str;

    /// A non-zero ending although the work succeeded (printed after the summary), e.g.
    /// generate's "nothing due" ([`crate::cli::exit::NOTHING_DUE`]).
    fn exit(&self) -> Option<Exit> {
        None
    }
}
