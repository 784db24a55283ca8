//! `docbench`: document (PDF) extraction against poppler's `pdftotext`: token recall
//! and precision of trawl's text (the words of pdftotext's text found in trawl's, and
//! the other way round, counted with repeats), and MB/s of PDF for both.
//!
//! trawl's side is what `parse` runs: the `docparse` helper, a process per document,
//! with the default budget (1000 pages, 30 s, 1 GiB); pdftotext runs one process per
//! document too, on the same pages (`-l 1000`). A file shipped twice counts once. Real PDFs: `--pdf-dir` (scripts/bench.sh fills it with the PDFs that
//! Debian documentation packages ship: R's manuals, gnuplot, Asymptote, the Debian
//! Reference, the X.Org documents). The goal, printed beside the figures: recall >=
//! 0.95 on text PDFs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::Context;
use clap::Parser;
use trawl::parse::document::{Format, Limits, isolate};

const GOAL_RECALL: f64 = 0.95;

#[derive(Debug, Parser)]
#[command(
    about = "PDF text extraction: token recall against pdftotext, and MB/s",
    long_about = "Extracts every PDF under --pdf-dir with trawl's docparse helper (as parse does) and \
with poppler's pdftotext, and prints per file and in total the token recall and precision of \
trawl's text against pdftotext's, and MB/s of PDF for each. Needs pdftotext (poppler-utils)."
)]
struct Args {
    /// Directory searched (recursively) for *.pdf files.
    #[arg(long, default_value = "bench-out/debian-pdfs")]
    pdf_dir: PathBuf,
    /// The pdftotext binary.
    #[arg(long, default_value = "pdftotext")]
    pdftotext: PathBuf,
    /// Directory of the docparse binary (default: this binary's directory).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
}

trawl::global_allocator!();

fn main() -> std::process::ExitCode {
    trawl::cli::finish(run())
}

fn pdfs(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let p = e?.path();
        if p.is_dir() {
            pdfs(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "pdf") {
            out.push(p);
        }
    }
    Ok(())
}

/// Lowercase words (runs of alphanumeric characters) with their counts.
fn tokens(text: &str) -> HashMap<String, u64> {
    let mut m = HashMap::new();
    for w in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        *m.entry(w.to_lowercase()).or_default() += 1;
    }
    m
}

/// Tokens of `a` also in `b`, counted with repeats (the multiset intersection).
fn common(a: &HashMap<String, u64>, b: &HashMap<String, u64>) -> u64 {
    a.iter()
        .map(|(w, n)| (*n).min(*b.get(w).unwrap_or(&0)))
        .sum()
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    let bin = trawl_bench::sitecrawl::bin_dir(args.bin_dir.as_deref())?;
    let helper = bin.join(isolate::HELPER);
    anyhow::ensure!(
        helper.is_file(),
        "{}: missing; build it with cargo build --release --bins",
        helper.display()
    );
    let mut files = Vec::new();
    if args.pdf_dir.is_dir() {
        pdfs(&args.pdf_dir, &mut files)?;
    }
    files.sort();
    if files.is_empty() {
        println!(
            "(no PDFs under {}: scripts/bench.sh puts Debian's documentation PDFs there)",
            args.pdf_dir.display()
        );
        return Ok(());
    }
    let limits = Limits::default();
    println!(
        "{:<44} {:>9} {:>6} {:>9} {:>8} {:>9} {:>9}",
        "PDF", "KB", "pages", "tokens", "recall", "precision", "ms trawl/poppler"
    );
    let (mut bytes, mut t_trawl, mut t_poppler) = (0u64, 0f64, 0f64);
    let (mut ref_tokens, mut got_tokens, mut hit_ref, mut hit_got) = (0u64, 0u64, 0u64, 0u64);
    let mut failed = Vec::new();
    let mut worst = (1.0f64, String::new());
    let mut seen = std::collections::HashSet::new();
    let mut compared = 0usize;
    for f in &files {
        let data = std::fs::read(f).with_context(|| format!("reading {}", f.display()))?;
        // Packages ship some files twice (docs and texmf trees): count each once.
        if !seen.insert(blake3::hash(&data)) {
            continue;
        }
        let name = f
            .strip_prefix(&args.pdf_dir)
            .unwrap_or(f)
            .display()
            .to_string();
        let t = Instant::now();
        // The same pages on both sides: trawl reads parse.max_document_pages of them.
        let out = Command::new(&args.pdftotext)
            .args(["-q", "-enc", "UTF-8", "-l", &limits.max_pages.to_string()])
            .arg(f)
            .arg("-")
            .output()
            .with_context(|| {
                format!(
                    "running {} (install poppler-utils)",
                    args.pdftotext.display()
                )
            })?;
        let poppler_secs = t.elapsed().as_secs_f64();
        let reference = String::from_utf8_lossy(&out.stdout).into_owned();
        let t = Instant::now();
        let got = isolate::extract_with(&isolate::Helper::at(&helper), Format::Pdf, &data, &limits);
        let trawl_secs = t.elapsed().as_secs_f64();
        let r = tokens(&reference);
        let n_ref: u64 = r.values().sum();
        if n_ref == 0 {
            // An image-only PDF: nothing to compare (and no text for parse either).
            continue;
        }
        compared += 1;
        bytes += data.len() as u64;
        t_trawl += trawl_secs;
        t_poppler += poppler_secs;
        ref_tokens += n_ref;
        let (recall, precision, pages) = match got {
            Ok(x) => {
                let g = tokens(&x.text);
                let n_got: u64 = g.values().sum();
                let (a, b) = (common(&r, &g), common(&g, &r));
                got_tokens += n_got;
                hit_ref += a;
                hit_got += b;
                (
                    a as f64 / n_ref as f64,
                    b as f64 / n_got.max(1) as f64,
                    x.metadata.get("pages_parsed").cloned().unwrap_or_default(),
                )
            }
            Err(e) => {
                failed.push(format!("{name}: {e}"));
                (0.0, 0.0, String::new())
            }
        };
        if recall < worst.0 {
            worst = (recall, name.clone());
        }
        println!(
            "{:<44} {:>9} {:>6} {:>9} {:>8.4} {:>9.4} {:>8.0}/{:.0}",
            short(&name, 44),
            data.len() / 1024,
            pages,
            n_ref,
            recall,
            precision,
            trawl_secs * 1000.0,
            poppler_secs * 1000.0
        );
    }
    let mb = bytes as f64 / 1e6;
    let recall = hit_ref as f64 / ref_tokens.max(1) as f64;
    println!(
        "all: {} PDFs with text, {mb:.1} MB; token recall {recall:.4} (lowest {:.4}, {}), precision {:.4}; \
         trawl {:.2} MB/s ({t_trawl:.1} s), pdftotext {:.2} MB/s ({t_poppler:.1} s); {} failed",
        compared,
        worst.0,
        worst.1,
        hit_got as f64 / got_tokens.max(1) as f64,
        mb / t_trawl.max(1e-9),
        mb / t_poppler.max(1e-9),
        failed.len()
    );
    for f in &failed {
        println!("  failed: {f}");
    }
    println!(
        "goal: token recall >= {GOAL_RECALL} on text PDFs: {}",
        if recall >= GOAL_RECALL {
            "met"
        } else {
            "NOT met"
        }
    );
    Ok(())
}

fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let tail: String = s
            .chars()
            .rev()
            .take(n - 1)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        format!("…{tail}")
    }
}
