//! `bench`: measures wall time and peak RSS of updatedb and generate (and the blake3
//! check of the crawldb's parts every crawldb rewrite starts with) on a crawl directory prepared by `benchgen`.

use std::process::Command;
use std::time::Instant;

use anyhow::Context;
use clap::Parser;

#[derive(Debug, Parser)]
#[command(
    about = "Measure updatedb and generate (wall time, peak RSS) and the crawldb checksum check",
    long_about = "Runs each measured stage in a fresh child process (so peak RSS, read from \
/proc/self/status VmHWM, is that stage's alone) on a crawl directory written by `benchgen`, and \
prints one line per stage: stage, rows, seconds, rows per second (rows written by updatedb, \
rows scanned by generate), peak MiB. verify checks the blake3 of every crawldb part against \
its manifest (what every crawldb rewrite does first) and the last line compares it with \
updatedb's wall time. updatedb applies the benchgen segment; generate then selects --top-n \
URLs with at most --max-per-host per host."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// Run only this stage in this process (used by the parent; `verify`, `updatedb` or `generate`).
    #[arg(long, value_name = "STAGE")]
    stage: Option<String>,
    /// generate: URLs in the fetch list.
    #[arg(long, default_value_t = 1_000_000)]
    top_n: usize,
    /// generate: cap per host.
    #[arg(long, default_value_t = 100)]
    max_per_host: usize,
}

fn peak_rss_mib() -> f64 {
    trawl_bench::measure::vm_hwm_kb("self").map_or(f64::NAN, |kb| kb as f64 / 1024.0)
}

trawl::global_allocator!();

fn main() -> std::process::ExitCode {
    trawl::cli::finish(run())
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    let (cfg, dir) = args.common.setup()?;
    match args.stage.as_deref() {
        Some("updatedb") => {
            let t = Instant::now();
            let ctx = trawl::stage::StageCtx::new(&dir, cfg);
            let r = trawl::crawldb::updatedb::run(&ctx, &Default::default())?;
            let secs = t.elapsed().as_secs_f64();
            println!(
                "updatedb\t{} rows ({} fetched, {} added)\t{:.2}s\t{:.0} rows/s\t{:.0} MiB",
                r.rows,
                r.fetched,
                r.added,
                secs,
                r.rows as f64 / secs,
                peak_rss_mib()
            );
        }
        Some("generate") => {
            let t = Instant::now();
            let mut opts = trawl::crawldb::generate::GenerateOpts::from_config(&cfg);
            opts.top_n = args.top_n;
            opts.max_per_host = args.max_per_host;
            let ctx = trawl::stage::StageCtx::new(&dir, cfg);
            let r = trawl::crawldb::generate::run(&ctx, &opts)?;
            let secs = t.elapsed().as_secs_f64();
            println!(
                "generate\t{} selected of {} scanned\t{:.2}s\t{:.0} rows/s\t{:.0} MiB",
                r.urls.iter().sum::<u64>(),
                r.scanned,
                secs,
                r.scanned as f64 / secs,
                peak_rss_mib()
            );
        }
        Some("verify") => {
            // What every crawldb rewrite does first: blake3 of every part against
            // the manifest (docs/integrity.md).
            let crawl = trawl::store::layout::CrawlDir::new(&dir);
            let m = trawl::store::integrity::read(&crawl.crawldb_current())?
                .context("the crawldb has no manifest (written before manifests?)")?;
            let t = Instant::now();
            crawl.verify_crawldb(trawl::store::integrity::Check::Checksums)?;
            let secs = t.elapsed().as_secs_f64();
            let mb = m.bytes() as f64 / 1e6;
            println!(
                "verify\t{} parts, {:.1} MB ({} rows)\t{:.3}s\t{:.0} MB/s\t{:.0} MiB",
                m.parts.len(),
                mb,
                m.rows(),
                secs,
                mb / secs,
                peak_rss_mib()
            );
        }
        Some(other) => anyhow::bail!("--stage {other}: expected verify, updatedb or generate"),
        None => {
            let exe = std::env::current_exe().context("locating the bench binary")?;
            let mut secs = std::collections::HashMap::new();
            for stage in ["verify", "updatedb", "generate"] {
                let mut c = Command::new(&exe);
                c.arg("--crawl-dir").arg(&dir).arg("--stage").arg(stage);
                c.arg("--top-n").arg(args.top_n.to_string());
                c.arg("--max-per-host").arg(args.max_per_host.to_string());
                if let Some(cfgp) = &args.common.config {
                    c.arg("--config").arg(cfgp);
                }
                c.stderr(std::process::Stdio::inherit());
                let out = c
                    .output()
                    .with_context(|| format!("running bench --stage {stage}"))?;
                anyhow::ensure!(out.status.success(), "bench --stage {stage} failed");
                let text = String::from_utf8_lossy(&out.stdout);
                print!("{text}");
                if let Some(s) = text
                    .split('\t')
                    .nth(2)
                    .and_then(|f| f.trim_end_matches('s').parse::<f64>().ok())
                {
                    secs.insert(stage, s);
                }
            }
            if let (Some(v), Some(u)) = (secs.get("verify"), secs.get("updatedb")) {
                // updatedb hashes the crawldb twice: it verifies the version it reads
                // and seals (hashes) the version it writes, of about the same size.
                println!(
                    "checksums\tverify {v:.3}s = {:.2}% of updatedb's {u:.2}s; hashing in updatedb (verify input + seal output) about {:.2}%",
                    100.0 * v / u,
                    200.0 * v / u
                );
            }
        }
    }
    Ok(())
}
