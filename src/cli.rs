//! What every stage binary shares: the common flags, logging, progress bars and the
//! one-line summary. Stage binaries parse their own flags, flatten [`CommonArgs`]
//! into them, and call the library.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::config::Config;
use crate::error::Result;

/// Flags every stage takes.
#[derive(Debug, Clone, clap::Args)]
pub struct CommonArgs {
    /// The crawl directory [default: `crawl.dir` from the config, else `crawl`].
    #[arg(long, env = "TRAWL_CRAWL_DIR", value_name = "DIR")]
    pub crawl_dir: Option<PathBuf>,
    /// The TOML configuration file [default: built-in defaults, as in data/trawl.toml].
    #[arg(long, env = "TRAWL_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
}

impl CommonArgs {
    /// Initializes logging and loads the configuration; returns it with the crawl dir.
    pub fn setup(&self) -> Result<(Config, PathBuf)> {
        init_logging();
        let cfg = Config::load(self.config.as_deref())?;
        let dir = self
            .crawl_dir
            .clone()
            .unwrap_or_else(|| cfg.crawl.dir.clone());
        if cfg.crawl.threads > 0 {
            // Ignore the error when a pool already exists (tests calling twice).
            let _ = rayon::ThreadPoolBuilder::new()
                .num_threads(cfg.crawl.threads)
                .build_global();
        }
        Ok((cfg, dir))
    }
}

/// Logs to stderr through `tracing`, filtered by `RUST_LOG` (default `info`).
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

/// A progress bar on stderr when it is a terminal; hidden otherwise.
pub fn progress_bar(len: u64, what: &str) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if !std::io::stderr().is_terminal() {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    }
    pb.set_style(
        ProgressStyle::with_template(&format!(
            "{what} [{{elapsed_precise}}] {{bar:40}} {{pos}}/{{len}} ({{per_sec}}, eta {{eta}}) {{msg}}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb.enable_steady_tick(Duration::from_millis(200));
    pb
}

/// Prints a stage's one-line summary to stderr: `<stage>: <fields> in <secs>s`.
pub fn summary(stage: &str, started: Instant, fields: &str) {
    eprintln!(
        "{stage}: {fields} in {:.2}s",
        started.elapsed().as_secs_f64()
    );
}
