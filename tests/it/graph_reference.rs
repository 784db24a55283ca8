//! PageRank on LAW's cnr-2000 web graph against the reference vector in the shared
//! corpus (alpha 0.85, uniform teleport, dangling mass spread uniformly, self-loops
//! kept). Skipped when the corpus is absent.

use crate::common;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use trawl::graph::csr::{Csr, sort_dedup_edges};
use trawl::graph::pagerank::{PageRankParams, out_degrees, pagerank};

fn corpora() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("TRAWL_CORPORA").map(PathBuf::from),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora")),
        Some(PathBuf::from("/work/shared/corpora")),
    ];
    candidates.into_iter().flatten().find(|p| p.is_dir())
}

fn gz_lines(path: &PathBuf) -> impl Iterator<Item = String> {
    let f = std::fs::File::open(path).unwrap();
    BufReader::new(flate2::read::GzDecoder::new(f))
        .lines()
        .map(|l| l.unwrap())
}

/// The cnr-2000 directory, its arcs and its reference vector; `None` (with the
/// message of a missing component) when the corpus is absent.
fn cnr_2000() -> Option<(PathBuf, PathBuf, PathBuf)> {
    let Some(root) = corpora() else {
        common::missing(
            "the shared corpora",
            "not found at $TRAWL_CORPORA, ../shared/corpora or /work/shared/corpora",
        );
        return None;
    };
    let dir = root.join("graph");
    let arcs = dir.join("cnr-2000.arcs.tsv.gz");
    let reference = dir.join("cnr-2000.pagerank-alpha0.85.txt.gz");
    if !arcs.is_file() || !reference.is_file() {
        common::missing(
            "the shared corpora",
            &format!("the cnr-2000 graph is not at {}", dir.display()),
        );
        return None;
    }
    common::ran_with("corpora");
    Some((dir, arcs, reference))
}

#[test]
fn cnr_2000_matches_reference_pagerank() {
    let Some((dir, arcs, reference)) = cnr_2000() else {
        return;
    };
    let t = std::time::Instant::now();
    let mut edges: Vec<(u32, u32)> = Vec::with_capacity(3_300_000);
    for line in gz_lines(&arcs) {
        let (s, d) = line.split_once('\t').expect("src<TAB>dst");
        edges.push((s.parse().unwrap(), d.parse().unwrap()));
    }
    let want: Vec<f64> = gz_lines(&reference)
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.trim().parse().unwrap())
        .collect();
    let n = want.len();
    assert_eq!(n, 325_557);
    assert_eq!(edges.len(), 3_216_152);
    sort_dedup_edges(&mut edges);
    let out = Csr::from_sorted_edges(n, &edges);
    drop(edges);
    let inl = out.transpose();
    let loaded = t.elapsed();
    let params = PageRankParams {
        damping: 0.85,
        tolerance: 1e-12,
        max_iterations: 200,
    };
    let r = pagerank(&inl, &out_degrees(&out), None, &params);
    let l1: f64 = r.scores.iter().zip(&want).map(|(a, b)| (a - b).abs()).sum();
    let max_rel = r
        .scores
        .iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs() / b)
        .fold(0.0, f64::max);
    eprintln!(
        "cnr-2000: load {:.2}s, {} iterations (delta {:.2e}) in {:.2}s; L1 distance {l1:.3e}, max relative error {max_rel:.3e}",
        loaded.as_secs_f64(),
        r.iterations,
        r.delta,
        (t.elapsed() - loaded).as_secs_f64()
    );
    assert!(l1 < 1e-9, "L1 distance to the reference {l1}");
    assert!(max_rel < 1e-6, "max relative error {max_rel}");

    // Top 100: same set and, ties aside, the same scores in the same order.
    let top = |v: &[f64]| {
        let mut idx: Vec<usize> = (0..v.len()).collect();
        idx.sort_by(|&a, &b| v[b].total_cmp(&v[a]).then(a.cmp(&b)));
        idx.truncate(100);
        idx
    };
    let (ours, theirs) = (top(&r.scores), top(&want));
    for (k, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert!(
            a == b || (want[*a] - want[*b]).abs() <= 1e-12 * want[*b],
            "rank {k}: node {a} vs reference {b}"
        );
    }
    // And against the published top-100 file.
    let top_file = std::fs::read_to_string(dir.join("cnr-2000.pagerank-top100.tsv")).unwrap();
    for line in top_file.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        let node: usize = f[1].parse().unwrap();
        let score: f64 = f[2].parse().unwrap();
        assert!(
            (r.scores[node] - score).abs() <= 1e-9 * score.max(1e-12) + 1e-15,
            "node {node}: {} vs {score}",
            r.scores[node]
        );
        assert!(ours.contains(&node), "node {node} of the top 100 missing");
    }

    // The default parameters (those of `[pagerank]`) converge on this real web graph,
    // within the distance the stopping rule promises, with the reference's top 100.
    let defaults = PageRankParams::default();
    let cfg = trawl::Config::default().pagerank;
    assert_eq!(
        (
            defaults.damping,
            defaults.tolerance,
            defaults.max_iterations
        ),
        (cfg.damping, cfg.tolerance, cfg.max_iterations),
        "the kernel's defaults are the config's"
    );
    let r = pagerank(&inl, &out_degrees(&out), None, &defaults);
    let l1: f64 = r.scores.iter().zip(&want).map(|(a, b)| (a - b).abs()).sum();
    eprintln!(
        "cnr-2000 with the defaults (tolerance {:e}): {} iterations (delta {:.2e}); L1 distance {l1:.3e}",
        defaults.tolerance, r.iterations, r.delta
    );
    assert!(
        r.delta < defaults.tolerance && r.iterations < defaults.max_iterations,
        "did not converge: {} iterations, delta {}",
        r.iterations,
        r.delta
    );
    let d = defaults.damping;
    assert!(
        l1 <= defaults.tolerance * d / (1.0 - d),
        "L1 distance {l1} beyond the stopping rule's bound"
    );
    let max_abs = r
        .scores
        .iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    for (k, (a, b)) in top(&r.scores).iter().zip(&theirs).enumerate() {
        assert!(
            a == b || (want[*a] - want[*b]).abs() <= 2.0 * max_abs,
            "defaults, rank {k}: node {a} vs reference {b}"
        );
    }
}

/// cnr-2000 as a crawl (a crawldb of its 325,557 pages on 251 hosts in 4 partitions,
/// a parsed segment holding its 3.2M links), ranked by `pagerank` in one process and
/// as partition tasks through the binary, as a driver runs them: the same scores
/// (L1 distance at most 1e-9), degrees and iteration count, and within the stopping
/// rule's bound of the reference vector.
#[test]
fn cnr_2000_as_partition_tasks_equals_one_process_pagerank() {
    let Some((_, arcs, reference)) = cnr_2000() else {
        return;
    };
    const PARTS: usize = 4;
    let want: Vec<f64> = gz_lines(&reference)
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.trim().parse().unwrap())
        .collect();
    let n = want.len();
    let url = |i: usize| format!("http://h{}.cnr.test/p{i}", i % 251);
    let pt = trawl::store::partition::Partitioner::by_host(PARTS);
    let part_of = |i: usize| pt.of_host(&format!("h{}.cnr.test", i % 251));
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
    for line in gz_lines(&arcs) {
        let (s, d) = line.split_once('\t').expect("src<TAB>dst");
        out[s.parse::<usize>().unwrap()].push(d.parse().unwrap());
    }
    let mut rows: Vec<Vec<trawl::CrawlDatum>> = vec![Vec::new(); PARTS];
    let mut parsed: Vec<Vec<trawl::records::ParseDataRecord>> = vec![Vec::new(); PARTS];
    for (i, targets) in out.iter().enumerate() {
        let u = url(i);
        rows[part_of(i)].push(trawl::CrawlDatum::unfetched(
            u.clone(),
            trawl::urls::host_of(&u),
            0,
            86400,
        ));
        if targets.is_empty() {
            continue;
        }
        let mut row = common::parse_data_row(&u);
        row.outlinks = targets
            .iter()
            .map(|&t| trawl::records::Outlink {
                url: url(t),
                anchor: String::new(),
                nofollow: false,
            })
            .collect();
        parsed[part_of(i)].push(row);
    }
    drop(out);
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    common::write_crawl(&a, rows, parsed);
    common::copy_tree(&a, &b);
    let config = tmp.path().join("trawl.toml");
    // A reference graph, not a site: its links within a host are all kept (their
    // anchors are empty, and most of a host's pages link some of the same targets).
    std::fs::write(
        &config,
        "[crawl]\npartitions = 4\n[pagerank]\nignore_template = false\n",
    )
    .unwrap();
    let t = std::time::Instant::now();
    common::run_ok("pagerank", &a, &config, &[]);
    let one = t.elapsed();
    let t = std::time::Instant::now();
    let job = "cnr-pagerank";
    let iterations = common::pagerank_as_tasks(&b, &config, job, &|flags| {
        for (set, attempt) in [("0-1", "a-1"), ("2", "a-2"), ("3", "a-3")] {
            let mut args: Vec<&str> = flags.to_vec();
            args.extend(["--job", job, "--partitions", set, "--attempt", attempt]);
            common::run_ok("pagerank", &b, &config, &args);
        }
    });
    eprintln!(
        "cnr-2000 as a crawl: pagerank in one process {:.1}s, as partition tasks {:.1}s ({iterations} iterations, 3 tasks each)",
        one.as_secs_f64(),
        t.elapsed().as_secs_f64()
    );
    let (pa, pb) = (common::pagerank_rows(&a), common::pagerank_rows(&b));
    assert_eq!(pa.len(), n, "every page is a node");
    common::assert_same_pagerank(&pa, &pb, "cnr-2000 as partition tasks");
    let meta = |c: &std::path::Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(c.join("pagerank/_meta.json")).unwrap()).unwrap()
    };
    assert_eq!(meta(&a)["iterations"], meta(&b)["iterations"]);
    assert_eq!(meta(&b)["iterations"], iterations);
    assert_eq!(meta(&a)["edges"], meta(&b)["edges"]);
    let l1: f64 = pb
        .iter()
        .map(|(u, (s, _, _))| {
            let i: usize = u.rsplit("/p").next().unwrap().parse().unwrap();
            (s - want[i]).abs()
        })
        .sum();
    let cfg = trawl::Config::default().pagerank;
    assert!(
        l1 <= cfg.tolerance * cfg.damping / (1.0 - cfg.damping),
        "L1 distance {l1} to the reference beyond the stopping rule's bound"
    );
    // The crawldb's scores are the tasks' too.
    let (da, db) = (common::crawldb(&a), common::crawldb(&b));
    let diff: f64 = da
        .iter()
        .map(|(u, d)| (d.score - db[u].score).abs() / n as f64)
        .sum();
    assert!(
        diff <= 1e-9,
        "crawldb scores differ by L1 {diff:e} (over N)"
    );
}
