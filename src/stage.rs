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

use crate::cli::{CommonArgs, Exit};
use crate::config::Config;
use crate::error::Result;
use crate::store::layout::CrawlDir;
use crate::store::object::{CrawlUri, GcReport, Mirror};

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
    mirror: Option<Arc<Mirror>>,
}

impl StageCtx {
    /// A context for the crawl directory at `root` with configuration `cfg`, started now.
    pub fn new(root: impl Into<PathBuf>, cfg: Config) -> Self {
        StageCtx {
            root: root.into(),
            cfg,
            started: Instant::now(),
            mirror: None,
        }
    }

    /// A binary's context from its common flags: initializes logging, loads the
    /// configuration (`--config`), sizes rayon's pool (`crawl.threads`) and resolves
    /// the crawl directory (`--crawl-dir`, else `crawl.dir`).
    ///
    /// An object-store URI is pulled into its working mirror (`--work-dir`), held
    /// locked until the stage ends, and the ctx's root is the mirror.
    pub fn from_args(common: &CommonArgs) -> Result<Self> {
        let (cfg, root) = common.setup()?;
        match CrawlUri::parse(&root)? {
            CrawlUri::Local(root) => Ok(StageCtx::new(root, cfg)),
            CrawlUri::Object(uri) => {
                let mirror = Mirror::open(&uri, common.work_dir.as_deref(), &stage_name())?;
                let mut ctx = StageCtx::new(mirror.root(), cfg);
                ctx.mirror = Some(Arc::new(mirror));
                Ok(ctx)
            }
        }
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
        CrawlDir::open_existing(&self.root)
    }

    /// The crawl directory, which must exist; a crawldb is not required (stages that
    /// only read or write segments: [`CrawlDir::open_for_segments`]).
    pub fn open_for_segments(&self) -> Result<CrawlDir> {
        CrawlDir::open_for_segments(&self.root)
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
                        format!(
                            "Error: {} did its work, but it was not committed: {e}",
                            R::STAGE
                        ),
                    ));
                }
            }
        }
        crate::cli::summary(R::STAGE, self.started, &report.to_string());
        match report.exit() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// The binary's name (the lock holder and `written_by` of an object-store commit).
fn stage_name() -> String {
    std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "stage".to_string())
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
