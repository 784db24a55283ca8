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
//! A stage whose work splits into partition tasks implements [`Partitioned`] (its
//! partitions, one task on a set of them, the commit) and hands [`execute`], the one
//! executor, what it locks ([`Guard`]) and how it is opened: the executor takes the
//! lock (never in a task) and verifies what the guard says, then runs the whole stage
//! in this process (a task over every partition, then the commit), one task of a
//! job, or a job's commit, as the task flags say, and owns the job's life (stale jobs
//! of a killed run, the private job's removal on failure, the job's removal after its
//! commit). A cluster
//! scheduler runs exactly these units (docs/cluster.md), so no stage spells how
//! it is scheduled.
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
use crate::store::layout::{CrawlDir, Segment};
use crate::store::lock::{Lock, LockOn};
use crate::store::names::VersionedDb;
use crate::store::object::{CrawlUri, GcReport, Mirror, MirrorNeeds, ObjectUri, Scope};

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
/// `--commit`; see [`execute`] and docs/cluster.md).
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

    /// Whether this run is the whole stage in this process (no task flags).
    pub fn is_whole(&self) -> bool {
        self.task == TaskMode::Whole
    }

    /// Whether this run is one task of a job (`--job J --partitions P --attempt A`):
    /// it takes no lock and writes only its attempt.
    pub fn is_task(&self) -> bool {
        matches!(self.task, TaskMode::Task { .. })
    }

    /// Takes `guards` for the command `stage` (in the order of [`LockOn::ALL`], so
    /// that two runs never wait for each other), verifying what they say, and holds
    /// them until the returned [`Held`] is dropped: what every run that installs
    /// anything holds ([`execute`] takes a partitioned stage's; a stage or tool that
    /// runs in one process only takes its own through here). A guard the command's
    /// registry entry does not declare ([`crate::cli::Command::locks`]) is refused.
    pub fn hold(&self, stage: &str, guards: &[Guard<'_>]) -> Result<Held> {
        if self.is_task() {
            return Err(Error::Internal {
                message: format!(
                    "a {stage} task takes a lock: tasks write only their own attempt and take none"
                ),
            });
        }
        let declared = crate::cli::command(stage).map_or(&[][..], |c| c.locks);
        if let Some(g) = guards
            .iter()
            .find(|g| g.locks().iter().any(|l| !declared.contains(l)))
        {
            return Err(Error::Internal {
                message: format!(
                    "{stage} takes {:?}, which its entry of the registry (cli::COMMANDS) does not declare in `locks`",
                    g.locks()
                ),
            });
        }
        let mut ordered: Vec<&Guard<'_>> = guards.iter().collect();
        ordered.sort_by_key(|g| g.locks().first().map_or(0, |l| l.rank()));
        let mut locks = Vec::new();
        for g in ordered {
            locks.extend(g.take(&self.root, stage, &self.task)?);
        }
        Ok(Held { _locks: locks })
    }

    /// The pass a run of a stage with passes (generate, dedup, pagerank) was given:
    /// `--pass` is required for a task and refused otherwise. `hint` names the passes
    /// (`--pass histogram, then --pass select`).
    pub fn pass<P>(&self, stage: &str, pass: Option<P>, hint: &str) -> Result<Option<P>> {
        match (self.is_task(), pass) {
            (true, None) => Err(Error::input(
                "--pass",
                format!("a {stage} task runs one pass: {hint}"),
            )),
            (true, p) => Ok(p),
            (false, Some(_)) => Err(Error::input(
                "--pass",
                "--pass is for the tasks of a job (with --job, --partitions and --attempt)",
            )),
            (false, None) => Ok(None),
        }
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

    /// [`StageCtx::from_args`] for a reader of the search index alone (`search`,
    /// `index --to jsonl`): on an object store only the index is pulled
    /// ([`Scope::Index`]).
    pub fn from_index_args(common: &CommonArgs) -> Result<Self> {
        Self::open(common, Scope::Index)
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
                    crate::cli::running().map_or(MirrorNeeds::NONE, |c| c.mirror),
                    scope,
                )?;
                let mut ctx = StageCtx::new(mirror.root(), cfg);
                ctx.mirror = Some(Arc::new(mirror));
                Ok(ctx)
            }
        }
    }

    /// [`StageCtx::from_args`] for a partitioned stage, with its task flags
    /// (`--job`, `--partitions`, `--attempt`, `--commit`: [`TaskMode`]; the ids and
    /// the partition list are checked here).
    pub fn from_task_args(common: &CommonArgs, task: &TaskArgs) -> Result<Self> {
        Self::from_pass_task_args(common, task, None)
    }

    /// [`StageCtx::from_task_args`] for a stage whose tasks run in passes: `pass` is
    /// the task's `--pass` ([`crate::cli::PassArgs::name`]), which tells an object
    /// store's mirror which of the job's shuffles the task reads
    /// ([`crate::store::object::MirrorNeeds::shuffles`]).
    pub fn from_pass_task_args(
        common: &CommonArgs,
        task: &TaskArgs,
        pass: Option<String>,
    ) -> Result<Self> {
        let mode = TaskMode::from_args(task)?;
        let mut scope = mode.scope();
        if let Scope::Task { pass: p, .. } = &mut scope {
            *p = pass;
        }
        let mut ctx = Self::open(common, scope)?;
        ctx.task = mode;
        Ok(ctx)
    }

    /// Where leases are kept when the crawl directory is on an object store (the
    /// mirror's store); `None` for a local directory (lease files).
    fn lease_store(&self) -> Option<Arc<dyn crate::store::lease::LeaseStore>> {
        self.mirror
            .clone()
            .map(|m| m as Arc<dyn crate::store::lease::LeaseStore>)
    }

    /// The time to live of this run's fetch leases, renewed by a heartbeat: a task's
    /// when `fetch.lease_ttl` > 0 and the store can renew them (not a `file://`
    /// store); `None`: they last the holder's time limit.
    pub fn lease_heartbeat(&self) -> Option<std::time::Duration> {
        self.cfg
            .fetch
            .lease_heartbeat(self.is_task())
            .filter(|_| self.lease_store().is_none_or(|s| s.renews()))
    }

    /// Takes the fetch leases `leases` (`(lease file of the crawl directory, what it
    /// guards)`, in order) for `attempt` of `job`: lease files on a local crawl
    /// directory, objects at the same keys on an object store. With a heartbeat
    /// ([`StageCtx::lease_heartbeat`]) each is renewed from when it is taken (also
    /// while the task waits for the next); otherwise they last `length` (the
    /// holder's time limit and then some; `None`: until released), counted for all
    /// of them from when the last was taken. A live lease of another attempt is
    /// waited for up to `fetch.lease_wait` (a task only), then refuses.
    pub fn take_leases(
        &self,
        leases: &[(PathBuf, String)],
        job: &str,
        attempt: &str,
        length: Option<std::time::Duration>,
    ) -> Result<crate::store::lease::Held> {
        use crate::store::lease::{Heartbeat, Held, Lease, Terms};
        let cfg = &self.cfg.fetch;
        let ttl = self.lease_heartbeat();
        let started = Instant::now();
        let mut held = Held {
            heartbeat: ttl.map(|t| Heartbeat::start(t.as_millis() as i64)),
            ..Held::default()
        };
        for (path, what) in leases {
            let terms = Terms {
                what,
                job,
                attempt,
                lasts: ttl.or(length),
                wait: cfg.lease_wait(self.is_task()),
            };
            let lease = match self.lease_store() {
                Some(store) => {
                    let rel = path
                        .strip_prefix(&self.root)
                        .unwrap_or(path)
                        .to_string_lossy()
                        .into_owned();
                    Lease::acquire_remote(store, &rel, &terms)?
                }
                None => Lease::acquire(path, &terms)?,
            };
            held.add(lease);
        }
        // Without a heartbeat, a lease taken before a wait would expire that much
        // earlier than the holder stops: all of them last `length` from now.
        if let Some(length) = length.filter(|_| ttl.is_none())
            && held.leases.len() > 1
            && started.elapsed() >= std::time::Duration::from_secs(1)
            && self.lease_store().is_none_or(|s| s.renews())
        {
            held.extend_all(length)?;
        }
        Ok(held)
    }

    /// Whether the crawl directory is on an object store (the root is its local
    /// working mirror).
    pub fn is_remote(&self) -> bool {
        self.mirror.is_some()
    }

    /// The object-store crawl directory's working mirror, for a stage that publishes
    /// files to the store while it runs (fetch's checkpoints:
    /// [`Mirror::put_scratch_dir`]); `None` on a local directory, where what a stage
    /// writes into the crawl directory is there for a rerun or a retry as it is.
    pub fn scratch_store(&self) -> Option<Arc<Mirror>> {
        self.mirror.clone()
    }

    /// The object-store crawl directory's URI (`None` for a local directory).
    pub fn store_uri(&self) -> Option<&ObjectUri> {
        self.mirror.as_deref().map(Mirror::uri)
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
                    "{}: committed [{}], {} objects uploaded ({} bytes, {} PUT, {} HEAD, {} GET)",
                    mirror.uri().as_str(),
                    pushed.committed.join(", "),
                    pushed.uploaded,
                    pushed.requests.bytes_up,
                    pushed.requests.put,
                    pushed.requests.head,
                    pushed.requests.get
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
                pass: None,
            },
            TaskMode::Commit { job } => Scope::Job { job: job.clone() },
        }
    }
}

/// What a stage's one-process run and its commit hold while they read what they
/// install over and install it. The executor takes it ([`execute`], [`StageCtx::hold`])
/// before the stage opens anything, never in a task (tasks only read and write their
/// own attempt, many at once on several machines; a commit checks that what they
/// read is still current), and releases it when the run ends, however it ends.
///
/// Every guard a command takes is declared in its registry entry
/// ([`crate::cli::Command::locks`]); the executor refuses one that is not, so the
/// table of locks generated from the registry (docs/architecture.md) is what runs.
#[derive(Debug, Clone, Copy)]
pub enum Guard<'a> {
    /// A versioned dataset (`linkdb/`, `hostdb/`, ...): its lock, then the repair of
    /// an install a killed stage left half done.
    Db(VersionedDb),
    /// The crawldb, as [`Guard::Db`]; then, in the runs `verify` names, every part's
    /// blake3 checked against its manifest before the stage reads what it rewrites
    /// ([`CrawlDir::verify_crawldb_for_rewrite`]).
    CrawlDb(Verify),
    /// What the crawldb and the linkdb have applied: the crawldb's lock and, when
    /// there is a linkdb, the linkdb's (each with the repair of a half-done install).
    /// Held by the segment tools for their whole run, so that no stage applies,
    /// inverts or generates a segment while they work.
    Applied,
    /// A segment's lock (`segments/<name>.lock`): the stages that write into a
    /// segment or read what another stage may delete from it.
    Segment(&'a Segment),
    /// The lock of the search index in the directory given (`index/`, or the
    /// directory `index --index-dir` names).
    Index(&'a Path),
    /// The crawl driver's lock (`crawl.lock` in the crawl directory, or beside the
    /// working mirror of an object-store crawl).
    Driver,
}

/// Which runs of a stage that rewrites the crawldb verify it first ([`Guard::CrawlDb`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// None: the stage's tasks check what they read, and its commit links their parts.
    Never,
    /// A one-process run (it reads every part, then rewrites the crawldb); the commit
    /// only links the tasks' parts.
    Whole,
    /// A one-process run and a commit (which reads the crawldb it rewrites).
    WholeAndCommit,
}

/// The locks a run holds ([`StageCtx::hold`]), released when it is dropped.
#[derive(Debug)]
#[must_use = "the locks are released when this is dropped"]
pub struct Held {
    _locks: Vec<Lock>,
}

impl Guard<'_> {
    /// The lock files it takes.
    fn locks(&self) -> &'static [LockOn] {
        match self {
            Guard::Db(VersionedDb::CrawlDb) | Guard::CrawlDb(_) => {
                &[LockOn::Db(VersionedDb::CrawlDb)]
            }
            Guard::Db(VersionedDb::LinkDb) => &[LockOn::Db(VersionedDb::LinkDb)],
            Guard::Db(VersionedDb::SitemapDb) => &[LockOn::Db(VersionedDb::SitemapDb)],
            Guard::Db(VersionedDb::HostDb) => &[LockOn::Db(VersionedDb::HostDb)],
            Guard::Applied => &[
                LockOn::Db(VersionedDb::CrawlDb),
                LockOn::Db(VersionedDb::LinkDb),
            ],
            Guard::Segment(_) => &[LockOn::Segment],
            Guard::Index(_) => &[LockOn::Index],
            Guard::Driver => &[LockOn::Driver],
        }
    }

    /// Takes the guard for stage `stage` on the crawl directory at `root`.
    fn take(self, root: &Path, stage: &str, task: &TaskMode) -> Result<Vec<Lock>> {
        let dir = CrawlDir::new(root);
        Ok(match self {
            Guard::Db(db) => vec![dir.versioned(db).lock(stage)?],
            Guard::CrawlDb(verify) => {
                let lock = dir.versioned(VersionedDb::CrawlDb).lock(stage)?;
                let check = match verify {
                    Verify::Never => false,
                    Verify::Whole => *task == TaskMode::Whole,
                    Verify::WholeAndCommit => true,
                };
                if check {
                    dir.verify_crawldb_for_rewrite()?;
                }
                vec![lock]
            }
            Guard::Applied => {
                let mut locks = vec![dir.versioned(VersionedDb::CrawlDb).lock(stage)?];
                if dir.linkdb().is_dir() {
                    locks.push(dir.versioned(VersionedDb::LinkDb).lock(stage)?);
                }
                locks
            }
            Guard::Segment(seg) => vec![seg.lock(stage)?],
            // The index is a versioned dataset too: its lock, then the repair of a
            // half-done install.
            Guard::Index(index) => {
                vec![crate::store::versioned::VersionedDataset::new(index).lock(stage)?]
            }
            Guard::Driver => vec![Lock::acquire(&dir.crawl_lock(), stage)?],
        })
    }
}

/// A partitioned stage: the work of one task on some partitions of a dataset, and
/// the commit that installs the tasks' output. [`execute`] runs it in each of the
/// three ways a run can be split ([`TaskMode`]), so that a stage says only what it
/// does, never how a run is scheduled (in the spirit of DataFusion's
/// `ExecutionPlan::execute(partition)`; docs/architecture.md, "The stage").
///
/// A stage declares what it locks ([`Guard`]) and hands the executor the function
/// that opens it (reads what its tasks and commit need); the executor takes the lock,
/// verifies what the guard says, then opens the stage and runs it.
pub trait Partitioned {
    /// What a task and a commit return (the stage's report, or its part of it).
    type Out;

    /// The stage's name: its job directories (`_jobs/<name>-..`) and its entry in
    /// the registry ([`crate::cli::COMMANDS`]).
    const NAME: &'static str;

    /// The number of partitions of the dataset the tasks split.
    fn partitions(&self) -> usize;

    /// One task: attempt `attempt` of `job` on partitions `set` (already checked
    /// against [`Partitioned::partitions`]). It writes only through
    /// `job.attempt_writer(..)` (or a pass's) and installs nothing.
    fn task(&mut self, job: &Job, set: &PartitionSet, attempt: &str) -> Result<Self::Out>;

    /// The commit of `job`: installs its chosen attempts ([`Job::choose`]). The
    /// executor removes the job afterwards.
    fn commit(&mut self, job: &Job) -> Result<Self::Out>;

    /// A one-process run's result from its task's and its commit's: the commit's,
    /// unless the stage reports what its task did (fetch, parse).
    fn whole(&mut self, task: Self::Out, commit: Self::Out) -> Self::Out {
        let _ = task;
        commit
    }

    /// A one-process run's result when there is nothing to do (the linkdb with no
    /// new segment): then no job is made and nothing is installed.
    fn up_to_date(&mut self) -> Result<Option<Self::Out>> {
        Ok(None)
    }
}

/// Runs the stage `open` opens as `ctx`'s task flags split the run ([`TaskMode`]):
/// - one process: `guard` taken (and released when the run ends), jobs a killed
///   one-process run of the stage left removed, the stage opened, then one task over
///   every partition (a private job, attempt `0`) and its commit; if either fails,
///   the private job is removed, so nothing is left behind and a rerun starts afresh;
/// - `--job J --partitions P --attempt A`: the stage opened without the guard, then
///   that task alone (`P` resolved and checked against the stage's partitions);
/// - `--job J --commit`: `guard` taken, the stage opened, the commit alone, then the
///   job is removed.
pub fn execute<S: Partitioned>(
    ctx: &StageCtx,
    guard: Guard<'_>,
    open: impl FnOnce() -> Result<S>,
) -> Result<S::Out> {
    let _held = match ctx.task {
        TaskMode::Task { .. } => None,
        _ => Some(ctx.hold(S::NAME, &[guard])?),
    };
    let mut stage = open()?;
    if ctx.task == TaskMode::Whole
        && let Some(out) = stage.up_to_date()?
    {
        return Ok(out);
    }
    let n = stage.partitions();
    match &ctx.task {
        TaskMode::Whole => {
            jobs::remove_stale_local(&ctx.root, S::NAME)?;
            let job = Job::local(&ctx.root, S::NAME)?;
            let run = |stage: &mut S| -> Result<S::Out> {
                let task = stage.task(&job, &PartitionSet::all(n), "0")?;
                let commit = stage.commit(&job)?;
                job.remove()?;
                Ok(stage.whole(task, commit))
            };
            run(&mut stage).inspect_err(|_| {
                let _ = job.remove();
            })
        }
        TaskMode::Task {
            job,
            partitions,
            attempt,
        } => {
            let set = partitions.resolve(n);
            set.check_within(n, S::NAME)?;
            stage.task(&Job::open(&ctx.root, job)?, &set, attempt)
        }
        TaskMode::Commit { job } => {
            let job = Job::open(&ctx.root, job)?;
            let out = stage.commit(&job)?;
            job.remove()?;
            Ok(out)
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
