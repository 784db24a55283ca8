//! `renderbench`: pages/s of JavaScript rendering (`[fetch.render]`) through the real
//! `fetch` binary, beside the same fetch without rendering and beside the plain way
//! to render with the same browser (`chromium --headless --dump-dom`, a process per
//! page).
//!
//! The test web (served in-process on loopback) has `--hosts` generated sites of
//! `--pages` pages and the scripted hosts (pages whose catalogue and text scripts
//! write from XHR data and a third-party script; the never-ending `/busy.html` left
//! out). Every page is a seed; each variant injects, generates one fetch list of all
//! of them and times `fetch` (Chromium's start included). Delay 0: the figures are
//! the renderer's, not politeness'.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::Context;
use clap::Parser;
use testweb::{RunningServer, WebSpec};
use trawl_bench::sitecrawl::{self, Stages};

#[derive(Debug, Parser)]
#[command(
    about = "Rendered pages/s: fetch with [fetch.render] against fetch without, and chromium --dump-dom",
    long_about = "Serves the test web (generated sites plus the scripted hosts) on loopback, \
then runs the real fetch binary on a fetch list of every page: without rendering, and rendering \
every page in headless Chromium with 1, 2 and 4 tabs; then renders a sample of the same pages \
with `chromium --headless --dump-dom`, one process per page. Prints pages/s of each. Needs \
Chromium (make chromium)."
)]
struct Args {
    /// Generated hosts.
    #[arg(long, default_value_t = 4)]
    hosts: usize,
    /// Pages per generated host.
    #[arg(long, default_value_t = 40)]
    pages: usize,
    /// Pages rendered with `chromium --dump-dom` (a process each).
    #[arg(long, default_value_t = 20)]
    dump_dom_pages: usize,
    /// Work directory (removed and created again).
    #[arg(long, default_value = "bench-out/renderbench")]
    dir: PathBuf,
    /// Directory of the stage binaries (default: this binary's directory).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
}

trawl::global_allocator!();

fn main() -> std::process::ExitCode {
    trawl::cli::finish(run())
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    trawl::cli::init_logging();
    let Some(chromium) = trawl::net::browser::chromium_path(Path::new("")) else {
        println!("renderbench: skipped: no Chromium (make chromium installs Debian's package)");
        return Ok(());
    };
    let bin = sitecrawl::bin_dir(args.bin_dir.as_deref())?;
    sitecrawl::fresh_dir(&args.dir)?;
    let web = testweb::generate(&WebSpec {
        hosts: args.hosts,
        pages_per_host: args.pages,
        seed_count: 0,
        scripted: true,
        ..WebSpec::default()
    })?;
    let server = RunningServer::start(&web, "127.0.0.1:0".parse()?, None)?;
    let addr = server.addr();
    let mut seeds = Vec::new();
    for host in &web.hosts {
        for r in host.resources.values() {
            let page = matches!(r.kind, testweb::Kind::Home | testweb::Kind::Page)
                && r.status == 200
                && r.path != testweb::scripted::BUSY.0
                && host.robots.allowed("trawl", &r.path);
            if page {
                seeds.push(r.url.clone());
            }
        }
    }
    seeds.sort();
    let seeds_file = args.dir.join("seeds.txt");
    sitecrawl::write_lines(&seeds_file, &seeds)?;
    println!(
        "{} pages ({} generated hosts x {} pages and the scripted hosts), delay 0, Chromium {}",
        seeds.len(),
        args.hosts,
        args.pages,
        chromium.display()
    );
    println!(
        "{:<34} {:>6} {:>9} {:>8} {:>9}",
        "variant", "pages", "rendered", "secs", "pages/s"
    );
    let variants: [(&str, Option<(usize, f64)>); 4] = [
        ("fetch, no rendering", None),
        ("fetch + render, 1 tab, settle 0", Some((1, 0.0))),
        ("fetch + render, 2 tabs, settle 0", Some((2, 0.0))),
        ("fetch + render, 4 tabs, settle 0", Some((4, 0.0))),
    ];
    for (i, (name, render)) in variants.iter().enumerate() {
        let dir = args.dir.join(format!("v{i}"));
        sitecrawl::fresh_dir(&dir)?;
        let mut toml = sitecrawl::config_toml(addr, 2);
        if let Some((tabs, settle)) = render {
            toml.push_str(&format!(
                "\n[fetch.render]\nhosts = [\"*\"]\nblock_hosts = [\"{}\"]\nmax_pages = {tabs}\nsettle_time = {settle}\n",
                testweb::scripted::ADS_HOST
            ));
        }
        let config = dir.join("trawl.toml");
        std::fs::write(&config, toml)?;
        let stages = Stages {
            bin: bin.clone(),
            crawl: dir.join("crawl"),
            config,
        };
        stages.run("inject", &[seeds_file.to_str().unwrap_or_default()], &[])?;
        stages.run("generate", &[], &[])?;
        let f = stages.run("fetch", &[], &[])?;
        let pages = figure(&f.summary, " pages,").unwrap_or(0);
        let rendered = figure(&f.summary, "; rendered ").unwrap_or(0);
        println!(
            "{name:<34} {pages:>6} {rendered:>9} {:>8.2} {:>9.1}",
            f.secs,
            pages as f64 / f.secs
        );
    }
    let sample: Vec<&String> = seeds.iter().take(args.dump_dom_pages).collect();
    let profile = args.dir.join("dump-dom-profile");
    let started = Instant::now();
    let mut ok = 0usize;
    for url in &sample {
        let out = Command::new(&chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--disable-dev-shm-usage",
                "--dump-dom",
            ])
            .arg(format!(
                "--host-resolver-rules=MAP *.web.test {addr}, MAP * ~NOTFOUND"
            ))
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(url.as_str())
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .with_context(|| format!("running {}", chromium.display()))?;
        if out.status.success() && !out.stdout.is_empty() {
            ok += 1;
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{:<34} {:>6} {:>9} {:>8.2} {:>9.1}",
        "chromium --dump-dom, a process each",
        sample.len(),
        ok,
        secs,
        sample.len() as f64 / secs
    );
    server.stop()?;
    Ok(())
}

/// The number right after `label` in a summary line (`"; rendered 12 (..."` → 12),
/// or right before it (`"300 pages,"` → 300).
fn figure(line: &str, label: &str) -> Option<u64> {
    let at = line.find(label)?;
    let after = &line[at + label.len()..];
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    if !digits.is_empty() {
        return digits.parse().ok();
    }
    let before: String = line[..at]
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect();
    before.chars().rev().collect::<String>().parse().ok()
}
