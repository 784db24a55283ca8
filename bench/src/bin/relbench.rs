//! `relbench`: the relevance test set. Serves The Rust Programming Language book
//! (shipped with the Rust toolchain) as `book.web.test` on the test web, crawls it
//! through the stage binaries, indexes it, takes the pages' section headings as
//! queries, tunes the ranking weights on half of them and reports MRR@10 and
//! nDCG@10 of BM25, BM25F and the full ranking on both halves (see
//! `trawl_bench::relevance`).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::Parser;

use trawl::index::search::{Ranking, Searcher};
use trawl::store::layout::CrawlDir;
use trawl_bench::relevance::{self, Metrics, Query};
use trawl_bench::sitecrawl;

/// The host the book is served as.
const BOOK_HOST: &str = "book.web.test";

#[derive(Debug, Parser)]
#[command(
    about = "Relevance of the search ranking on a crawled real site (MRR, nDCG@10; tuning)",
    long_about = "Serves The Rust Programming Language book the Rust toolchain ships \
($(rustc --print sysroot)/share/doc/rust/html/book, or --site) as book.web.test on a loopback \
test web, crawls it with the stage binaries (every HTML file a seed; rounds until nothing is due; \
linkdb with internal links; pagerank; index), takes the h2/h3 headings of every indexable page as \
queries (the page they head is the relevant answer; headings of several pages are dropped), splits \
them by blake3 into a tuning and a held-out half, grid-searches the ranking weights on the tuning \
half and prints MRR@10 and nDCG@10 on both halves for BM25, BM25F and the full ranking (the title \
field weighted 0 throughout). Prints a message and exits 0 when the book is not installed."
)]
struct Args {
    /// The site's directory (default: the book in the Rust toolchain's documentation).
    #[arg(long)]
    site: Option<PathBuf>,
    /// Work directory (crawl, config, seeds, request log); replaced.
    #[arg(long, default_value = "bench-out/relbench")]
    dir: PathBuf,
    /// Directory of the stage binaries (default: this binary's directory).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// Most crawl rounds.
    #[arg(long, default_value_t = 4)]
    rounds: usize,
    /// Keep the work directory afterwards.
    #[arg(long)]
    keep: bool,
    /// No tuning: BM25 against the shipped `Ranking::full()` (and it without anchors)
    /// on every query, for a site held out of the tuning (minutes less on a big site).
    #[arg(long)]
    no_tune: bool,
    /// Also score natural queries written for the site (`bench/queries/*.tsv`:
    /// a query, a tab, the pages that answer it), the title weighted as shipped.
    #[arg(long, value_name = "FILE")]
    queries: Option<PathBuf>,
    /// The PageRank weight of the extra "full, PageRank W" row of the anchor-text,
    /// natural and (with --no-tune) heading tables.
    #[arg(long, value_name = "W", default_value_t = BOOK_PAGERANK)]
    pagerank: f32,
}

/// The PageRank weight the book's tuning chose (docs/search.md): the default of the
/// `--pagerank W` row scored beside the shipped ranking (which weighs PageRank 0.5).
const BOOK_PAGERANK: f32 = 1.25;

/// The book in the toolchain's documentation, or why there is none.
fn book_dir() -> Result<PathBuf, String> {
    let out = std::process::Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("rustc not found ({e})"))?;
    let root = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let book = root.join("share/doc/rust/html/book");
    if book.join("index.html").is_file() {
        Ok(book)
    } else {
        Err(format!(
            "{} has no index.html (install the rust-docs component: rustup component add rust-docs)",
            book.display()
        ))
    }
}

trawl::global_allocator!();

fn main() -> std::process::ExitCode {
    trawl::cli::finish(run())
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    let site = match args.site.clone().map(Ok).unwrap_or_else(book_dir) {
        Ok(s) => s,
        Err(why) => {
            println!("relbench: skipped: no site to crawl: {why}");
            return Ok(());
        }
    };
    let bin = sitecrawl::bin_dir(args.bin_dir.as_deref())?;
    let started = Instant::now();
    println!(
        "site: {} as http://{BOOK_HOST}/ (every HTML file a seed)",
        site.display()
    );
    let done = sitecrawl::crawl_site(&site, BOOK_HOST, &args.dir, bin, args.rounds)?;
    let (stages, crawl) = (&done.stages, &done.summary);
    println!(
        "crawl: {} seeds, {} rounds, {} requests ({} answered 200) in {:.1}s",
        done.seeds,
        crawl.rounds,
        done.requests,
        done.ok,
        started.elapsed().as_secs_f64()
    );
    for s in &crawl.summaries {
        println!("  {s}");
    }

    let set = relevance::heading_queries(&stages.crawl)?;
    let (tuning, held_out) = relevance::split(&set.queries);
    println!(
        "queries: {} h2/h3 headings of {} indexable pages; {} found on several pages dropped; \
         {} queries on {} pages: {} tuning, {} held out",
        set.headings,
        set.pages,
        set.shared,
        set.queries.len(),
        set.pages_with_queries,
        tuning.len(),
        held_out.len()
    );
    anyhow::ensure!(
        !tuning.is_empty() && !held_out.is_empty(),
        "no queries: did the crawl parse the book's pages?"
    );
    let index = CrawlDir::new(&stages.crawl).index();
    let searcher = Searcher::open(&index)?;
    if args.no_tune {
        let all: Vec<&Query> = set.queries.iter().collect();
        let full = Ranking::full();
        table(
            &searcher,
            &all,
            TitleWeight::Zero,
            &format!("all {} queries, nothing tuned on this site", all.len()),
            "full vs BM25",
            &[
                (
                    "full without anchors",
                    relevance::with(&full, "anchors", 0.0),
                ),
                (
                    "full without pagerank",
                    relevance::with(&full, "pagerank", 0.0),
                ),
                (
                    &format!("full, PageRank {}", args.pagerank),
                    relevance::with(&full, "pagerank", args.pagerank),
                ),
            ],
        )?;
        anchor_text(&searcher, &stages.crawl, args.pagerank)?;
        if let Some(file) = &args.queries {
            natural(&searcher, file, &site, args.pagerank)?;
        }
        drop(searcher);
        if !args.keep {
            std::fs::remove_dir_all(&args.dir)
                .with_context(|| format!("removing {}", args.dir.display()))?;
        }
        println!("relbench: done in {:.1}s", started.elapsed().as_secs_f64());
        return Ok(());
    }

    let t = Instant::now();
    let tuned = relevance::tune(&searcher, &tuning)?;
    let evaluated = tuned.bm25.evaluated + tuned.bm25f.evaluated + tuned.full.evaluated;
    println!(
        "tuning: {evaluated} rankings x {} queries in {:.1}s",
        tuning.len(),
        t.elapsed().as_secs_f64()
    );

    println!();
    println!(
        "{:<28} {:>9} {:>9}   {:>9} {:>9}   {:>6}",
        "ranking (title weight 0)", "tune MRR", "nDCG@10", "held MRR", "nDCG@10", "P@1"
    );
    let row = |name: &str, r: &Ranking| -> anyhow::Result<(Metrics, Metrics)> {
        let a = relevance::evaluate(&searcher, &tuning, r)?;
        let b = relevance::evaluate(&searcher, &held_out, r)?;
        println!(
            "{name:<28} {:>9.4} {:>9.4}   {:>9.4} {:>9.4}   {:>6.3}",
            a.mrr, a.ndcg, b.mrr, b.ndcg, b.p1
        );
        Ok((a, b))
    };
    // BM25 alone has no weight to tune: tuned.bm25 is Ranking::bm25().
    let (_, bm25) = row("BM25 (Ranking::bm25)", &tuned.bm25.ranking)?;
    let (_, full_default) = row("full (Ranking::full)", &Ranking::full())?;
    let (_, bm25f) = row("BM25F (+anchors, url), tuned", &tuned.bm25f.ranking)?;
    let (_, full) = row("full (+priors), tuned", &tuned.full.ranking)?;
    println!();
    println!("ablation of the tuned full ranking on the held-out half (one weight set to 0):");
    for name in ["anchors", "url", "pagerank", "inlinks", "depth"] {
        if relevance::get(&tuned.full.ranking, name) == 0.0 {
            println!("  {name:<9} already 0 in the tuned ranking");
            continue;
        }
        let m = relevance::evaluate(
            &searcher,
            &held_out,
            &relevance::with(&tuned.full.ranking, name, 0.0),
        )?;
        println!(
            "  {name:<9} MRR {:.4} ({:+.4}), nDCG@10 {:.4} ({:+.4})",
            m.mrr,
            m.mrr - full.mrr,
            m.ndcg,
            m.ndcg - full.ndcg
        );
    }
    println!();
    println!("tuned weights:");
    println!("  BM25   {}", relevance::describe(&tuned.bm25.ranking));
    println!("  BM25F  {}", relevance::describe(&tuned.bm25f.ranking));
    println!("  full   {}", relevance::describe(&tuned.full.ranking));
    println!(
        "  as Ranking::full(): {}",
        relevance::as_rust(&tuned.full.ranking)
    );
    let verdict = |a: &Metrics, b: &Metrics| {
        format!(
            "MRR {:+.1}%, nDCG@10 {:+.1}%",
            100.0 * (a.mrr - b.mrr) / b.mrr.max(1e-9),
            100.0 * (a.ndcg - b.ndcg) / b.ndcg.max(1e-9)
        )
    };
    println!();
    println!(
        "held-out: full tuned vs BM25: {} -> {}",
        verdict(&full, &bm25),
        if full.mrr > bm25.mrr && full.ndcg > bm25.ndcg {
            "the full ranking beats BM25 alone"
        } else {
            "the full ranking does NOT beat BM25 alone (see the ablation for the signal that fails)"
        }
    );
    println!(
        "held-out: BM25F tuned vs BM25: {}; full tuned vs BM25F tuned: {}",
        verdict(&bm25f, &bm25),
        verdict(&full, &bm25f)
    );
    println!(
        "held-out: defaults: full vs BM25: {}",
        verdict(&full_default, &bm25)
    );
    print_examples(&searcher, &held_out, &tuned.full.ranking)?;
    anchor_text(&searcher, &stages.crawl, args.pagerank)?;
    drop(searcher);
    if !args.keep {
        std::fs::remove_dir_all(&args.dir)
            .with_context(|| format!("removing {}", args.dir.display()))?;
    }
    println!(
        "relbench: done in {:.1}s{}",
        started.elapsed().as_secs_f64(),
        if args.keep {
            format!(" (kept {})", args.dir.display())
        } else {
            String::new()
        }
    );
    Ok(())
}

/// How a table weighs the title: heading and anchor queries are often their page's
/// title, so its title is left out; natural queries count it as shipped.
#[derive(Clone, Copy)]
enum TitleWeight {
    Zero,
    AsShipped,
}

/// Prints BM25 alone, the shipped ranking and then `variants` on `queries` (a row
/// each: MRR, nDCG@10, P@1) under a header naming `what`, and the shipped ranking's
/// gain over BM25 after `gain`.
fn table(
    searcher: &Searcher,
    queries: &[&Query],
    title: TitleWeight,
    what: &str,
    gain: &str,
    variants: &[(&str, Ranking)],
) -> anyhow::Result<()> {
    println!();
    let weighted = match title {
        TitleWeight::Zero => "ranking (title weight 0)",
        TitleWeight::AsShipped => "ranking (title as shipped)",
    };
    println!(
        "{weighted:<34} {:>9} {:>9} {:>6}   ({what})",
        "MRR", "nDCG@10", "P@1"
    );
    let base = [
        ("BM25 (Ranking::bm25)", Ranking::bm25()),
        ("full (Ranking::full)", Ranking::full()),
    ];
    let mut rows = Vec::new();
    for (name, r) in base.iter().chain(variants) {
        let m = match title {
            TitleWeight::Zero => relevance::evaluate(searcher, queries, r)?,
            TitleWeight::AsShipped => relevance::evaluate_as_is(searcher, queries, r)?,
        };
        println!("{name:<34} {:>9.4} {:>9.4} {:>6.3}", m.mrr, m.ndcg, m.p1);
        rows.push(m);
    }
    println!(
        "{gain}: MRR {:+.1}%, nDCG@10 {:+.1}%",
        100.0 * (rows[1].mrr - rows[0].mrr) / rows[0].mrr.max(1e-9),
        100.0 * (rows[1].ndcg - rows[0].ndcg) / rows[0].ndcg.max(1e-9)
    );
    Ok(())
}

/// The anchor-text queries of the crawl at `crawl` ([`relevance::anchor_queries`]):
/// BM25 against the shipped ranking, without its anchors and with PageRank
/// `pagerank`, the title weighted 0 as for headings.
fn anchor_text(searcher: &Searcher, crawl: &std::path::Path, pagerank: f32) -> anyhow::Result<()> {
    let set = relevance::anchor_queries(crawl)?;
    let all: Vec<&Query> = set.queries.iter().collect();
    println!();
    println!(
        "anchor texts: {} distinct texts of the site's links to its {} indexable pages (template links left out); {} naming several pages dropped; {} queries on {} pages",
        set.headings,
        set.pages,
        set.shared,
        all.len(),
        set.pages_with_queries
    );
    if all.is_empty() {
        return Ok(());
    }
    let full = Ranking::full();
    table(
        searcher,
        &all,
        TitleWeight::Zero,
        "anchor-text queries, nothing tuned on them",
        "anchor-text queries, full vs BM25",
        &[
            (
                "full without anchors",
                relevance::with(&full, "anchors", 0.0),
            ),
            (
                &format!("full, PageRank {pagerank}"),
                relevance::with(&full, "pagerank", pagerank),
            ),
        ],
    )?;
    Ok(())
}

/// The natural queries of `file` on the site at `site`: BM25 against the shipped
/// ranking (its title weight included), with each signal left out, and the queries
/// the shipped ranking misses.
fn natural(
    searcher: &Searcher,
    file: &std::path::Path,
    site: &std::path::Path,
    pagerank: f32,
) -> anyhow::Result<()> {
    let queries = relevance::natural_queries(file, site, BOOK_HOST)?;
    let all: Vec<&Query> = queries.iter().collect();
    let full = Ranking::full();
    table(
        searcher,
        &all,
        TitleWeight::AsShipped,
        &format!(
            "{} natural queries of {}, nothing tuned on them",
            all.len(),
            file.display()
        ),
        "natural queries, full vs BM25",
        &[
            (
                "full without anchors",
                relevance::with(&full, "anchors", 0.0),
            ),
            ("full without title", relevance::with(&full, "title", 0.0)),
            (
                "full, title weighted 2",
                relevance::with(&full, "title", 2.0),
            ),
            ("full without url", relevance::with(&full, "url", 0.0)),
            (
                &format!("full, PageRank {pagerank}"),
                relevance::with(&full, "pagerank", pagerank),
            ),
        ],
    )?;
    let mut missed = 0;
    for q in &all {
        let req = trawl::index::search::SearchRequest {
            query: q.text.clone(),
            top: 3,
            offset: 0,
            ranking: full,
            facets: false,
        };
        let hits = searcher.search(&req)?.hits;
        if !hits.iter().any(|h| q.relevant.contains(&h.url)) {
            missed += 1;
            println!(
                "  not in the top 3: {:?} (wanted {}; got {})",
                q.text,
                q.relevant.join(" or "),
                hits.iter()
                    .map(|h| h.url.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    println!(
        "natural queries missing their page in the top 3: {missed} of {}",
        all.len()
    );
    Ok(())
}

/// A few held-out queries the tuned ranking misses, to show what fails.
fn print_examples(searcher: &Searcher, queries: &[&Query], r: &Ranking) -> anyhow::Result<()> {
    let mut misses = Vec::new();
    for q in queries {
        let req = trawl::index::search::SearchRequest {
            query: q.text.clone(),
            top: relevance::DEPTH,
            offset: 0,
            ranking: relevance::with(r, "title", 0.0),
            facets: false,
        };
        let hits = searcher.search(&req)?.hits;
        if hits.first().is_some_and(|h| !q.relevant.contains(&h.url)) {
            misses.push((q, hits.first().map(|h| h.url.clone()).unwrap_or_default()));
        }
    }
    println!(
        "held-out queries whose first result is another page: {} of {}; e.g.",
        misses.len(),
        queries.len()
    );
    for (q, got) in misses.iter().take(5) {
        println!(
            "  {:?}: wanted {}, first {}",
            q.text,
            q.relevant.join(" or "),
            got
        );
    }
    Ok(())
}
