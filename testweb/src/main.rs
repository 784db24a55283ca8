//! `testweb`: generate, describe and serve the local synthetic test web.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use testweb::server::serve_until_signal;
use testweb::{Site, StaticHost, TestCa, WebSpec, generate};
use trawl::cli;

/// Generate, describe and serve the local test web.
#[derive(Debug, Parser)]
#[command(
    about = "Generate, describe and serve the local synthetic test web",
    long_about = "The test web is a deterministic synthetic web of hosts site{i}.web.test \
(pages, links, robots.txt, redirects, copies, 404s) served on loopback. The same \
generator flags always give the same web. `serve` routes on the Host header, so a \
crawler reaches every host through one address (fetch.resolve); `sitemap` writes the \
exact description tests compare against; `seeds` writes the seed list for inject."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Serve the web until SIGTERM/SIGINT.
    Serve(ServeArgs),
    /// Write the site map JSON.
    Sitemap(OutArgs),
    /// Write the seed URLs, one per line.
    Seeds(OutArgs),
}

/// The generator parameters.
#[derive(Debug, Args)]
struct SpecArgs {
    /// PRNG seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Number of hosts (site0.web.test, site1.web.test, ...).
    #[arg(long, default_value_t = 5)]
    hosts: usize,
    /// Regular pages per host (home page included).
    #[arg(long, default_value_t = 20)]
    pages: usize,
    /// Number of seeds (home pages of the first hosts).
    #[arg(long = "seed-count", default_value_t = 2)]
    seed_count: usize,
    /// Fewest random links per regular page.
    #[arg(long, default_value_t = 4)]
    min_links: usize,
    /// Most random links per regular page.
    #[arg(long, default_value_t = 10)]
    max_links: usize,
    /// Add the hostile hosts (slow, endless, failing, looping, oversized responses,
    /// robots.txt variants) and their home pages to the seeds.
    #[arg(long)]
    hostile: bool,
    /// Round of the web: from 1 on, some pages change, vanish (404/410) or redirect.
    #[arg(long, default_value_t = 0)]
    generation: u32,
    /// Add the sitemap hosts (XML, gzipped, index, text, oversized and malformed
    /// sitemaps; pages only sitemaps name) and their home pages to the seeds.
    #[arg(long)]
    sitemaps: bool,
    /// Add the document host (PDFs with text and links, a PDF served as text/html,
    /// broken, huge, slow and bomb PDFs) and its home page to the seeds.
    #[arg(long)]
    documents: bool,
    /// Add the scripted hosts (pages whose links and text only scripts write, a
    /// third-party script host, an ad host, a tracker under /private/) and the two
    /// application home pages to the seeds.
    #[arg(long)]
    scripted: bool,
}

impl SpecArgs {
    fn spec(&self) -> WebSpec {
        WebSpec {
            seed: self.seed,
            hosts: self.hosts,
            pages_per_host: self.pages,
            seed_count: self.seed_count,
            min_links: self.min_links,
            max_links: self.max_links,
            hostile: self.hostile,
            generation: self.generation,
            sitemaps: self.sitemaps,
            documents: self.documents,
            scripted: self.scripted,
        }
    }
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Address to listen on (loopback only; port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    addr: SocketAddr,
    /// Log every request as a JSON line to this file.
    #[arg(long)]
    log: Option<PathBuf>,
    /// Write the bound ip:port here (atomically) once connections are accepted.
    #[arg(long)]
    addr_file: Option<PathBuf>,
    /// Also serve HTTPS on the same address: a throw-away CA is made at start-up and
    /// every host name gets a certificate it signs (untrusted.web.test gets one from an
    /// unpublished CA). Each connection is TLS or plain HTTP by its first byte.
    #[arg(long)]
    tls: bool,
    /// With --tls: write the CA certificate (PEM) here, atomically, before the
    /// --addr-file (point fetch.ca_file at it).
    #[arg(long, requires = "tls")]
    ca_out: Option<PathBuf>,
    /// Also serve HOST from the directory DIR (repeatable): files by path, a
    /// directory's index.html, content types by extension, 404 otherwise, every
    /// request logged. E.g. --static book.web.test=$(rustc --print sysroot)/share/doc/rust/html/book
    #[arg(long = "static", value_name = "HOST=DIR")]
    statics: Vec<StaticHost>,
    #[command(flatten)]
    spec: SpecArgs,
}

#[derive(Debug, Args)]
struct OutArgs {
    /// Output file.
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    spec: SpecArgs,
}

trawl::global_allocator!();

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // The causes on one line, no backtrace: every error says what to do.
            eprintln!("testweb: error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    cli::init_logging();
    let started = Instant::now();
    match Cli::parse().cmd {
        Cmd::Serve(a) => run_serve(a, started),
        Cmd::Sitemap(a) => {
            let web = generate(&a.spec.spec())?;
            let map = web.site_map();
            map.save(&a.out)?;
            cli::summary(
                "testweb sitemap",
                started,
                &format!(
                    "{} hosts, {} urls -> {}",
                    map.hosts.len(),
                    map.urls.len(),
                    a.out.display()
                ),
            );
            Ok(())
        }
        Cmd::Seeds(a) => {
            let web = generate(&a.spec.spec())?;
            let mut text = web.seeds.join("\n");
            text.push('\n');
            trawl::store::parquet::write_atomic(&a.out, text.as_bytes())?;
            cli::summary(
                "testweb seeds",
                started,
                &format!("{} seeds -> {}", web.seeds.len(), a.out.display()),
            );
            Ok(())
        }
    }
}

fn run_serve(a: ServeArgs, started: Instant) -> Result<()> {
    let web = generate(&a.spec.spec())?;
    let resources = web.resources().count();
    let tls = if a.tls {
        let ca = TestCa::generate()?;
        if let Some(out) = &a.ca_out {
            trawl::store::parquet::write_atomic(out, ca.ca_pem().as_bytes())?;
        }
        Some(Arc::new(ca))
    } else {
        None
    };
    let statics = a.statics.len();
    let site = Site::new(&web)?.with_static(a.statics)?;
    let served = serve_until_signal(
        site,
        a.addr,
        a.log.as_deref(),
        a.addr_file.as_deref(),
        tls,
        |bound| {
            println!("{bound}");
            tracing::info!(
                "serving {} hosts ({resources} resources) and {statics} static hosts on {bound}{}",
                web.hosts.len(),
                if a.tls { " (http and https)" } else { "" }
            );
        },
    )?;
    cli::summary("testweb serve", started, &format!("{served} requests"));
    Ok(())
}
