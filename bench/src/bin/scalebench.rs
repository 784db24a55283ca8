//! `scalebench`: the crawl at scale (issue 15), each stage a fresh process: inject N
//! seed URLs, generate, a synthetic fetch and parse result, updatedb, linkdb, then
//! pagerank and dedup `--near` each in one process and as partition tasks; wall time,
//! peak RSS and disk per stage, bytes per URL, and inject and generate against DuckDB
//! doing the same jobs in the same run.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use clap::Parser;

use trawl::store::disk::{dataset_bytes, dataset_rows, tree_bytes};
use trawl::store::layout::CrawlDir;
use trawl_bench::measure::{Measured, mb, measure};

#[derive(Debug, Parser)]
#[command(
    about = "The crawl at scale: inject, generate, synthetic fetch, updatedb, linkdb, pagerank (wall, peak RSS, disk), against DuckDB",
    long_about = "Writes a seed file of --urls URLs over urls/100 hosts \
(http://hI.example.com/p/J.html) under --dir, then runs each stage binary (from this \
binary's directory) in a fresh process on --dir/crawl: inject, generate --top-n G \
--max-per-host 100 (G = --generate, default min(1M, urls/10)), fakefetch (every URL \
fetched, --outlinks new links a page), updatedb, linkdb, then pagerank and dedup --near, each in \
one process and as a job of partition tasks (pagerank: links, graph, iterate until the check \
stops, rewrite; dedup: keys, groups, resolve, rewrite; one task per partition, one after \
another; the largest task's peak RSS), which must rank the same graph and decide the same. Per stage: wall \
time, peak RSS (GNU time, else VmHWM sampled), the disk it needed above what was \
there (sampled every 50 ms) and what it left. Then bytes per URL of the crawldb and \
per fetched URL of the segment. With --python (a Python with duckdb), inject and \
generate are also done by DuckDB with 2 threads (scripts/bench_duckdb.py) and \
compared: `inject N  trawl Xs Y MiB  duckdb Xs Y MiB  ratio R` (R = trawl's time / \
DuckDB's)."
)]
struct Args {
    /// Work directory (seed file, crawl/, DuckDB output); its crawl is replaced.
    #[arg(long)]
    dir: PathBuf,
    /// Seed URLs to inject.
    #[arg(long, default_value_t = 1_000_000)]
    urls: u64,
    /// URLs to generate (and fetch) [default: min(1000000, urls / 10)].
    #[arg(long)]
    generate: Option<u64>,
    /// generate's cap per host.
    #[arg(long, default_value_t = 100)]
    max_per_host: u64,
    /// New outlinks per fetched page.
    #[arg(long, default_value_t = 5)]
    outlinks: usize,
    /// Configuration file passed to every stage.
    #[arg(long)]
    config: Option<PathBuf>,
    /// A Python with duckdb: also run inject and generate with DuckDB and compare.
    #[arg(long)]
    python: Option<PathBuf>,
    /// The DuckDB side (run by --python).
    #[arg(long, default_value = "scripts/bench_duckdb.py")]
    duckdb_script: PathBuf,
    /// Also run the whole pipeline again as partition tasks over this many partition
    /// sets (in --dir/crawl-tasks: inject, generate, updatedb, linkdb, pagerank and
    /// dedup as jobs of tasks one after another, each task a fresh process, the
    /// driver-side steps too); 0: not.
    #[arg(long, default_value_t = 0)]
    tasks: usize,
}

/// One row of the stage table.
struct Row {
    stage: &'static str,
    what: String,
    m: Measured,
}

trawl::global_allocator!();

fn main() -> std::process::ExitCode {
    trawl::cli::finish(run())
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    trawl::cli::init_logging();
    let bin = std::env::current_exe()
        .context("locating scalebench")?
        .parent()
        .map(Path::to_path_buf)
        .context("the directory of scalebench")?;
    let n = args.urls;
    let top = args.generate.unwrap_or((n / 10).clamp(1, 1_000_000));
    let crawl = args.dir.join("crawl");
    let scratch = args.dir.join("out");
    if crawl.exists() {
        std::fs::remove_dir_all(&crawl).with_context(|| format!("removing {}", crawl.display()))?;
    }
    std::fs::create_dir_all(&args.dir)?;
    let seeds = args.dir.join("seeds.txt");
    let t = Instant::now();
    let seed_bytes = trawl_bench::benchgen::write_seeds(&seeds, n, (n / 100).max(1))?;
    println!(
        "seeds\t{n} URLs over {} hosts, {} ({:.1} bytes a line), written in {:.2}s",
        (n / 100).max(1),
        mb(seed_bytes),
        seed_bytes as f64 / n.max(1) as f64,
        t.elapsed().as_secs_f64()
    );

    let stage = |name: &str, extra: &[OsString]| -> anyhow::Result<Measured> {
        let mut a: Vec<OsString> = vec!["--crawl-dir".into(), crawl.clone().into()];
        if let Some(c) = &args.config {
            a.push("--config".into());
            a.push(c.clone().into());
        }
        a.extend(extra.iter().cloned());
        measure(&bin.join(name), &a, &crawl, &scratch.join(name))
    };
    let mut rows = Vec::new();

    let m = stage("inject", &[seeds.clone().into()])?;
    let injected = dataset_rows(&CrawlDir::new(&crawl).crawldb_current())?;
    let inject_duck = duckdb(
        &args,
        &[
            "inject".into(),
            seeds.clone().into(),
            args.dir.join("duckdb-inject.parquet").into(),
        ],
    )?;
    compare(&format!("inject {n}"), &m, inject_duck.as_ref());
    rows.push(Row {
        stage: "inject",
        what: format!("{n} seeds -> {injected} URLs"),
        m,
    });

    let current = CrawlDir::new(&crawl).crawldb_current();
    let gen_args: Vec<OsString> = vec![
        "--top-n".into(),
        top.to_string().into(),
        "--max-per-host".into(),
        args.max_per_host.to_string().into(),
    ];
    let gen_duck = duckdb(
        &args,
        &[
            "generate".into(),
            current.join("*.parquet").into(),
            args.dir.join("duckdb-generate.parquet").into(),
            top.to_string().into(),
            args.max_per_host.to_string().into(),
        ],
    )?;
    let m = stage("generate", &gen_args)?;
    let segment = PathBuf::from(
        m.stdout
            .trim()
            .lines()
            .last()
            .context("generate printed no segment")?,
    );
    compare(
        &format!("generate {top} of {injected}"),
        &m,
        gen_duck.as_ref(),
    );
    rows.push(Row {
        stage: "generate",
        what: format!("top {top}, <= {} per host", args.max_per_host),
        m,
    });

    let m = stage(
        "fakefetch",
        &[
            "--segment".into(),
            segment.clone().into(),
            "--outlinks".into(),
            args.outlinks.to_string().into(),
        ],
    )?;
    rows.push(Row {
        stage: "(fetch+parse)",
        what: format!("synthetic: {top} pages x {} new links", args.outlinks),
        m,
    });
    let m = stage("updatedb", &[])?;
    rows.push(Row {
        stage: "updatedb",
        what: format!("{} URLs after", dataset_rows(&current)?),
        m,
    });
    let m = stage("linkdb", &[])?;
    rows.push(Row {
        stage: "linkdb",
        what: format!(
            "{} inlinks",
            dataset_rows(&CrawlDir::new(&crawl).linkdb_current())?
        ),
        m,
    });
    let m = stage("pagerank", &[])?;
    rows.push(Row {
        stage: "pagerank",
        what: m
            .summary()
            .split(": ")
            .nth(1)
            .unwrap_or("")
            .split(", ")
            .take(2)
            .collect::<Vec<_>>()
            .join(", "),
        m,
    });
    let one_pagerank = pagerank_counts(&rows[rows.len() - 1].m);
    let parts = CrawlDir::new(&crawl).crawldb_meta()?.partitions;
    let sets: Vec<String> = (0..parts).map(|i| i.to_string()).collect();
    // The same pagerank as a job of partition tasks (links, graph, the iteration with
    // the check in the driver, rewrite), one task per partition run one after another:
    // the same graph, iterations and scores.
    {
        let job = "scalebench-pagerank";
        let with = |flags: &[&str]| -> Vec<OsString> {
            let mut a: Vec<OsString> = vec!["--job".into(), job.into()];
            a.extend(flags.iter().map(|f| OsString::from(*f)));
            a
        };
        let pass = |flags: &[&str]| -> anyhow::Result<Vec<Measured>> {
            sets.iter()
                .map(|set| {
                    let mut a = with(flags);
                    for x in ["--partitions", set.as_str(), "--attempt", "1"] {
                        a.push(x.into());
                    }
                    stage("pagerank", &a)
                })
                .collect()
        };
        let mut passes: Vec<(String, Vec<Measured>)> = Vec::new();
        for p in ["links", "graph"] {
            passes.push((format!("--pass {p}"), pass(&["--pass", p])?));
        }
        let (iterate, checks, k) = iterate_until_stopped(
            |ks| pass(&["--pass", "iterate", "--iteration", ks]),
            |ks| stage("pagerank", &with(&["--check", "--iteration", ks])),
        )?;
        let iterate: Vec<Measured> = iterate.into_iter().flatten().collect();
        let ks = k.to_string();
        passes.push((format!("--pass iterate: {} iterations", k + 1), iterate));
        passes.push((format!("--check in the driver: {} times", k + 1), checks));
        passes.push((
            "--pass rewrite".to_string(),
            pass(&["--pass", "rewrite", "--iteration", &ks])?,
        ));
        let c = stage("pagerank", &with(&["--commit"]))?;
        let tasks = pagerank_counts(&c);
        anyhow::ensure!(
            tasks == one_pagerank,
            "pagerank as tasks ranked another graph than in one process: {tasks} vs {one_pagerank}"
        );
        for (what, runs) in passes {
            rows.push(Row {
                stage: "pagerank task",
                what: format!("{what}, time summed, largest RSS"),
                m: summed(runs)?,
            });
        }
        rows.push(Row {
            stage: "pagerank commit",
            what: format!("the same graph: {tasks}"),
            m: c,
        });
    }
    // dedup --near (the fetched pages' copies, see trawl_bench::fakefetch): in one
    // process, then as a job of partition tasks (keys, groups, resolve, rewrite), one
    // task per partition, run one after another: the decision must be the same.
    let near: Vec<OsString> = vec!["--near".into()];
    let m = stage("dedup", &near)?;
    let one = dedup_counts(&m);
    rows.push(Row {
        stage: "dedup",
        what: format!("one process, --near: {one}"),
        m,
    });
    let job = "scalebench-dedup";
    let task = |pass: &str, set: &str| {
        let mut a = near.clone();
        for x in [
            "--job",
            job,
            "--pass",
            pass,
            "--partitions",
            set,
            "--attempt",
            "1",
        ] {
            a.push(x.into());
        }
        stage("dedup", &a)
    };
    let mut passes: Vec<(&str, Vec<Measured>)> = Vec::new();
    for pass in ["keys", "groups", "resolve", "rewrite"] {
        let on: Vec<&str> = if pass == "resolve" {
            vec!["all"]
        } else {
            sets.iter().map(String::as_str).collect()
        };
        let runs = on
            .iter()
            .map(|set| task(pass, set))
            .collect::<anyhow::Result<Vec<_>>>()?;
        passes.push((pass, runs));
    }
    let mut commit = near.clone();
    for x in ["--job", job, "--commit"] {
        commit.push(x.into());
    }
    let c = stage("dedup", &commit)?;
    let tasks = dedup_counts(&c);
    let same = |a: &str, b: &str| {
        // The second run finds the first one's duplicates marked: nothing to restore
        // either way, the same groups and duplicates.
        let key = |s: &str| {
            s.split(", ")
                .filter(|p| !p.contains("restored"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        key(a) == key(b)
    };
    anyhow::ensure!(
        same(&one, &tasks),
        "dedup as tasks decided otherwise than in one process: {tasks} vs {one}"
    );
    for (pass, runs) in passes {
        let m = summed(runs)?;
        rows.push(Row {
            stage: "dedup task",
            what: format!(
                "--pass {pass}: {} task(s), time summed, largest RSS",
                if pass == "resolve" { 1 } else { parts }
            ),
            m,
        });
    }
    rows.push(Row {
        stage: "dedup commit",
        what: format!("the same decision: {tasks}"),
        m: c,
    });
    print_table(&rows);
    print_disk(&crawl, &segment)?;
    if args.tasks > 0 {
        as_tasks(&args, &bin, &seeds, top, &crawl)?;
    }
    Ok(())
}

/// The pipeline again in `--dir/crawl-tasks`, every stage as a job of partition tasks
/// over `--tasks` partition sets and its driver-side steps, each a fresh process:
/// per stage the tasks' time summed and the largest task's peak RSS, and the largest
/// driver step's; the crawldb and the graph must equal the one-process crawl's.
fn as_tasks(args: &Args, bin: &Path, seeds: &Path, top: u64, one: &Path) -> anyhow::Result<()> {
    let crawl = args.dir.join("crawl-tasks");
    let scratch = args.dir.join("out-tasks");
    if crawl.exists() {
        std::fs::remove_dir_all(&crawl).with_context(|| format!("removing {}", crawl.display()))?;
    }
    let run = |name: &str, extra: &[OsString]| -> anyhow::Result<Measured> {
        let mut a: Vec<OsString> = vec!["--crawl-dir".into(), crawl.clone().into()];
        if let Some(c) = &args.config {
            a.push("--config".into());
            a.push(c.clone().into());
        }
        a.extend(extra.iter().cloned());
        measure(&bin.join(name), &a, &crawl, &scratch.join(name))
    };
    let os = |v: &[&str]| -> Vec<OsString> { v.iter().map(OsString::from).collect() };
    // The partition sets: `--tasks` contiguous ranges over the crawl's partitions.
    let n = {
        let cfg = trawl::Config::load_with(args.config.as_deref(), &[])?;
        cfg.crawl.partitions
    };
    let k = args.tasks.min(n).max(1);
    let sets: Vec<String> = (0..k)
        .map(|t| {
            let (a, b) = (t * n / k, (t + 1) * n / k - 1);
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect();
    let mut rows: Vec<Row> = Vec::new();
    // One pass of a job: a task per set, `pre` before and `flags` after the task flags.
    let pass =
        |stage: &str, job: &str, pre: &[OsString], flags: &[&str]| -> anyhow::Result<Measured> {
            let runs = sets
                .iter()
                .map(|set| {
                    let mut a = pre.to_vec();
                    a.extend(os(flags));
                    a.extend(os(&["--job", job, "--partitions", set, "--attempt", "1"]));
                    run(stage, &a)
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            summed(runs)
        };
    let driver =
        |stage: &str, job: &str, pre: &[OsString], flags: &[&str]| -> anyhow::Result<Measured> {
            let mut a = pre.to_vec();
            a.extend(os(flags));
            a.extend(os(&["--job", job]));
            run(stage, &a)
        };
    let mut push =
        |stage: &'static str, what: String, m: Measured| rows.push(Row { stage, what, m });
    let tasks = format!("{} tasks", sets.len());

    let pre = vec![OsString::from(seeds)];
    std::fs::create_dir_all(&crawl)?;
    push(
        "inject",
        tasks.clone(),
        pass("inject", "t-inject", &pre, &[])?,
    );
    push(
        "inject",
        "commit".into(),
        driver("inject", "t-inject", &pre, &["--commit"])?,
    );

    let generate = os(&[
        "--top-n",
        &top.to_string(),
        "--max-per-host",
        &args.max_per_host.to_string(),
    ]);
    push(
        "generate",
        format!("{tasks}, --pass histogram"),
        pass("generate", "t-gen", &generate, &["--pass", "histogram"])?,
    );
    push(
        "generate",
        "--cutoff in the driver".into(),
        driver("generate", "t-gen", &generate, &["--cutoff"])?,
    );
    push(
        "generate",
        format!("{tasks}, --pass select"),
        pass("generate", "t-gen", &generate, &["--pass", "select"])?,
    );
    let c = driver("generate", "t-gen", &generate, &["--commit"])?;
    let segment = c
        .stdout
        .trim()
        .lines()
        .last()
        .context("generate printed no segment")?
        .to_string();
    push("generate", "commit".into(), c);

    push(
        "(fetch+parse)",
        "synthetic, one process".into(),
        run(
            "fakefetch",
            &os(&[
                "--segment",
                &segment,
                "--outlinks",
                &args.outlinks.to_string(),
            ]),
        )?,
    );
    let seg = vec![OsString::from(&segment)];
    for stage in ["updatedb", "linkdb"] {
        let job = format!("t-{stage}");
        push(
            stage_name(stage),
            tasks.clone(),
            pass(stage, &job, &seg, &[])?,
        );
        push(
            stage_name(stage),
            "commit".into(),
            driver(stage, &job, &seg, &["--commit"])?,
        );
    }
    let want = dataset_rows(&CrawlDir::new(one).crawldb_current())?;
    let got = dataset_rows(&CrawlDir::new(&crawl).crawldb_current())?;
    anyhow::ensure!(
        got == want,
        "the crawldb as tasks has {got} rows, in one process {want}"
    );

    let none: Vec<OsString> = Vec::new();
    push(
        "pagerank",
        format!("{tasks}, --pass links"),
        pass("pagerank", "t-pr", &none, &["--pass", "links"])?,
    );
    push(
        "pagerank",
        format!("{tasks}, --pass graph"),
        pass("pagerank", "t-pr", &none, &["--pass", "graph"])?,
    );
    let (iterate, checks, it) = iterate_until_stopped(
        |ks| {
            pass(
                "pagerank",
                "t-pr",
                &none,
                &["--pass", "iterate", "--iteration", ks],
            )
        },
        |ks| driver("pagerank", "t-pr", &none, &["--check", "--iteration", ks]),
    )?;
    let ks = it.to_string();
    push(
        "pagerank",
        format!("{tasks} x {} iterations, --pass iterate", it + 1),
        summed(iterate)?,
    );
    push(
        "pagerank",
        format!("--check in the driver x {}", it + 1),
        summed(checks)?,
    );
    push(
        "pagerank",
        format!("{tasks}, --pass rewrite"),
        pass(
            "pagerank",
            "t-pr",
            &none,
            &["--pass", "rewrite", "--iteration", &ks],
        )?,
    );
    let c = driver("pagerank", "t-pr", &none, &["--commit"])?;
    push("pagerank", format!("commit: {}", pagerank_counts(&c)), c);

    let near = os(&["--near"]);
    for p in ["keys", "groups"] {
        push(
            "dedup",
            format!("{tasks}, --pass {p}"),
            pass("dedup", "t-dedup", &near, &["--pass", p])?,
        );
    }
    let mut a = near.clone();
    a.extend(os(&[
        "--pass",
        "resolve",
        "--job",
        "t-dedup",
        "--partitions",
        "all",
        "--attempt",
        "1",
    ]));
    push("dedup", "1 task, --pass resolve".into(), run("dedup", &a)?);
    push(
        "dedup",
        format!("{tasks}, --pass rewrite"),
        pass("dedup", "t-dedup", &near, &["--pass", "rewrite"])?,
    );
    let c = driver("dedup", "t-dedup", &near, &["--commit"])?;
    push("dedup", format!("commit: {}", dedup_counts(&c)), c);

    println!();
    println!(
        "as partition tasks: {n} partitions in {} sets, every task and driver step a fresh process one after another; wall = the tasks' time summed, peak RSS = the largest task's",
        sets.len()
    );
    print_table(&rows);
    let (task_max, driver_max) = rows.iter().fold((0.0f64, 0.0f64), |(t, d), r| {
        if r.stage == "(fetch+parse)" {
            (t, d)
        } else if r.what.contains("tasks") || r.what.contains("task,") {
            (t.max(r.m.peak_rss_mib), d)
        } else {
            (t, d.max(r.m.peak_rss_mib))
        }
    });
    println!(
        "tasks	largest task peak RSS {task_max:.0} MiB, largest driver step {driver_max:.0} MiB, all tasks and steps {:.1}s",
        rows.iter().map(|r| r.m.secs).sum::<f64>()
    );
    Ok(())
}

/// A stage's name for the table.
fn stage_name(stage: &str) -> &'static str {
    match stage {
        "updatedb" => "updatedb",
        _ => "linkdb",
    }
}

/// pagerank's iteration as a driver runs it: `iterate(K)` (the tasks of iteration K)
/// then `check(K)` for K = 0, 1, ... until the check's JSON line says `"again":
/// false`. Returns each iteration's and each check's measurements and the last K.
fn iterate_until_stopped<T>(
    iterate: impl Fn(&str) -> anyhow::Result<T>,
    check: impl Fn(&str) -> anyhow::Result<Measured>,
) -> anyhow::Result<(Vec<T>, Vec<Measured>, usize)> {
    let (mut runs, mut checks) = (Vec::new(), Vec::new());
    let mut k = 0usize;
    loop {
        let ks = k.to_string();
        runs.push(iterate(&ks)?);
        let c = check(&ks)?;
        let again = c.stdout.contains("\"again\":true");
        checks.push(c);
        if !again {
            return Ok((runs, checks, k));
        }
        k += 1;
    }
}

/// Runs of one pass as one row: their times summed, the largest peak RSS.
fn summed(runs: Vec<Measured>) -> anyhow::Result<Measured> {
    let max = runs.iter().map(|m| m.peak_rss_mib).fold(0.0f64, f64::max);
    let secs: f64 = runs.iter().map(|m| m.secs).sum();
    let mut m = runs
        .into_iter()
        .max_by(|a, b| a.peak_rss_mib.total_cmp(&b.peak_rss_mib))
        .context("no task")?;
    m.peak_rss_mib = max;
    m.secs = secs;
    Ok(m)
}

/// The graph and iteration counts of pagerank's summary line (`N nodes, M edges, K
/// iterations`).
fn pagerank_counts(m: &Measured) -> String {
    m.summary()
        .strip_prefix("pagerank: ")
        .unwrap_or("")
        .split(", ")
        .take(3)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The counts of dedup's summary line (`R rows, ..., N near pairs`).
fn dedup_counts(m: &Measured) -> String {
    m.summary()
        .strip_prefix("dedup: ")
        .and_then(|l| l.rsplit_once(" in "))
        .map(|(counts, _)| counts.to_string())
        .unwrap_or_default()
}

/// Runs the DuckDB side with `args` when `--python` is given.
fn duckdb(args: &Args, job: &[OsString]) -> anyhow::Result<Option<Measured>> {
    let Some(py) = &args.python else {
        return Ok(None);
    };
    let mut a: Vec<OsString> = vec![args.duckdb_script.clone().into()];
    a.extend(job.iter().cloned());
    let scratch = args.dir.join("out").join("duckdb");
    // DuckDB writes outside the crawl: watch its output directory.
    Ok(Some(measure(py, &a, &args.dir.join("out"), &scratch)?))
}

/// `JOB  trawl Xs Y MiB  duckdb Xs Y MiB  ratio R`.
fn compare(job: &str, trawl: &Measured, duck: Option<&Measured>) {
    let t = format!("trawl {:.2}s {:.0} MiB", trawl.secs, trawl.peak_rss_mib);
    match duck {
        Some(d) => println!(
            "{job}  {t}  duckdb {:.2}s {:.0} MiB  ratio {:.2}",
            d.secs,
            d.peak_rss_mib,
            trawl.secs / d.secs.max(1e-9)
        ),
        None => println!("{job}  {t}  (no DuckDB: pass --python)"),
    }
}

fn print_table(rows: &[Row]) {
    println!(
        "{:<14}  {:<40}  {:>8}  {:>10}  {:>14}  {:>14}",
        "stage", "work", "wall", "peak RSS", "disk peak +", "disk after +"
    );
    for r in rows {
        println!(
            "{:<14}  {:<40}  {:>7.2}s  {:>6.0} MiB  {:>14}  {:>14}",
            r.stage,
            r.what,
            r.m.secs,
            r.m.peak_rss_mib,
            mb(r.m.disk_peak_extra()),
            mb(r.m.disk_after.saturating_sub(r.m.disk_before)),
        );
    }
}

/// Bytes per URL of the crawldb and per fetched URL of the segment, and the other
/// datasets' sizes.
fn print_disk(crawl: &Path, segment: &Path) -> anyhow::Result<()> {
    let dir = CrawlDir::new(crawl);
    let cur = dir.crawldb_current();
    let (bytes, urls) = (dataset_bytes(&cur)?, dataset_rows(&cur)?);
    println!(
        "disk\tcrawldb {} for {urls} URLs: {:.1} bytes/URL (crawldb/old: {})",
        mb(bytes),
        bytes as f64 / urls.max(1) as f64,
        mb(tree_bytes(&dir.crawldb_old()))
    );
    let seg = dir.segment(segment)?;
    let fetched = dataset_rows(&seg.dataset(trawl::store::names::SegmentDataset::CrawlFetch))?;
    let seg_bytes = tree_bytes(seg.path());
    let mut parts = Vec::new();
    for d in trawl::store::layout::SEGMENT_DATASETS {
        let b = tree_bytes(&seg.dataset(d));
        if b > 0 {
            parts.push(format!("{d} {:.1}", b as f64 / fetched.max(1) as f64));
        }
    }
    println!(
        "disk\tsegment {} for {fetched} fetched URLs: {:.1} bytes/fetched URL, without page bodies ({})",
        mb(seg_bytes),
        seg_bytes as f64 / fetched.max(1) as f64,
        parts.join(", ")
    );
    println!(
        "disk\tlinkdb {}, pagerank {}, crawl dir {}",
        mb(tree_bytes(&dir.linkdb_current())),
        mb(tree_bytes(&dir.pagerank())),
        mb(tree_bytes(crawl))
    );
    Ok(())
}
