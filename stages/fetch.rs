//! `fetch`: fetches a segment's fetch list politely and writes crawl_fetch, content and robots.

use std::path::PathBuf;

use clap::Parser;
use trawl::fetch::FetchOpts;
use trawl::stage::StageCtx;

/// Fetch the URLs of a segment.
#[derive(Debug, Parser)]
#[command(
    version,
    name = "fetch",
    about = "Fetch a segment's fetch list (crawl_generate) into crawl_fetch, content and robots",
    long_about = "Reads SEGMENT's crawl_generate and fetches every URL politely: robots.txt \
(fetched once per origin), one request at a time per host with `fetch.delay` seconds between \
requests (raised by Crawl-delay and Retry-After), many hosts in parallel. Writes crawl_fetch \
(exactly one row per fetch-list URL), content (2xx bodies) and robots (what each robots.txt \
said), partitioned by host. Without SEGMENT, fetches the newest segment that has crawl_generate \
but no crawl_fetch. To fetch a segment again, delete its crawl_fetch/, content/ and robots/.

On SIGINT or SIGTERM: no new request is sent, requests in flight get min(fetch.total_timeout, \
5 s) to finish, what was fetched is written (the URLs not attempted are fetch_retry/interrupted \
and stay due), the summary is printed and fetch exits with code 4; a second signal exits at once \
(130 or 143) writing nothing. When no server at all was reached (every host failed to connect or \
resolve), fetch writes the segment as usual, warns and exits with code 5."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// Serve the live status (status.json's figures) as Prometheus text at
    /// http://ADDR/metrics while running; a loopback address (127.0.0.1:9464; port 0
    /// picks one, named in the log).
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<std::net::SocketAddr>,
    #[command(flatten)]
    task: trawl::cli::TaskArgs,
    /// The segment (a path, or a name under <crawl-dir>/segments) [default: newest unfetched].
    segment: Option<PathBuf>,
    /// Seconds between two requests to one host (overrides `fetch.delay`).
    #[arg(long, value_name = "SECS")]
    delay: Option<f64>,
    /// Maximum requests in flight over all hosts (overrides `fetch.max_connections`).
    #[arg(long, value_name = "N")]
    max_connections: Option<usize>,
    /// Stop after this many seconds; unattempted URLs get fetch_retry/time_limit
    /// (overrides `fetch.time_limit`; 0 = no limit).
    #[arg(long, value_name = "SECS")]
    time_limit: Option<f64>,
    /// Maximum decompressed bytes kept per page (overrides `fetch.max_content_bytes`).
    #[arg(long, value_name = "BYTES")]
    max_content_bytes: Option<usize>,
    /// The User-Agent header (overrides `fetch.user_agent`).
    #[arg(long, value_name = "UA")]
    user_agent: Option<String>,
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    trawl::signal::install()?;
    if let Some(addr) = args.metrics_addr {
        trawl::status::serve_metrics(addr)?;
    }
    let mut ctx = StageCtx::from_task_args(&args.common, &args.task)?;
    let f = &mut ctx.config_mut().fetch;
    if let Some(d) = args.delay {
        f.delay = d;
    }
    if let Some(n) = args.max_connections {
        f.max_connections = n;
    }
    if let Some(t) = args.time_limit {
        f.time_limit = t;
    }
    if let Some(b) = args.max_content_bytes {
        f.max_content_bytes = b;
    }
    if let Some(ua) = args.user_agent {
        f.user_agent = ua;
    }
    ctx.validate_flags()?;
    let report = trawl::fetch::run(
        &ctx,
        &FetchOpts {
            segment: args.segment,
        },
    )?;
    ctx.finish(&report)?;
    Ok(())
}
