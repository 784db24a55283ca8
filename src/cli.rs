//! What every stage binary shares: the common flags, logging, progress bars and the
//! one-line summary. Stage binaries parse their own flags, flatten [`CommonArgs`]
//! into them, and call the library.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::store::lock::LockOn;
use crate::store::names::{SegmentDataset, VersionedDb};
use crate::store::object::{MirrorNeeds, WholeRead};

/// Exit codes, the same for every stage binary (documented in docs/exit-codes.md).
///
/// Scripts branch on these: `NOTHING_DUE` ends a crawl loop, `LOCKED` means "try again
/// later", `INTERRUPTED` and `UNREACHABLE` mean partial or empty results were written.
pub mod exit {
    /// The stage did its work.
    pub const OK: u8 = 0;
    /// An error: bad input, a failed read or write. The message says what and where.
    pub const ERROR: u8 = 1;
    /// A usage error on the command line (clap's own code).
    pub const USAGE: u8 = 2;
    /// Nothing to do: generate found no due URL (no segment written).
    pub const NOTHING_DUE: u8 = 3;
    /// Stopped by SIGINT/SIGTERM: what was done before the signal is written, the rest
    /// is left for a rerun.
    pub const INTERRUPTED: u8 = 4;
    /// fetch reached no server at all (every host failed to connect or resolve).
    pub const UNREACHABLE: u8 = 5;
    /// A dataset or segment is locked by another live process.
    pub const LOCKED: u8 = 6;
    /// Stored data failed an integrity check (a part missing, altered or corrupt).
    pub const CORRUPT: u8 = 7;
}

/// A command of `trawl`: a stage, a tool, or the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Command {
    /// Its name: `trawl NAME`, and the name of its link to `trawl` (`NAME ARGS`).
    pub name: &'static str,
    /// Its arguments as the README's table of commands shows them (`[SEGMENT]`).
    pub args: &'static str,
    /// One line for `trawl --help`.
    pub about: &'static str,
    /// What it does, for the README's table of commands (generated from the
    /// registry: [`commands_table`]).
    pub doc: &'static str,
    /// The lock files its runs take ([`crate::stage::StageCtx::hold`] refuses any
    /// other); docs/architecture.md's table of locks is generated from them
    /// ([`locks_table`]).
    pub locks: &'static [LockOn],
    /// It changes the crawl (and so keeps `status.json` current); read tools leave
    /// the crawl directory as it was.
    pub writes: bool,
    /// What its runs on an object-store crawl directory need of the working mirror
    /// beyond their partitions' parts (told to the storage layer by
    /// [`crate::stage::StageCtx`], which never learns it from the command's name).
    pub mirror: MirrorNeeds,
}

/// The registry: every command of `trawl`, in the order `trawl --help` lists them.
/// The executable's dispatch (`stages/main.rs`), its help, the links `trawl
/// --install-links` makes, the stages that keep `status.json` ([`Command::writes`])
/// and the round's steps ([`crate::round`], checked by a test) derive from it.
pub const COMMANDS: &[Command] = &[
    Command {
        name: "crawl",
        args: "",
        doc: "the crawl driver (Nutch's `bin/crawl`): inject, then `--rounds` rounds of every stage, stopping when nothing is due, resumable after a kill, `crawl/STOP` to stop (docs/crawl.md)",
        locks: &[LockOn::Driver],
        about: "Crawl: inject the seeds, then N rounds of every stage (Nutch's bin/crawl)",
        writes: true,
        // Its one working mirror serves every step of its rounds: the fetch state
        // of fetch, the index of index.
        mirror: MirrorNeeds {
            reads_whole: &[],
            fetch_state: true,
            shuffles: &[],
            index: true,
        },
    },
    Command {
        name: "inject",
        args: "SEED...",
        doc: "normalizes and filters seed URLs (`URL [<TAB>score=..] [<TAB>fetch_interval=..]`) from files, directories of files or `-` (stdin) into the crawldb, never clobbering known URLs; bad lines are reported by `file:line` and skipped; `--sitemaps FILE` fetches the sitemap URLs listed in FILE and injects their URLs",
        locks: &[LockOn::Db(VersionedDb::CrawlDb)],
        about: "Inject seed URLs into the crawldb",
        writes: true,
        mirror: MirrorNeeds::NONE,
    },
    Command {
        name: "generate",
        args: "",
        doc: "picks due URLs by score (`--top-n`, at most `max_per_host` per host) into a new segment; prints its path",
        locks: &[LockOn::Db(VersionedDb::CrawlDb)],
        about: "Generate fetch lists (segments) of due URLs",
        writes: true,
        mirror: MirrorNeeds::NONE,
    },
    Command {
        name: "fetch",
        args: "[SEGMENT]",
        doc: "fetches the fetch list politely (robots.txt, per-host delay with per-pattern overrides, timeouts, size cap, redirects recorded or followed, a time limit and a throughput floor; HTTPS verified against the system's roots plus `fetch.ca_file`); opt-in JavaScript rendering in headless Chromium for the hosts of `[fetch.render]`, every request of the browser answered by the fetcher through its host's delay and robots.txt, the DOM stored beside the response and parsed (docs/fetch.md)",
        locks: &[LockOn::Segment],
        about: "Fetch a segment's fetch list into crawl_fetch, content and robots",
        writes: true,
        mirror: MirrorNeeds {
            reads_whole: &[],
            fetch_state: true,
            shuffles: &[],
            index: false,
        },
    },
    Command {
        name: "parse",
        args: "[SEGMENT]",
        doc: "extracts text, main text, metadata, outlinks with anchors, signatures, from HTML, plain text, PDF and office documents (DOCX, XLSX, PPTX, ODT/ODS/ODP; recognized by their bytes whatever the server calls them; read by the `docparse` helper under a page, time and memory budget) and RSS/Atom feeds (items become outlinks): docs/parse.md",
        locks: &[LockOn::Segment],
        about: "Parse a fetched segment: text, metadata, outlinks, signatures",
        writes: true,
        mirror: MirrorNeeds::NONE,
    },
    Command {
        name: "updatedb",
        args: "[SEGMENT]",
        doc: "merges fetch and parse results into the crawldb, partition by partition; refuses a fetched but unparsed segment (`--no-parse` applies its fetch statuses only, and a later updatedb after parse merges the rest exactly once)",
        locks: &[LockOn::Db(VersionedDb::CrawlDb)],
        about: "Merge fetched segments into the crawldb",
        writes: true,
        mirror: MirrorNeeds {
            reads_whole: &[WholeRead::UnlessRouted(SegmentDataset::CrawlFetch)],
            fetch_state: false,
            shuffles: &[],
            index: false,
        },
    },
    Command {
        name: "linkdb",
        args: "[SEGMENT]",
        doc: "inverts outlinks into inlinks with anchor texts",
        locks: &[LockOn::Db(VersionedDb::LinkDb)],
        about: "Invert segments' outlinks into the link database",
        writes: true,
        mirror: MirrorNeeds::NONE,
    },
    Command {
        name: "dedup",
        args: "",
        doc: "marks duplicate pages (same signature, or `--near`: SimHash within k bits) `db_duplicate`",
        locks: &[LockOn::Db(VersionedDb::CrawlDb)],
        about: "Mark duplicate pages in the crawldb as db_duplicate",
        writes: true,
        mirror: MirrorNeeds {
            reads_whole: &[],
            fetch_state: false,
            // The keys shuffle goes to the groups tasks; the groups' verdicts (or
            // pairs) to the resolve task and the rewrite tasks.
            shuffles: &[
                ("groups", &["keys"]),
                ("resolve", &["groups"]),
                ("rewrite", &["groups"]),
            ],
            index: false,
        },
    },
    Command {
        name: "hostdb",
        args: "",
        doc: "one row per host: URL counts, fetch successes and failures, consecutive failures, response time, robots.txt; generate leaves failing hosts out for a while (docs/hostdb.md)",
        locks: &[LockOn::Db(VersionedDb::HostDb)],
        about: "Update the host database: URL counts, fetch failures, robots.txt per host",
        writes: true,
        mirror: MirrorNeeds {
            reads_whole: &[WholeRead::Db(VersionedDb::SitemapDb)],
            fetch_state: false,
            shuffles: &[],
            index: false,
        },
    },
    Command {
        name: "pagerank",
        args: "",
        doc: "PageRank over the link graph (every known page); the crawldb's scores become PageRank x N, so they average 1.0 like injected scores and `readdb --top` lists the pages of highest PageRank",
        locks: &[LockOn::Db(VersionedDb::CrawlDb)],
        about: "Compute PageRank over the link graph; write pagerank/ and crawldb scores",
        writes: true,
        mirror: MirrorNeeds {
            reads_whole: &[],
            fetch_state: false,
            // The links go to the graph tasks; an iteration reads its partitions'
            // graph and what the previous iteration sent them; the rewrite tasks
            // the last iteration's ranks (`{k}`: the task's --iteration).
            shuffles: &[
                ("graph", &["links"]),
                ("iterate", &["graph", "rank.{k-1}"]),
                ("rewrite", &["graph", "rank.{k}"]),
            ],
            index: false,
        },
    },
    Command {
        name: "sitemap",
        args: "",
        doc: "sitemaps named by robots.txt (and `/sitemap.xml` with `--probe`): new or due ones fetched politely, their URLs merged into the crawldb (priority -> score, lastmod/changefreq -> schedule); the last step of `make round`",
        locks: &[LockOn::Db(VersionedDb::CrawlDb)],
        about: "Fetch sitemaps and merge their URLs into the crawldb",
        writes: true,
        mirror: MirrorNeeds {
            // A task plans its hosts' sitemaps from every segment's robots.txt records
            // and the whole sitemapdb (its due records, whichever host they are on).
            reads_whole: &[
                WholeRead::Always(SegmentDataset::Robots),
                WholeRead::Db(VersionedDb::SitemapDb),
            ],
            fetch_state: false,
            // The URLs the fetch tasks found go to the merge tasks.
            shuffles: &[("merge", &["fetch"])],
            index: false,
        },
    },
    Command {
        name: "index",
        args: "",
        doc: "the embedded search index (`crawl/index/`, tantivy, one shard per partition searched together): one document per page with title, main text, the rest of the text, inlink anchors, PageRank; incremental (new segments, deletes of gone, duplicate, redirected and noindex pages), crash-safe (a new version installed by one rename) and partition tasks; `--to jsonl FILE` exports it in the Elasticsearch bulk format (docs/search.md)",
        locks: &[LockOn::Index],
        about: "Build or update the search index, or export it as JSON Lines",
        writes: true,
        mirror: MirrorNeeds {
            index: true,
            ..MirrorNeeds::NONE
        },
    },
    Command {
        name: "search",
        args: "QUERY",
        doc: "answers queries over the crawl's index (`--top N`, `--json`; `--serve ADDR`: a search page on loopback) (docs/search.md)",
        locks: &[],
        about: "Search the crawl's index, or serve a search page",
        writes: false,
        mirror: MirrorNeeds {
            index: true,
            ..MirrorNeeds::NONE
        },
    },
    Command {
        name: "readhostdb",
        args: "",
        doc: "one host's row, the failing hosts, or a dump of the hostdb",
        locks: &[],
        about: "Read the host database: one host, the failing hosts, or a dump",
        writes: false,
        mirror: MirrorNeeds::NONE,
    },
    Command {
        name: "report",
        args: "",
        doc: "`crawl/report.html`: the crawl as one offline page of charts",
        locks: &[],
        about: "Write crawl/report.html: rounds, statuses, hosts, response times, sizes, depth",
        writes: false,
        mirror: MirrorNeeds::NONE,
    },
    Command {
        name: "check",
        args: "url|robots|normalize",
        doc: "one URL fetched politely and parsed as a crawl would, a robots.txt file against URLs, URLs through normalization and filters",
        locks: &[],
        about: "Check one URL (fetch and parse), a robots.txt file, or URL normalization",
        writes: false,
        mirror: MirrorNeeds::NONE,
    },
    Command {
        name: "docparse",
        args: "FILE",
        doc: "what parse makes of one document (PDF, office): text, title, metadata, links as JSON; parse runs it per document, in a process of its own",
        locks: &[],
        about: "Extract a document's text, title and links (PDF, office) as JSON, as parse does",
        writes: false,
        mirror: MirrorNeeds::NONE,
    },
    Command {
        name: "readdb",
        args: "",
        doc: "`--stats`, `--dump`, `--url`, `--top N`",
        locks: &[],
        about: "Read the crawldb: stats, one URL, dumps, top scores",
        writes: false,
        mirror: MirrorNeeds::NONE,
    },
    Command {
        name: "readseg",
        args: "",
        doc: "lists segments and dumps their datasets",
        locks: &[],
        about: "Read segments: list them, dump their datasets",
        writes: false,
        mirror: MirrorNeeds::NONE,
    },
    Command {
        name: "readlinkdb",
        args: "",
        doc: "one URL's inlinks, or a dump of the linkdb",
        locks: &[],
        about: "Read the linkdb: one URL's inlinks, or a dump",
        writes: false,
        mirror: MirrorNeeds::NONE,
    },
    Command {
        name: "warc",
        args: "[SEGMENT]",
        doc: "exports a segment's fetched content as WARC/1.1",
        locks: &[LockOn::Segment],
        about: "Export a segment's content as gzipped WARC/1.1 files",
        writes: false,
        mirror: MirrorNeeds::NONE,
    },
    Command {
        name: "mergesegs",
        args: "SEGMENT...",
        doc: "merges applied segments into one (newest fetch of each URL wins; `--filter`, `--normalize`, `--slice N`, `--delete-inputs`)",
        locks: &[
            LockOn::Db(VersionedDb::CrawlDb),
            LockOn::Db(VersionedDb::LinkDb),
            LockOn::Segment,
        ],
        about: "Merge segments into one new segment (newest fetch of each URL wins)",
        writes: false,
        mirror: MirrorNeeds::NONE,
    },
    Command {
        name: "prunesegs",
        args: "",
        doc: "frees disk: deletes `content` and `parse_text` of segments already applied (`--dry-run`, `--older-than DAYS`, `--keep-newest K`, `--whole`)",
        locks: &[
            LockOn::Db(VersionedDb::CrawlDb),
            LockOn::Db(VersionedDb::LinkDb),
            LockOn::Segment,
        ],
        about: "Free disk: delete the content and parse_text of applied segments",
        writes: false,
        mirror: MirrorNeeds::NONE,
    },
    Command {
        name: "repartition",
        args: "",
        doc: "changes a crawl's partition count or key (`--partitions N`, `--partition-key domain`), every dataset rewritten and installed atomically (docs/repartition.md)",
        locks: &[
            LockOn::Db(VersionedDb::CrawlDb),
            LockOn::Db(VersionedDb::LinkDb),
            LockOn::Segment,
        ],
        about: "Change the partition count or key of a crawl",
        writes: false,
        mirror: MirrorNeeds::NONE,
    },
    Command {
        name: "gc",
        args: "",
        doc: "on an object-store crawl directory, deletes objects no version refers to (docs/object-store.md)",
        locks: &[],
        about: "Remove unreferenced objects from an object-store crawl directory",
        writes: false,
        mirror: MirrorNeeds::NONE,
    },
    Command {
        name: "plan",
        args: "round|next|done|steps",
        doc: "the crawl round as JSON for a cluster driver, its next step (from the crawl directory and the round's progress, which `plan done` keeps in the driver's file), or its steps as lines for a script (docs/cluster.md, \"The plan\")",
        locks: &[],
        about: "Print the crawl round as JSON, for a cluster driver (trawl_spark.py)",
        writes: false,
        mirror: MirrorNeeds::NONE,
    },
];

/// The README's table of commands, generated from the registry (its `args` and
/// `doc`), with a last row for the executable itself. A test keeps the README's copy
/// equal to it (`UPDATE_DOCS=1 cargo test --release --test it docs_` rewrites it).
pub fn commands_table() -> String {
    let cell = |t: &str| t.replace('|', "\\|");
    let mut out = String::from("| command | does |\n|---|---|\n");
    for c in COMMANDS {
        let call = if c.args.is_empty() {
            c.name.to_string()
        } else {
            format!("{} {}", c.name, c.args)
        };
        out.push_str(&format!("| `{}` | {} |\n", cell(&call), cell(c.doc)));
    }
    out.push_str(
        "| `trawl COMMAND` | every command above: trawl is one executable, and each command also runs under its own name (`fetch ...`), a link to it that `make build` makes (`trawl --install-links [DIR]`); every command takes `--version` and `--set KEY=VALUE` |\n",
    );
    out
}

/// docs/architecture.md's table of locks, generated from the registry's `locks`:
/// each lock file, the commands that take it, and what it guards against.
pub fn locks_table() -> String {
    let mut out = String::from("| lock file | taken by | for |\n|---|---|---|\n");
    for lock in LockOn::ALL {
        let by: Vec<String> = COMMANDS
            .iter()
            .filter(|c| c.locks.contains(&lock))
            .map(|c| c.name.to_string())
            .collect();
        if by.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            lock.file(),
            by.join(", "),
            lock.purpose()
        ));
    }
    out
}

/// The registry's entry of `name`.
pub fn command(name: &str) -> Option<&'static Command> {
    COMMANDS.iter().find(|c| c.name == name)
}

/// The command this process runs, set once by the executable's dispatch
/// ([`set_command`]).
static RUNNING: std::sync::OnceLock<&'static Command> = std::sync::OnceLock::new();

/// Records the command this process runs (the executable's dispatch calls it once,
/// before the command starts): what a lock holder, an object-store commit or a
/// failed status names, whether the executable was run as `trawl NAME` or as `NAME`.
pub fn set_command(name: &str) {
    if let Some(c) = command(name) {
        let _ = RUNNING.set(c);
    }
}

/// The registry's entry of the command this process runs ([`set_command`]; `None`
/// in a test or a program that runs a stage through the library).
pub fn running() -> Option<&'static Command> {
    RUNNING.get().copied()
}

/// Creates a link named after every command to the executable `exe` in `dir` (a
/// symbolic link where the platform has them, else a hard link, else a copy),
/// replacing what is there atomically; returns how many.
pub fn install_links(exe: &std::path::Path, dir: &std::path::Path) -> Result<usize> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let same_dir = exe
        .parent()
        .is_some_and(|p| p.canonicalize().ok() == dir.canonicalize().ok());
    let target = match (same_dir, exe.file_name()) {
        (true, Some(name)) => PathBuf::from(name),
        _ => exe.to_path_buf(),
    };
    for c in COMMANDS {
        let link = dir.join(format!("{}{}", c.name, std::env::consts::EXE_SUFFIX));
        let tmp = dir.join(format!(".{}.link-{}", c.name, std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        #[cfg(unix)]
        let made = std::os::unix::fs::symlink(&target, &tmp);
        #[cfg(not(unix))]
        let made = std::fs::hard_link(exe, &tmp).or_else(|_| std::fs::copy(exe, &tmp).map(|_| ()));
        made.map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, &link).map_err(|e| Error::io(&link, e))?;
    }
    Ok(COMMANDS.len())
}

/// An outcome that ends a stage with a given exit code after its summary was printed.
/// Returned as an error from a binary's `run` so that [`finish`] exits with `code`
/// and prints `message` (when not empty) as the last line.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Exit {
    /// One of the [`exit`] codes.
    pub code: u8,
    /// The line printed on stderr (may be empty).
    pub message: String,
}

impl Exit {
    /// An outcome with `code` and a message for the user.
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        Exit {
            code,
            message: message.into(),
        }
    }
}

/// The exit code of a library error.
pub fn exit_code(err: &Error) -> u8 {
    match err {
        Error::Locked { .. } => exit::LOCKED,
        Error::Integrity { .. } => exit::CORRUPT,
        Error::Interrupted { .. } => exit::INTERRUPTED,
        _ => exit::ERROR,
    }
}

/// Ends a stage binary: prints the error (with its causes) and maps it to its exit code.
/// Every stage's `main` is `trawl::cli::finish(run())`.
///
/// A stage that installed the signal handlers ([`crate::signal::install`]) and
/// finished its work although a signal arrived (after its last check: the work was
/// complete and installed) still ends with [`exit::INTERRUPTED`], so that a script
/// stops where the user asked it to.
pub fn finish(result: anyhow::Result<()>) -> ExitCode {
    let Err(err) = result else {
        if let Some(signal) = crate::signal::received() {
            eprintln!(
                "interrupted by {signal} after the work was complete: everything was written; exiting with code {}",
                exit::INTERRUPTED
            );
            return ExitCode::from(exit::INTERRUPTED);
        }
        return ExitCode::from(exit::OK);
    };
    if let Some(e) = err.downcast_ref::<Exit>() {
        if !e.message.is_empty() {
            eprintln!("{}", e.message);
        }
        return ExitCode::from(e.code);
    }
    let code = err
        .chain()
        .find_map(|c| c.downcast_ref::<Error>())
        .map_or(exit::ERROR, exit_code);
    if code == exit::INTERRUPTED {
        // Not a failure: say what was left behind, without a backtrace of causes.
        eprintln!("{err}");
        return ExitCode::from(code);
    }
    // The message and its causes on one line, never a backtrace (not even where
    // RUST_BACKTRACE is set: a user error is not a crash).
    let message = format!("{err:#}");
    crate::status::failed(&binary_name(), &message);
    eprintln!("Error: {message}");
    ExitCode::from(code)
}

/// The running command's name (`fetch`, `crawl`, ...): the stage a lock holder, an
/// object-store commit or a failed status names ([`set_command`]; else the
/// executable's name, `stage` when it cannot be told).
pub fn binary_name() -> String {
    if let Some(c) = RUNNING.get() {
        return c.name.to_string();
    }
    std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "stage".to_string())
}

/// Flags every stage takes.
#[derive(Debug, Clone, clap::Args)]
pub struct CommonArgs {
    /// The crawl directory: a local path, or an object-store URI (`s3://BUCKET/PREFIX`,
    /// `gs://..`, `az://..`, `file:///PATH`; docs/object-store.md)
    /// [default: `crawl.dir` from the config, else `crawl`].
    #[arg(long, env = "TRAWL_CRAWL_DIR", value_name = "DIR")]
    pub crawl_dir: Option<PathBuf>,
    /// With an object-store crawl directory: where its local working mirror lives
    /// [default: `<temp dir>/trawl-work`].
    #[arg(long, env = "TRAWL_WORK_DIR", value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// The TOML configuration file [default: built-in defaults, as in data/trawl.toml].
    #[arg(long, env = "TRAWL_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Override one configuration key, over the file (repeatable; like Nutch's -D):
    /// `--set fetch.delay=0.5 --set generate.top_n=1000`. VALUE is a TOML value, or
    /// else a string; see data/trawl.toml and docs/config.md for the keys.
    /// TRAWL_SET holds overrides one per line, used when no --set is given.
    #[arg(
        long = "set",
        env = "TRAWL_SET",
        value_delimiter = '\n',
        value_name = "KEY=VALUE"
    )]
    pub set: Vec<String>,
}

/// The flags of a stage that runs as partition tasks plus a commit (see
/// docs/cluster.md): flattened into every partitioned stage's arguments.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TaskArgs {
    /// Run as part of job ID (one run of this stage by a cluster driver): with
    /// --partitions and --attempt as one task, with --commit as the job's commit.
    #[arg(long, value_name = "ID", help_heading = "Partition tasks")]
    pub job: Option<String>,
    /// The partitions this task works on: `3`, `3-5`, `0,2,7-9`, `all` (needs --job and --attempt).
    #[arg(
        long,
        value_name = "SPEC",
        requires_all = ["job", "attempt"],
        help_heading = "Partition tasks"
    )]
    pub partitions: Option<String>,
    /// This attempt's id (unique per try of a task, e.g. `<stage>-<partition>-<try>`).
    #[arg(
        long,
        value_name = "ID",
        requires_all = ["job", "partitions"],
        help_heading = "Partition tasks"
    )]
    pub attempt: Option<String>,
    /// Install the job's finished attempts (one per partition set) atomically.
    #[arg(
        long,
        requires = "job",
        conflicts_with_all = ["partitions", "attempt"],
        help_heading = "Partition tasks"
    )]
    pub commit: bool,
}

/// `--pass P`: the pass a task of a multi-pass job runs (generate, pagerank, dedup);
/// `P` is the stage's pass enum, whose variants' docs are the values' help. Flattened
/// beside [`TaskArgs`].
#[derive(Debug, Clone, clap::Args)]
pub struct PassArgs<P: clap::ValueEnum + Clone + Send + Sync + 'static> {
    /// The pass a task of a job runs (the stage's passes in order; see docs/cluster.md).
    #[arg(
        long,
        value_enum,
        requires = "attempt",
        help_heading = "Partition tasks"
    )]
    pub pass: Option<P>,
}

impl<P: clap::ValueEnum + Clone + Send + Sync + 'static> PassArgs<P> {
    /// The pass as the command line names it (`histogram`), if given.
    pub fn name(&self) -> Option<String> {
        self.pass
            .as_ref()
            .and_then(|p| p.to_possible_value())
            .map(|v| v.get_name().to_string())
    }
}

impl CommonArgs {
    /// Initializes logging and loads the configuration; returns it with the crawl dir.
    pub fn setup(&self) -> Result<(Config, PathBuf)> {
        init_logging();
        let cfg = Config::load_with(self.config.as_deref(), &self.set)?;
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

/// Logs to stderr through `tracing`, filtered by `RUST_LOG` (default `info`); colour
/// codes only when stderr is a terminal.
pub fn init_logging() {
    // html5ever reports every tree-construction step it simplifies ("foster parenting
    // not implemented") as a warning: thousands a segment of real pages, none of them
    // actionable, so its warnings are off unless RUST_LOG asks for them.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,html5ever=error"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
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
    // fetch keeps a richer status of its own.
    let stage = what.split([' ', ':']).next().unwrap_or(what);
    if stage != "fetch" {
        crate::status::follow(&pb, stage, what);
    }
    pb
}

/// Prints a stage's one-line summary to stderr: `<stage>: <fields> in <secs>s`.
pub fn summary(stage: &str, started: Instant, fields: &str) {
    eprintln!(
        "{stage}: {fields} in {:.2}s",
        started.elapsed().as_secs_f64()
    );
}
