//! `searchbench`: indexing throughput and query latency.
//!
//! 1. Indexing the parse benchmark's pages: the shared corpus pages (served as
//!    `corpus.web.test` from `<corpora>/pages`, every `source.html` a seed) and the
//!    test web parsebench measures (`--testweb-hosts` hosts of 20 pages, every page a
//!    seed) are crawled through the stage binaries, then `index` runs in a fresh
//!    process: MB/s of main text, pages/s, peak RSS, index bytes per page.
//! 2. An index of `--pages` synthetic pages (`--hosts` hosts; `fakefetch
//!    --text-words`: Zipf text over a 30,000-word vocabulary): inject, generate,
//!    fakefetch, updatedb, linkdb, pagerank, then `index` measured the same way; then
//!    `--queries` queries (one word, two words, phrases, `site:`, a quarter each) run
//!    once to warm up and once timed, one at a time, with the default ranking: p50,
//!    p99 and max latency per kind and overall.
//!
//! The goals (indexing >= 20 MB/s on 2 cores, p99 <= 20 ms) are printed beside the
//! figures; nothing is asserted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use clap::Parser;

use testweb::{Kind, RunningServer, Site, StaticHost, WebSpec};
use trawl::index::search::{Ranking, SearchRequest, Searcher};
use trawl::records::{ParseDataRecord, ParseTextRecord};
use trawl::store::layout::CrawlDir;
use trawl::store::names::SegmentDataset;
use trawl::store::parquet;
use trawl_bench::measure::{self, mb};
use trawl_bench::sitecrawl::{self, Stages};
use trawl_bench::synthtext::{QueryKind, Vocabulary, query_mix};

/// Indexing goal, MB/s of main text.
const GOAL_MBS: f64 = 20.0;
/// Query latency goal, p99 in ms.
const GOAL_P99_MS: f64 = 20.0;

#[derive(Debug, Parser)]
#[command(
    about = "Indexing throughput (MB/s of main text, pages/s, index size) and query latency (p50/p99)",
    long_about = "Crawls the parse benchmark's pages (the shared corpus pages and a test web) through the \
stage binaries and measures the index stage on them; builds a crawl of --pages synthetic pages (fakefetch \
with Zipf text), measures the index stage on it, and times --queries mixed queries (one word, two words, \
phrase, site:) against that index. Prints the goals beside the figures."
)]
struct Args {
    /// Work directory (replaced; removed afterwards unless --keep).
    #[arg(long, default_value = "bench-out/searchbench")]
    dir: PathBuf,
    /// Directory of the stage binaries (default: this binary's directory).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// Test web hosts crawled with the corpus pages (20 pages each; 0 = none).
    #[arg(long, default_value_t = 300)]
    testweb_hosts: usize,
    /// Synthetic pages in the latency index.
    #[arg(long, default_value_t = 100_000)]
    pages: usize,
    /// Hosts of the synthetic pages.
    #[arg(long, default_value_t = 1000)]
    hosts: usize,
    /// Words of main text per synthetic page.
    #[arg(long, default_value_t = 300)]
    words: usize,
    /// Queries timed.
    #[arg(long, default_value_t = 1000)]
    queries: usize,
    /// Results per query.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Run only these parts (comma-separated: corpus, synthetic).
    #[arg(long, value_delimiter = ',', default_value = "corpus,synthetic")]
    parts: Vec<String>,
    /// Keep the work directory.
    #[arg(long)]
    keep: bool,
    /// Index runs per part (the index rebuilt from nothing each time); the median
    /// run is reported, the fastest and slowest beside it.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
}

trawl::global_allocator!();

fn main() -> std::process::ExitCode {
    trawl::cli::finish(run())
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    let bin = sitecrawl::bin_dir(args.bin_dir.as_deref())?;
    sitecrawl::fresh_dir(&args.dir)?;
    let wanted = |p: &str| args.parts.iter().any(|x| x.trim() == p);
    println!(
        "{:<34} {:>8} {:>10} {:>8} {:>10} {:>9} {:>9} {:>12}",
        "indexing", "pages", "main text", "secs", "MB/s", "pages/s", "peak RSS", "bytes/page"
    );
    if wanted("corpus") {
        corpus_part(&args, &bin)?;
    }
    if wanted("synthetic") {
        synthetic_part(&args, &bin)?;
    }
    if !args.keep {
        std::fs::remove_dir_all(&args.dir)
            .with_context(|| format!("removing {}", args.dir.display()))?;
    }
    Ok(())
}

/// Indexable pages of a crawl and the bytes of their main text (the text when no
/// main text was extracted): the newest parse of each URL.
fn indexable_text(root: &Path) -> anyhow::Result<(usize, u64)> {
    let dir = CrawlDir::new(root);
    let mut keep: BTreeMap<String, bool> = BTreeMap::new();
    let mut bytes: BTreeMap<String, u64> = BTreeMap::new();
    for seg in dir.segments()? {
        if seg.has(SegmentDataset::ParseData) {
            for r in
                parquet::read_dataset::<ParseDataRecord>(&seg.dataset(SegmentDataset::ParseData))?
            {
                keep.insert(r.url, r.status == "parse_success" && !r.noindex);
            }
        }
        if seg.has(SegmentDataset::ParseText) {
            for r in
                parquet::read_dataset::<ParseTextRecord>(&seg.dataset(SegmentDataset::ParseText))?
            {
                let n = r.main_text.as_ref().map_or(r.text.len(), String::len);
                bytes.insert(r.url, n as u64);
            }
        }
    }
    let pages: Vec<&String> = keep.iter().filter(|(_, k)| **k).map(|(u, _)| u).collect();
    let total = pages.iter().filter_map(|u| bytes.get(*u)).sum();
    Ok((pages.len(), total))
}

/// Runs the index stage `repeat` times in a fresh process, each time on no index,
/// and prints the median run's line of the table.
fn measure_index(stages: &Stages, name: &str, scratch: &Path, repeat: usize) -> anyhow::Result<()> {
    let (pages, text) = indexable_text(&stages.crawl)?;
    let index = CrawlDir::new(&stages.crawl).index();
    let mut runs = Vec::new();
    for _ in 0..repeat.max(1) {
        if index.exists() {
            std::fs::remove_dir_all(&index)
                .with_context(|| format!("removing {}", index.display()))?;
        }
        runs.push(measure::measure(
            &stages.bin.join("index"),
            &[
                "--crawl-dir".into(),
                stages.crawl.clone().into_os_string(),
                "--config".into(),
                stages.config.clone().into_os_string(),
            ],
            &stages.crawl,
            scratch,
        )?);
    }
    runs.sort_by(|a, b| a.secs.total_cmp(&b.secs));
    let m = &runs[runs.len() / 2];
    let index_bytes = trawl::store::disk::tree_bytes(&index);
    println!(
        "{name:<34} {pages:>8} {:>10} {:>8.2} {:>10.1} {:>9.0} {:>6.0} MiB {:>12.0}",
        mb(text),
        m.secs,
        text as f64 / 1e6 / m.secs,
        pages as f64 / m.secs,
        m.peak_rss_mib,
        index_bytes as f64 / pages.max(1) as f64
    );
    let mbs = |secs: f64| text as f64 / 1e6 / secs;
    println!(
        "{:<34} median of {} runs (fastest {:.1} MB/s, slowest {:.1} MB/s); goal >= {GOAL_MBS} MB/s of main text on 2 cores",
        "",
        runs.len(),
        mbs(runs[0].secs),
        mbs(runs[runs.len() - 1].secs),
    );
    println!("{:<34} {}", "", m.summary());
    Ok(())
}

/// Part 1: the corpus pages and a test web, crawled, then indexed.
fn corpus_part(args: &Args, bin: &Path) -> anyhow::Result<()> {
    let dir = args.dir.join("corpus");
    std::fs::create_dir_all(&dir)?;
    let web = testweb::generate(&WebSpec {
        hosts: args.testweb_hosts.max(1),
        pages_per_host: 20,
        seed_count: 1,
        ..WebSpec::default()
    })?;
    let mut seeds: Vec<String> = if args.testweb_hosts > 0 {
        web.resources()
            .filter(|r| r.status == 200 && matches!(r.kind, Kind::Home | Kind::Page))
            .map(|r| r.url.clone())
            .collect()
    } else {
        Vec::new()
    };
    let mut statics = Vec::new();
    match trawl_bench::corpus::corpora_dir() {
        Some(c) if c.join("pages").is_dir() => {
            let pages = c.join("pages");
            let corpus: Vec<String> = sitecrawl::html_seeds(&pages, "corpus.web.test")?
                .into_iter()
                .filter(|u| u.ends_with("/source.html"))
                .collect();
            println!("(corpus: {} pages from {})", corpus.len(), pages.display());
            seeds.extend(corpus);
            statics.push(StaticHost::new("corpus.web.test", &pages)?);
        }
        _ => println!("(corpus: skipped, the shared corpora were not found)"),
    }
    let server = RunningServer::start_site(
        Site::new(&web)?.with_static(statics)?,
        "127.0.0.1:0".parse()?,
        None,
        None,
    )?;
    let config = dir.join("trawl.toml");
    std::fs::write(&config, sitecrawl::config_toml(server.addr(), 8))?;
    let seeds_file = dir.join("seeds.txt");
    sitecrawl::write_lines(&seeds_file, &seeds)?;
    let stages = Stages {
        bin: bin.to_path_buf(),
        crawl: dir.join("crawl"),
        config,
    };
    // One round: the seeds are every page measured.
    stages.crawl(&seeds_file, 1, false)?;
    server.stop()?;
    measure_index(
        &stages,
        "parse corpus + test web",
        &dir.join("measure"),
        args.repeat,
    )
}

/// Part 2: synthetic pages, indexed, then queried.
fn synthetic_part(args: &Args, bin: &Path) -> anyhow::Result<()> {
    let dir = args.dir.join("synthetic");
    std::fs::create_dir_all(&dir)?;
    let hosts: Vec<String> = (0..args.hosts.max(1))
        .map(|h| format!("h{h}.synth.test"))
        .collect();
    let per_host = args.pages.div_ceil(hosts.len());
    let urls: Vec<String> = (0..args.pages)
        .map(|i| {
            format!(
                "http://{}/p{}.html",
                hosts[i % hosts.len()],
                i / hosts.len()
            )
        })
        .collect();
    let seeds_file = dir.join("seeds.txt");
    sitecrawl::write_lines(&seeds_file, &urls)?;
    let config = dir.join("trawl.toml");
    // Nothing is fetched (fakefetch writes the results), so no address is needed.
    std::fs::write(&config, sitecrawl::config_toml("127.0.0.1:9".parse()?, 8))?;
    let stages = Stages {
        bin: bin.to_path_buf(),
        crawl: dir.join("crawl"),
        config,
    };
    let t = Instant::now();
    stages.run("inject", &[&seeds_file.to_string_lossy()], &[])?;
    let g = stages.run("generate", &[], &[])?;
    let segment = g
        .stdout
        .lines()
        .last()
        .context("generate printed no segment")?
        .trim()
        .to_string();
    let words = args.words.to_string();
    stages.run(
        "fakefetch",
        &[
            "--segment",
            &segment,
            "--outlinks",
            "5",
            "--text-words",
            &words,
        ],
        &[],
    )?;
    for s in ["updatedb", "linkdb", "pagerank"] {
        stages.run(s, &[], &[])?;
    }
    println!(
        "(synthetic crawl: {} pages on {} hosts ({per_host} a host), {} words each, built in {:.1}s)",
        args.pages,
        hosts.len(),
        args.words,
        t.elapsed().as_secs_f64()
    );
    measure_index(
        &stages,
        "synthetic pages",
        &dir.join("measure"),
        args.repeat,
    )?;

    let searcher = Searcher::open(&CrawlDir::new(&stages.crawl).index())?;
    let vocab = Vocabulary::new();
    let queries = query_mix(&vocab, &urls, &hosts, args.words, args.queries);
    let ranking = Ranking::full();
    let run_all = |timed: bool| -> anyhow::Result<Vec<(QueryKind, f64, usize)>> {
        let mut out = Vec::with_capacity(queries.len());
        for (kind, q) in &queries {
            let req = SearchRequest {
                query: q.clone(),
                top: args.top,
                offset: 0,
                ranking,
                facets: false,
            };
            let t = Instant::now();
            let r = searcher
                .search(&req)
                .with_context(|| format!("query {q:?}"))?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            if timed {
                out.push((*kind, ms, r.total));
            }
        }
        Ok(out)
    };
    run_all(false)?;
    let times = run_all(true)?;
    println!();
    println!(
        "{:<34} {:>8} {:>10} {:>8} {:>8} {:>8} {:>12}",
        "query latency (top 10, full ranking)",
        "queries",
        "p50 ms",
        "p99 ms",
        "max ms",
        "mean ms",
        "mean matches"
    );
    let mut kinds: Vec<Option<QueryKind>> = [
        QueryKind::OneWord,
        QueryKind::TwoWords,
        QueryKind::Phrase,
        QueryKind::Site,
    ]
    .into_iter()
    .map(Some)
    .collect();
    kinds.push(None);
    for k in kinds {
        let mut ms: Vec<f64> = times
            .iter()
            .filter(|t| k.is_none_or(|k| t.0 == k))
            .map(|t| t.1)
            .collect();
        let matches: Vec<usize> = times
            .iter()
            .filter(|t| k.is_none_or(|k| t.0 == k))
            .map(|t| t.2)
            .collect();
        ms.sort_by(f64::total_cmp);
        let pct = |p: f64| {
            ms.get(((ms.len() as f64 * p).ceil() as usize).saturating_sub(1))
                .copied()
                .unwrap_or(f64::NAN)
        };
        println!(
            "{:<34} {:>8} {:>10.2} {:>8.2} {:>8.2} {:>8.2} {:>12.0}",
            k.map_or("all", QueryKind::name),
            ms.len(),
            pct(0.5),
            pct(0.99),
            ms.last().copied().unwrap_or(f64::NAN),
            ms.iter().sum::<f64>() / ms.len().max(1) as f64,
            matches.iter().sum::<usize>() as f64 / matches.len().max(1) as f64
        );
    }
    println!("{:<34} goal p99 <= {GOAL_P99_MS} ms over all queries", "");
    Ok(())
}
