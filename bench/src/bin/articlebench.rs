//! `articlebench`: main-text quality (4-gram shingle precision, recall, F1; see
//! `trawl_bench::articles`) of what `parse` writes as `parse_text.main_text`, on:
//! - the public article extraction benchmark of Zyte (Scrapinghub) vendored under
//!   bench/data/article-extraction-benchmark (181 annotated article pages; ids `8`-`f`
//!   held out of tuning, `0`-`7` the tuning half);
//! - WCXB, when `--wcxb DIR` (or `$TRAWL_WCXB`) points at a copy of it (2,008 pages
//!   of 7 types; its `dev` split for tuning, its `test` split held out; articles are
//!   the scored sets, the other types are printed for the non-article rule);
//! - the shared Readability test pages (`<corpora>/pages`, expected.html's visible
//!   text as the truth).
//!
//! Pages go through the same `parse_page` as the parse stage, with the default
//! configuration; parse MB/s is printed too. With `--peers FILE` (what
//! bench/peers/extract.py writes: trafilatura's and readability-lxml's texts of the
//! same pages), the peers are scored beside trawl on every set.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::Parser;
use rayon::prelude::*;
use trawl::config::Config;
use trawl::parse::page::{PageInput, PageOpts, parse_page};
use trawl::urls::UrlPolicy;
use trawl_bench::articles::{self, Counts, Page, Scores, Split};
use trawl_bench::corpus;

/// The goals of issue 20 on the held-out half of the Zyte set.
const GOAL_F1: f64 = 0.97;
const GOAL_PRECISION: f64 = 0.95;

#[derive(Debug, Parser)]
#[command(
    about = "Main-text quality: 4-gram shingle P/R/F1 on the article extraction benchmark, WCXB and the Readability pages"
)]
struct Args {
    /// The vendored Zyte benchmark (html/<id>.html.gz, ground-truth.json).
    #[arg(long, default_value = "bench/data/article-extraction-benchmark")]
    data: PathBuf,
    /// A copy of WCXB (metadata.json, dev/, test/); skipped when not given.
    #[arg(long, env = "TRAWL_WCXB")]
    wcxb: Option<PathBuf>,
    /// A clone of github.com/adbar/trafilatura: its evaluation pages
    /// (tests/evaldata.json, snippets the main text must and must not hold) are
    /// reported as one more tuning set; skipped when not given.
    #[arg(long, env = "TRAWL_TRAFILATURA")]
    trafilatura: Option<PathBuf>,
    /// The peers' texts of the same pages (bench/peers/extract.py), scored beside trawl.
    #[arg(long)]
    peers: Option<PathBuf>,
    /// Print the N worst tuning pages by F1 (never held-out ones: they are not
    /// looked at).
    #[arg(long, default_value_t = 0)]
    worst: usize,
    /// Print the main text and the annotation of this tuning page: a Zyte id prefix
    /// (4 chars or more), `wcxb/<id>` or `readability/<name>`.
    #[arg(long)]
    show: Option<String>,
    /// While tuning: print no held-out figure.
    #[arg(long)]
    tuning: bool,
    /// Write every tuning page's main text, marked as `--show` marks it, to
    /// DIR/<set>_<id>.txt (the held-out pages are not written).
    #[arg(long)]
    dump: Option<PathBuf>,
    /// Write the per-page scores of the tuning pages to this file (key, precision,
    /// recall, F1), to compare two versions page by page.
    #[arg(long)]
    scores: Option<PathBuf>,
}

trawl::global_allocator!();

fn main() -> std::process::ExitCode {
    trawl::cli::finish(run())
}

/// The main text parse writes for `html` at `url`.
fn main_text(html: &[u8], url: &str, opts: &PageOpts, policy: &UrlPolicy) -> String {
    let input = PageInput {
        url,
        content_type: Some("text/html"),
        headers: &[],
        content: html,
        truncated: false,
    };
    parse_page(&input, opts, policy)
        .text
        .main_text
        .unwrap_or_default()
}

/// The extracted text with the lines mostly not annotated marked `+`, then the
/// annotated lines mostly missed marked `-`.
fn diff(got: &str, want: &str) -> String {
    let mut out = String::from("--- main text (`+` lines: mostly not annotated)\n");
    for l in got.lines() {
        let mark = if articles::covered(l, want) < 0.5 {
            "+"
        } else {
            " "
        };
        out.push_str(&format!("{mark} {l}\n"));
    }
    out.push_str("--- annotated lines mostly missed\n");
    for l in want.lines().filter(|l| articles::covered(l, got) < 0.5) {
        out.push_str(&format!("- {l}\n"));
    }
    out
}

/// One scored set: which pages, and whether it is held out.
struct Set {
    name: &'static str,
    held_out: bool,
    pick: fn(&Page) -> bool,
}

fn zyte(p: &Page) -> bool {
    p.key.starts_with("zyte/")
}
fn wcxb_article(p: &Page) -> bool {
    p.key.starts_with("wcxb/") && p.kind == "article"
}

const SETS: &[Set] = &[
    Set {
        name: "Zyte article benchmark, held out (ids 8-f)",
        held_out: true,
        pick: |p| zyte(p) && p.split == Split::HeldOut,
    },
    Set {
        name: "Zyte article benchmark, tuning half (ids 0-7)",
        held_out: false,
        pick: |p| zyte(p) && p.split == Split::Tuning,
    },
    Set {
        name: "WCXB articles, test split (held out)",
        held_out: true,
        pick: |p| wcxb_article(p) && p.split == Split::HeldOut,
    },
    Set {
        name: "WCXB articles, dev split (tuning)",
        held_out: false,
        pick: |p| wcxb_article(p) && p.split == Split::Tuning,
    },
    Set {
        name: "shared Readability pages (expected.html)",
        held_out: false,
        pick: |p| p.key.starts_with("readability/"),
    },
];

fn line(name: &str, s: &Scores) {
    println!(
        "{name:<48} {:>5} {:>9.3} {:>9.3} {:>9.3}",
        s.pages, s.precision, s.recall, s.f1
    );
}

/// The peers' texts: extractor -> page key -> text.
type Peers = Vec<(String, HashMap<String, String>)>;

fn read_peers(path: &std::path::Path) -> anyhow::Result<Peers> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let map: std::collections::BTreeMap<String, HashMap<String, String>> = serde_json::from_str(
        &text,
    )
    .with_context(|| {
        format!(
            "{}: not a JSON object of extractor -> page -> text (bench/peers/extract.py writes it)",
            path.display()
        )
    })?;
    Ok(map.into_iter().collect())
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    trawl::cli::init_logging();
    let cfg = Config::default();
    let opts = PageOpts::from_config(&cfg);
    let policy = UrlPolicy::new(&cfg.urls, &[])?;

    let mut pages = articles::load_zyte(&args.data)?;
    match &args.wcxb {
        Some(dir) => pages.extend(articles::load_wcxb(dir)?),
        None => println!(
            "(WCXB: skipped; clone https://github.com/Murrough-Foley/web-content-extraction-benchmark and pass --wcxb DIR or TRAWL_WCXB=DIR)"
        ),
    }
    match corpus::corpora_dir() {
        Some(dir) => {
            for p in corpus::load_pages(&dir)? {
                pages.push(Page {
                    key: format!("readability/{}", p.name),
                    split: Split::Tuning,
                    kind: "article".into(),
                    url: corpus::PAGE_URL.into(),
                    truth: corpus::visible_text(&p.expected),
                    html: p.source,
                });
            }
        }
        None => println!("(shared Readability pages: skipped, no ../shared/corpora)"),
    }
    if let Some(show) = &args.show {
        let show = if show.contains('/') {
            show.clone()
        } else {
            anyhow::ensure!(show.len() >= 4, "--show needs at least 4 chars of an id");
            format!("zyte/{show}")
        };
        let page = pages
            .iter()
            .find(|p| p.key.starts_with(&show))
            .with_context(|| format!("--show {show}: no such page"))?;
        anyhow::ensure!(
            page.split == Split::Tuning,
            "{} is held out of tuning",
            page.key
        );
        let got = main_text(&page.html, &page.url, &opts, &policy);
        let c = articles::compare(&page.truth, &got);
        let s = articles::scores(&[c]);
        println!(
            "{} ({}, {}): precision {:.3} recall {:.3} F1 {:.3}",
            page.key, page.kind, page.url, s.precision, s.recall, s.f1
        );
        print!("{}", diff(&got, &page.truth));
        return Ok(());
    }
    let peers = match &args.peers {
        Some(p) => read_peers(p)?,
        None => Vec::new(),
    };

    let bytes: usize = pages.iter().map(|p| p.html.len()).sum();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build()?;
    let started = Instant::now();
    let got: Vec<String> = pool.install(|| {
        pages
            .par_iter()
            .map(|p| main_text(&p.html, &p.url, &opts, &policy))
            .collect()
    });
    let secs = started.elapsed().as_secs_f64();
    let counts: Vec<Counts> = pool.install(|| {
        pages
            .par_iter()
            .zip(&got)
            .map(|(p, g)| articles::compare(&p.truth, g))
            .collect()
    });

    println!(
        "{:<48} {:>5} {:>9} {:>9} {:>9}",
        "set / extractor", "pages", "precision", "recall", "F1"
    );
    let mut goal = None;
    for set in SETS {
        if set.held_out && args.tuning {
            continue;
        }
        let idx: Vec<usize> = (0..pages.len())
            .filter(|&i| (set.pick)(&pages[i]))
            .collect();
        if idx.is_empty() {
            continue;
        }
        println!("{}", set.name);
        let ours = articles::scores(&idx.iter().map(|&i| counts[i]).collect::<Vec<_>>());
        line("  trawl", &ours);
        if set.held_out && set.name.starts_with("Zyte") {
            goal = Some(ours);
        }
        for (name, texts) in &peers {
            let c: Vec<Counts> = idx
                .iter()
                .map(|&i| {
                    let p = &pages[i];
                    articles::compare(&p.truth, texts.get(&p.key).map_or("", String::as_str))
                })
                .collect();
            if idx.iter().all(|&i| texts.contains_key(&pages[i].key)) {
                line(&format!("  {name}"), &articles::scores(&c));
            }
        }
        let empty = idx.iter().filter(|&&i| got[i].is_empty()).count();
        if empty > 0 {
            println!("  (trawl: {empty} of these articles got no main text: rule 6 misfiring)");
        }
    }
    // WCXB's other page types: no truth of an article's kind, but what the
    // non-article rule (docs/parse.md, rule 6) does with them.
    let mut kinds: Vec<&str> = pages
        .iter()
        .filter(|p| p.key.starts_with("wcxb/") && p.kind != "article")
        .filter(|p| p.split == Split::Tuning || !args.tuning)
        .map(|p| p.kind.as_str())
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    if !kinds.is_empty() {
        println!(
            "WCXB pages that are not articles{} (annotated with their main content; trawl gives a non-article none):",
            if args.tuning { ", dev split" } else { "" }
        );
        for kind in kinds {
            let idx: Vec<usize> = (0..pages.len())
                .filter(|&i| {
                    let p = &pages[i];
                    p.key.starts_with("wcxb/")
                        && p.kind == kind
                        && (p.split == Split::Tuning || !args.tuning)
                })
                .collect();
            let empty = idx.iter().filter(|&&i| got[i].is_empty()).count();
            let s = articles::scores(&idx.iter().map(|&i| counts[i]).collect::<Vec<_>>());
            println!(
                "  {kind:<14} {:>4} pages, {:>3} without main text; trawl P {:.3} R {:.3} F1 {:.3}",
                idx.len(),
                empty,
                s.precision,
                s.recall,
                s.f1
            );
        }
    }
    if let Some(held) = goal {
        println!(
            "goal on the Zyte held-out half: F1 >= {GOAL_F1}, precision >= {GOAL_PRECISION}: {} (F1 {:.4}, precision {:.4})",
            if held.f1 >= GOAL_F1 && held.precision >= GOAL_PRECISION {
                "met"
            } else {
                "not met"
            },
            held.f1,
            held.precision
        );
    }
    println!(
        "parse of the {} pages (2 threads, whole parse_page): {:.1} MB in {secs:.2} s = {:.1} MB/s",
        pages.len(),
        bytes as f64 / 1e6,
        bytes as f64 / 1e6 / secs
    );
    if let Some(dir) = &args.trafilatura {
        let snippet_pages = articles::load_trafilatura(dir)?;
        let mut c = articles::SnippetCounts::default();
        for n in pool.install(|| {
            snippet_pages
                .par_iter()
                .map(|p| articles::snippets(p, &main_text(&p.html, &p.url, &opts, &policy)))
                .collect::<Vec<_>>()
        }) {
            c.add(n);
        }
        let ratio = |a: usize, b: usize| a as f64 / (a + b).max(1) as f64;
        let (p, r) = (ratio(c.found, c.kept), ratio(c.found, c.missed));
        println!(
            "trafilatura's evaluation pages (tuning; {} pages, snippets): main-text snippets found {} of {}, \
             outside snippets kept {} of {}; precision {p:.3} recall {r:.3} F1 {:.3}",
            snippet_pages.len(),
            c.found,
            c.found + c.missed,
            c.kept,
            c.kept + c.left_out,
            2.0 * p * r / (p + r).max(f64::MIN_POSITIVE)
        );
    }
    let tuning: Vec<usize> = (0..pages.len())
        .filter(|&i| pages[i].split == Split::Tuning && pages[i].kind == "article")
        .collect();
    if let Some(path) = &args.scores {
        let mut out = String::new();
        for &i in &tuning {
            let s = articles::scores(&[counts[i]]);
            out.push_str(&format!(
                "{}\t{:.4}\t{:.4}\t{:.4}\n",
                pages[i].key, s.precision, s.recall, s.f1
            ));
        }
        std::fs::write(path, out).with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(dir) = &args.dump {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for &i in &tuning {
            let path = dir.join(format!("{}.txt", pages[i].key.replace('/', "_")));
            std::fs::write(&path, diff(&got[i], &pages[i].truth))
                .with_context(|| format!("writing {}", path.display()))?;
        }
    }
    if args.worst > 0 {
        let mut worst: Vec<(Scores, &str)> = tuning
            .iter()
            .map(|&i| (articles::scores(&[counts[i]]), pages[i].key.as_str()))
            .collect();
        worst.sort_by(|a, b| a.0.f1.total_cmp(&b.0.f1));
        println!("worst tuning pages (F1, precision, recall, page):");
        for (s, key) in worst.iter().take(args.worst) {
            println!("  {:.3} {:.3} {:.3} {key}", s.f1, s.precision, s.recall);
        }
    }
    Ok(())
}
