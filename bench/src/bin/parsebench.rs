//! `parsebench`: measures parse throughput (MB/s of HTML through the whole page
//! pipeline: charset, DOM, walk, links, main text, signatures) on the corpus
//! pages (when present), on the test web's own pages (a `testweb` web generated
//! in-process) and on generated link-heavy article pages.

use std::time::Instant;

use clap::Parser;
use rayon::prelude::*;

use testweb::{self, WebSpec};
use trawl::Config;
use trawl::parse::{PageInput, PageOpts, parse_page};
use trawl::urls::UrlPolicy;
use trawl_bench::corpus;

/// Parse throughput benchmark.
#[derive(Debug, Parser)]
#[command(
    about = "Measure parse throughput in MB/s",
    long_about = "Parses the corpus pages (from $TRAWL_CORPORA, ../shared/corpora or /work/shared/corpora, \
when present), every 200 HTML page of a test web (the synthetic web `testweb` serves, generated in-process) \
and generated link-heavy pages through the same per-page pipeline as the parse stage, in parallel \
with rayon, and prints MB/s. Build with --release for meaningful figures."
)]
struct Args {
    /// Passes over each page set.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Generated pages per pass.
    #[arg(long, default_value_t = 2000)]
    generated: usize,
    /// Hosts of the test web whose pages are measured (0 = skip that set).
    #[arg(long, default_value_t = 300)]
    testweb_hosts: usize,
    /// Regular pages per test-web host.
    #[arg(long, default_value_t = 20)]
    testweb_pages: usize,
    /// Measure only these page sets (comma-separated: corpus, testweb, generated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "corpus,testweb,generated"
    )]
    sets: Vec<String>,
    /// Worker threads (0 = one per core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
}

/// A synthetic article page with navigation, paragraphs, links and a footer.
fn generated_page(i: usize) -> String {
    let mut s = format!(
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>Generated page {i}</title>\
         <meta name=description content='page {i}'></head><body><nav><ul>"
    );
    for j in 0..20 {
        s.push_str(&format!("<li><a href='/section/{j}'>Section {j}</a></li>"));
    }
    s.push_str("</ul></nav><article class=post><h1>Heading of the article</h1>");
    for p in 0..30 {
        s.push_str(&format!(
            "<p>Paragraph {p} of page {i}, with some words, commas, and an <a href='/doc/{i}/{p}'>inline link</a> \
             to another document; the quick brown fox jumps over the lazy dog while crawlers fetch pages.</p>"
        ));
    }
    s.push_str("</article><footer><p>Copyright footer</p><a href='http://other.test/'>Elsewhere</a></footer></body></html>");
    s
}

/// A page to parse: URL, Content-Type, body.
type Page = (String, &'static str, Vec<u8>);

/// CPU time used so far by all threads of this process (from
/// `/proc/self/task/*/schedstat`, nanoseconds), when the system exposes it.
/// Unlike wall time it barely changes when other processes compete for the
/// cores, so it shows what the parser costs on a busy machine.
fn process_cpu_ns() -> Option<u64> {
    let mut total = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

fn bench(name: &str, pages: &[Page], rounds: usize, opts: &PageOpts, policy: &UrlPolicy) {
    let bytes: usize = pages.iter().map(|(_, _, b)| b.len()).sum();
    let started = Instant::now();
    let cpu_start = process_cpu_ns();
    let mut links = 0usize;
    for _ in 0..rounds {
        links += pages
            .par_iter()
            .map(|(url, content_type, body)| {
                let input = PageInput {
                    url,
                    content_type: Some(content_type),
                    headers: &[],
                    content: body,
                    truncated: false,
                };
                parse_page(&input, opts, policy).data.outlinks.len()
            })
            .sum::<usize>();
    }
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    let cpu_secs = cpu_start
        .zip(process_cpu_ns())
        .map(|(a, b)| (b.saturating_sub(a) as f64 / 1e9).max(1e-9));
    let mb = (bytes * rounds) as f64 / 1e6;
    println!(
        "{name}: {} pages x {rounds} rounds, {:.1} MB in {:.2}s = {:.1} MB/s ({:.0} pages/s, {} outlinks)",
        pages.len(),
        mb,
        secs,
        mb / secs,
        (pages.len() * rounds) as f64 / secs,
        links
    );
    if let Some(cpu) = cpu_secs {
        let threads = rayon::current_num_threads();
        println!(
            "  {name}: {cpu:.2} CPU-s = {:.1} MB per CPU-second ({:.1} MB/s with {threads} threads all on free cores)",
            mb / cpu,
            mb / cpu * threads as f64
        );
    }
}

trawl::global_allocator!();

fn main() -> std::process::ExitCode {
    trawl::cli::finish(run())
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    trawl::cli::init_logging();
    if args.threads > 0 {
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(args.threads)
            .build_global();
    }
    let cfg = Config::default();
    let opts = PageOpts::from_config(&cfg);
    let policy = UrlPolicy::new(&cfg.urls, &[])?;
    println!(
        "threads: {}{}",
        rayon::current_num_threads(),
        if cfg!(debug_assertions) {
            " (debug build: use --release)"
        } else {
            ""
        }
    );
    let wanted = |set: &str| args.sets.iter().any(|s| s.trim() == set);
    for set in &args.sets {
        if !["corpus", "testweb", "generated"].contains(&set.trim()) {
            anyhow::bail!("--sets: unknown page set {set:?} (use corpus, testweb, generated)");
        }
    }
    match corpus::corpora_dir().filter(|_| wanted("corpus")) {
        Some(dir) => {
            let pages: Vec<Page> = corpus::load_pages(&dir)?
                .into_iter()
                .map(|p| (corpus::PAGE_URL.to_string(), "text/html", p.source))
                .collect();
            bench("corpus", &pages, args.rounds, &opts, &policy);
        }
        None if wanted("corpus") => println!("corpus: skipped (corpus not found)"),
        None => {}
    }
    if args.testweb_hosts > 0 && wanted("testweb") {
        let web = testweb::generate(&WebSpec {
            hosts: args.testweb_hosts,
            pages_per_host: args.testweb_pages,
            ..WebSpec::default()
        })?;
        let pages: Vec<Page> = web
            .resources()
            .filter(|r| r.status == 200 && r.content_type.starts_with("text/html"))
            .map(|r| (r.url.clone(), r.content_type, r.body.clone()))
            .collect();
        bench("testweb", &pages, args.rounds, &opts, &policy);
    }
    if !wanted("generated") {
        return Ok(());
    }
    let generated: Vec<Page> = (0..args.generated)
        .map(|i| {
            (
                format!("http://gen{}.test/page/{i}", i % 50),
                "text/html",
                generated_page(i).into_bytes(),
            )
        })
        .collect();
    bench("generated", &generated, args.rounds, &opts, &policy);
    Ok(())
}
