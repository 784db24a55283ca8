//! Crawling a site of the test web through the stage binaries, for the search
//! benchmarks: the configuration (every host of the test web on one loopback
//! address, every other host unresolvable), seeds, rounds of generate, fetch,
//! parse, updatedb and linkdb until nothing is due, then pagerank and index; each
//! stage a fresh process of the binaries in `bin`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};

/// The stage binaries and the crawl they work on.
#[derive(Debug, Clone)]
pub struct Stages {
    /// Directory of the stage binaries (`target/release`).
    pub bin: PathBuf,
    /// The crawl directory.
    pub crawl: PathBuf,
    /// The configuration file.
    pub config: PathBuf,
}

/// What one stage run printed.
#[derive(Debug, Clone)]
pub struct StageRun {
    /// Exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Last line of standard error (the summary line).
    pub summary: String,
    /// Wall time, seconds.
    pub secs: f64,
}

/// What [`Stages::crawl`] did.
#[derive(Debug, Clone, Default)]
pub struct CrawlSummary {
    /// Rounds run (generate found URLs due).
    pub rounds: usize,
    /// Summary lines of every stage run, in order.
    pub summaries: Vec<String>,
}

impl Stages {
    /// Runs `stage args...` with `--crawl-dir` and `--config`; exit codes other than
    /// 0 and those in `ok` are errors carrying its standard error.
    pub fn run(&self, stage: &str, args: &[&str], ok: &[i32]) -> anyhow::Result<StageRun> {
        let exe = self.bin.join(stage);
        anyhow::ensure!(
            exe.is_file(),
            "{}: no such binary: build the stages first (cargo build --release --bins)",
            exe.display()
        );
        let started = Instant::now();
        let out = Command::new(&exe)
            .arg("--crawl-dir")
            .arg(&self.crawl)
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .env_remove("TRAWL_CRAWL_DIR")
            .env_remove("TRAWL_CONFIG")
            .output()
            .with_context(|| format!("running {}", exe.display()))?;
        let secs = started.elapsed().as_secs_f64();
        let code = out.status.code().unwrap_or(-1);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if code != 0 && !ok.contains(&code) {
            bail!("{stage} {args:?} exited with {code}:\n{stderr}");
        }
        Ok(StageRun {
            code,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            summary: stderr.lines().last().unwrap_or("").to_string(),
            secs,
        })
    }

    /// Injects `seeds` (a file), runs rounds (generate, fetch, parse, updatedb,
    /// linkdb) until generate finds nothing due or `max_rounds` ran, then pagerank
    /// and, when `index` is set, the index stage.
    pub fn crawl(
        &self,
        seeds: &Path,
        max_rounds: usize,
        index: bool,
    ) -> anyhow::Result<CrawlSummary> {
        let mut s = CrawlSummary::default();
        let seeds = seeds.to_string_lossy();
        s.summaries
            .push(self.run("inject", &[seeds.as_ref()], &[])?.summary);
        for _ in 0..max_rounds {
            let nothing_due = i32::from(trawl::cli::exit::NOTHING_DUE);
            let g = self.run("generate", &[], &[nothing_due])?;
            s.summaries.push(g.summary);
            if g.code == nothing_due {
                break;
            }
            s.rounds += 1;
            for stage in ["fetch", "parse", "updatedb", "linkdb"] {
                s.summaries.push(self.run(stage, &[], &[])?.summary);
            }
        }
        s.summaries.push(self.run("pagerank", &[], &[])?.summary);
        if index {
            s.summaries.push(self.run("index", &[], &[])?.summary);
        }
        Ok(s)
    }
}

/// A real site (a directory of HTML files) served by the test web as `host` and
/// crawled by the stage binaries in `bin` into `dir/crawl` ([`crawl_site`]).
#[derive(Debug)]
pub struct SiteCrawl {
    /// The stages, the crawl and its configuration.
    pub stages: Stages,
    /// The site's HTML files, the seeds.
    pub seeds: usize,
    /// What the crawl ran.
    pub summary: CrawlSummary,
    /// Requests the server answered, and those answered 200.
    pub requests: u64,
    /// Requests answered 200.
    pub ok: usize,
}

/// Serves the directory `site` as `http://HOST/` on a loopback test web (with one
/// small generated host beside it), crawls it into `dir/crawl` with the stage
/// binaries in `bin` ([`config_toml`]; every HTML file a seed; at most `rounds`
/// rounds, then pagerank and index), and stops the server. `dir` is replaced.
pub fn crawl_site(
    site: &Path,
    host: &str,
    dir: &Path,
    bin: PathBuf,
    rounds: usize,
) -> anyhow::Result<SiteCrawl> {
    fresh_dir(dir)?;
    let web = testweb::generate(&testweb::WebSpec {
        hosts: 1,
        pages_per_host: 2,
        seed_count: 1,
        ..testweb::WebSpec::default()
    })?;
    let log = dir.join("requests.jsonl");
    let server = testweb::RunningServer::start_site(
        testweb::Site::new(&web)?.with_static([testweb::StaticHost::new(host, site)?])?,
        "127.0.0.1:0".parse()?,
        Some(&log),
        None,
    )?;
    let config = dir.join("trawl.toml");
    std::fs::write(&config, config_toml(server.addr(), 4))?;
    let seeds = html_seeds(site, host)?;
    let seeds_file = dir.join("seeds.txt");
    write_lines(&seeds_file, &seeds)?;
    let stages = Stages {
        bin,
        crawl: dir.join("crawl"),
        config,
    };
    let summary = stages.crawl(&seeds_file, rounds, true);
    let requests = server.stop()?;
    let summary = summary?;
    let ok = testweb::read_log(&log)?
        .iter()
        .filter(|l| l.status == 200)
        .count();
    Ok(SiteCrawl {
        stages,
        seeds: seeds.len(),
        summary,
        requests,
        ok,
    })
}

/// A configuration for crawling the test web served on `addr`: every `*.web.test`
/// host mapped to it and every other host unresolvable (nothing leaves the
/// machine), the crawl kept to the seeds' hosts, no politeness delay (loopback),
/// no cap per host in a fetch list; everything else (the linkdb's links within a
/// site among them) as a user's default configuration has it.
pub fn config_toml(addr: std::net::SocketAddr, partitions: usize) -> String {
    format!(
        "[crawl]\npartitions = {partitions}\n\n\
         [urls]\nscope = \"host\"\n\n\
         [generate]\ntop_n = 1000000\nmax_per_host = 0\n\n\
         [fetch]\ndelay = 0.0\nper_host_connections = 4\nmax_host_exceptions = 0\n\n\
         [fetch.resolve]\n\"{}\" = \"{addr}\"\n\"*\" = \"{}\"\n",
        testweb::RESOLVE_PATTERN,
        trawl::net::resolve::NXDOMAIN,
    )
}

/// The URLs of every `*.html` file under `root` on `http://HOST/`, sorted.
pub fn html_seeds(root: &Path, host: &str) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "html")
                && let Ok(rel) = p.strip_prefix(root)
            {
                let rel: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.push(format!("http://{host}/{}", rel.join("/")));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The directory of the stage binaries: `arg`, else the running binary's directory.
pub fn bin_dir(arg: Option<&Path>) -> anyhow::Result<PathBuf> {
    match arg {
        Some(b) => Ok(b.to_path_buf()),
        None => Ok(std::env::current_exe()?
            .parent()
            .context("locating the binaries")?
            .to_path_buf()),
    }
}

/// Removes `dir` if it exists and creates it empty.
pub fn fresh_dir(dir: &Path) -> anyhow::Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}

/// Writes `lines` to `path`, one a line.
pub fn write_lines(path: &Path, lines: &[String]) -> anyhow::Result<()> {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
