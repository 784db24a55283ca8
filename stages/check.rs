//! `check`: one URL fetched and parsed, a robots.txt file, URLs through the filters.

use std::io::BufRead;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use trawl::check::{self, normalize, robots, url};
use trawl::cli::{Exit, exit};

#[derive(Debug, Parser)]
#[command(
    name = "check",
    version,
    about = "Check one URL (fetch and parse), a robots.txt file, or URL normalization and filters",
    long_about = "The single-URL tools of a crawl operator (Nutch's parsechecker, robots and \
normalizer/filter checkers). `check url URL` fetches one URL politely (its robots.txt first, \
then the page after the host's delay) and shows the normalized URL, the robots decision, the \
HTTP exchange, and the page as parse sees it: charset, title, robots meta, canonical, \
signatures, the main text's start, outlinks with anchors. `check robots FILE URL...` decides \
URLs against a robots.txt file. `check normalize URL...` shows each URL normalized and the \
filters' decision. Nothing is written to a crawl directory. --json prints JSON."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// Print JSON (one object; for `normalize`, one per line) instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, Subcommand)]
enum What {
    /// Fetch one URL politely and show the exchange and its parse.
    Url {
        /// The URL.
        url: String,
        /// Fetch even when robots.txt disallows it (the decision is still shown).
        #[arg(long)]
        ignore_robots: bool,
        /// Outlinks listed (all are counted).
        #[arg(long, default_value_t = 20, value_name = "N")]
        outlinks: usize,
        /// Characters of the main text shown.
        #[arg(long, default_value_t = 300, value_name = "N")]
        text_chars: usize,
    },
    /// Decide URLs against a robots.txt file, as fetch would.
    Robots {
        /// The robots.txt file.
        file: PathBuf,
        /// URLs (or paths) to decide; `-` reads them from standard input, one per line.
        #[arg(required = true)]
        urls: Vec<String>,
        /// The agent whose rules apply [default: fetch.robots_agent].
        #[arg(long, value_name = "AGENT")]
        agent: Option<String>,
    },
    /// Show URLs normalized and the [urls] filters' decision, one line each.
    Normalize {
        /// URLs to check; `-` reads them from standard input, one per line.
        #[arg(required = true)]
        urls: Vec<String>,
        /// A seed host for urls.scope = "host" or "domain" (repeatable); without one the
        /// scope is not checked.
        #[arg(long, value_name = "HOST")]
        seed_host: Vec<String>,
    },
}

/// The URLs, with `-` replaced by the lines of standard input.
fn urls(args: Vec<String>) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for a in args {
        if a == "-" {
            for line in std::io::stdin().lock().lines() {
                let line = line?;
                let t = line.trim();
                if !t.is_empty() && !t.starts_with('#') {
                    out.push(t.to_string());
                }
            }
        } else {
            out.push(a);
        }
    }
    Ok(out)
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    trawl::signal::install()?;
    let (cfg, _) = args.common.setup()?;
    let started = std::time::Instant::now();
    let mut out = std::io::stdout().lock();
    match args.what {
        What::Url {
            url: u,
            ignore_robots,
            outlinks,
            text_chars,
        } => {
            let opts = url::UrlCheckOpts {
                url: u,
                ignore_robots,
                outlinks,
                text_chars,
            };
            let r = url::check(&cfg, &opts)?;
            if args.json {
                check::write_json(&mut out, &r)?;
            } else {
                url::print(&mut out, &r)?;
            }
            let what = match (&r.not_fetched, &r.response, &r.error) {
                (Some(why), _, _) => format!("{}: not fetched: {why}", r.input),
                (_, Some(resp), _) => format!(
                    "{}: http {}, {} bytes{}",
                    r.input,
                    resp.status,
                    resp.bytes,
                    r.parse
                        .as_ref()
                        .map_or(String::new(), |p| format!(", {}", p.status))
                ),
                (_, _, Some(e)) => format!("{}: no response: {e}", r.input),
                _ => r.input.clone(),
            };
            trawl::cli::summary("check url", started, &what);
            if r.not_fetched.is_some() || r.error.is_some() {
                return Err(Exit::new(exit::ERROR, "").into());
            }
        }
        What::Robots {
            file,
            urls: u,
            agent,
        } => {
            let agent = agent.unwrap_or_else(|| cfg.fetch.robots_agent.clone());
            let r = robots::check(&file, &agent, &urls(u)?)?;
            if args.json {
                check::write_json(&mut out, &r)?;
            } else {
                robots::print(&mut out, &r)?;
            }
            let allowed = r.urls.iter().filter(|(_, a)| *a).count();
            trawl::cli::summary(
                "check robots",
                started,
                &format!(
                    "{} urls, {allowed} allowed, {} disallowed for {agent:?}",
                    r.urls.len(),
                    r.urls.len() - allowed
                ),
            );
        }
        What::Normalize { urls: u, seed_host } => {
            let d = normalize::check(&cfg, &seed_host, &urls(u)?)?;
            if args.json {
                for x in &d {
                    check::write_json(&mut out, x)?;
                }
            } else {
                normalize::print(&mut out, &d, !seed_host.is_empty())?;
            }
            let accepted = d.iter().filter(|x| x.accepted).count();
            trawl::cli::summary(
                "check normalize",
                started,
                &format!(
                    "{} urls, {accepted} accepted, {} rejected",
                    d.len(),
                    d.len() - accepted
                ),
            );
        }
    }
    Ok(())
}
