//! The relevance test set and the ranking tuning (`relbench`): a real site (The
//! Rust Programming Language book the toolchain ships) crawled from the test web,
//! its pages' section headings as queries, the page of each heading as the one
//! relevant answer.
//!
//! - Queries ([`heading_queries`]): the `h2` and `h3` headings the parse stage
//!   recorded (`parse_data.metadata`) of every parsed, indexable (not `noindex`) page,
//!   reduced to lower-case letters and digits (no query syntax, no `AND`/`OR`). A
//!   heading found on more than one page (`Summary`, mdBook's `Keyboard shortcuts`)
//!   is ambiguous and dropped; how many is reported.
//! - Split ([`split`]): by the first byte of the blake3 of the query text, even =
//!   tuning half, odd = held-out half. Deterministic, independent of order.
//! - Metrics ([`evaluate`]): MRR@10 (1/rank of the relevant page in the first 10,
//!   else 0) and nDCG@10 (binary gain; one relevant page, so 1/log2(rank + 1)),
//!   averaged over the queries. Every ranking has the title weight at 0: a heading
//!   is often its page's title, so the page's own title field is excluded.
//! - Tuning ([`tune`]): BM25 alone ([`Ranking::bm25`]: one BM25 over the page's
//!   text) has no weight to tune; grid searches on the tuning half only (BM25F: the
//!   weights of main text, other text, anchors and URL; full: the priors on top of
//!   the best BM25F), then coordinate ascent over every weight; the held-out half is
//!   scored once per finished ranking.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rayon::prelude::*;

use trawl::index::search::{Ranking, SearchRequest, Searcher};
use trawl::records::ParseDataRecord;
use trawl::store::layout::CrawlDir;
use trawl::store::names::SegmentDataset;
use trawl::store::parquet;

/// Results looked at per query.
pub const DEPTH: usize = 10;

/// One query and the pages that answer it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The query text (a heading's: lower case, letters, digits and spaces; a
    /// natural query's: as a user types it).
    pub text: String,
    /// The relevant pages' URLs (a heading's: one; a natural query's: any of them
    /// answers it).
    pub relevant: Vec<String>,
}

/// The queries of a crawl and what was left out.
#[derive(Debug, Clone, Default)]
pub struct QuerySet {
    /// The queries, sorted by text.
    pub queries: Vec<Query>,
    /// Indexable parsed HTML pages read.
    pub pages: usize,
    /// Pages with at least one query.
    pub pages_with_queries: usize,
    /// Distinct headings (after normalization) found.
    pub headings: usize,
    /// Headings dropped because several pages have them.
    pub shared: usize,
}

/// A heading as a query: lower case, every run of characters other than letters
/// and digits one space; empty when nothing is left.
pub fn normalize_heading(h: &str) -> String {
    h.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The newest `parse_data` row of each URL across the segments of the crawl at
/// `root`, of the parsed, indexable (not `noindex`) HTML pages.
fn indexable_pages(root: &Path) -> anyhow::Result<BTreeMap<String, ParseDataRecord>> {
    let dir = CrawlDir::new(root);
    let mut newest: BTreeMap<String, ParseDataRecord> = BTreeMap::new();
    // Segments sort by name = by time: later rows replace earlier ones.
    for seg in dir.segments()? {
        if !seg.has(SegmentDataset::ParseData) {
            continue;
        }
        for row in
            parquet::read_dataset::<ParseDataRecord>(&seg.dataset(SegmentDataset::ParseData))?
        {
            newest.insert(row.url.clone(), row);
        }
    }
    newest.retain(|_, row| {
        let html = row
            .content_type
            .as_deref()
            .is_some_and(|t| t.contains("html"));
        row.status == "parse_success" && !row.noindex && html
    });
    Ok(newest)
}

/// The heading queries of the crawl at `root` (see the module docs): the newest
/// `parse_data` row of each URL across segments.
pub fn heading_queries(root: &Path) -> anyhow::Result<QuerySet> {
    let newest = indexable_pages(root)?;
    let mut by_query: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut set = QuerySet::default();
    for row in newest.values() {
        set.pages += 1;
        for key in ["h2", "h3"] {
            for h in row
                .metadata
                .get(key)
                .map(String::as_str)
                .unwrap_or("")
                .lines()
            {
                let q = normalize_heading(h);
                if !q.is_empty() {
                    by_query.entry(q).or_default().insert(row.url.clone());
                }
            }
        }
    }
    set.headings = by_query.len();
    keep_unique(by_query, &mut set);
    Ok(set)
}

/// Makes each text of `by_query` that names one page a query of `set` (its page
/// the relevant one); a text naming several is ambiguous and counted in `shared`.
fn keep_unique(by_query: BTreeMap<String, BTreeSet<String>>, set: &mut QuerySet) {
    let mut with = BTreeSet::new();
    for (text, pages) in by_query {
        if pages.len() > 1 {
            set.shared += 1;
            continue;
        }
        if let Some(url) = pages.into_iter().next() {
            with.insert(url.clone());
            set.queries.push(Query {
                text,
                relevant: vec![url],
            });
        }
    }
    set.pages_with_queries = with.len();
}

/// The anchor-text queries of the crawl at `root`: what the site's own pages call a
/// page when they link to it, the text people use to point at it. Of the linkdb's
/// links to an indexable page from another page of the site, but the site's template
/// links ([`trawl::graph::template`]: "Next", "Index" on every page), each distinct
/// anchor text (normalized as a heading) is a query whose relevant page is its target;
/// an anchor text that names several targets ("next", "here", a function's name in
/// two modules) is ambiguous and dropped (`shared`), as are anchors of one character.
/// The target's own anchors field holds the query: the set measures how the ranking
/// serves a page's name (navigational queries), with the anchors' weight and without
/// it side by side. `headings` counts the distinct anchor texts.
pub fn anchor_queries(root: &Path) -> anyhow::Result<QuerySet> {
    let pages = indexable_pages(root)?;
    let links = parquet::read_dataset::<trawl::records::InlinkRecord>(
        &CrawlDir::new(root).linkdb_current(),
    )?;
    let mut counter = trawl::graph::template::TemplateCounter::default();
    for l in &links {
        counter.add(&l.from_url, &l.url, &l.anchor);
    }
    let template = counter.finish();
    let mut by_query: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for l in &links {
        if l.url == l.from_url
            || !pages.contains_key(&l.url)
            || trawl::urls::host_of(&l.url) != trawl::urls::host_of(&l.from_url)
            || template.is_template(&l.from_url, &l.url, &l.anchor)
        {
            continue;
        }
        let q = normalize_heading(&l.anchor);
        if q.chars().count() > 1 {
            by_query.entry(q).or_default().insert(l.url.clone());
        }
    }
    let mut set = QuerySet {
        pages: pages.len(),
        headings: by_query.len(),
        ..QuerySet::default()
    };
    keep_unique(by_query, &mut set);
    Ok(set)
}

/// The natural queries of the file `path` (`bench/queries/*.tsv`): a query, a tab,
/// then the paths of the pages that answer it under the site's root,
/// space-separated; `#` lines and blank lines are comments. Each path is checked to
/// be a file under `site` (a query whose answer is not in the site is a mistake in
/// the file, named by its line), and becomes the page's URL on `http://HOST/`.
pub fn natural_queries(path: &Path, site: &Path, host: &str) -> anyhow::Result<Vec<Query>> {
    let text =
        std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (query, answers) = line.split_once('\t').ok_or_else(|| {
            anyhow::anyhow!(
                "{}:{}: `query<TAB>page [page...]` expected, no tab found",
                path.display(),
                n + 1
            )
        })?;
        let mut relevant = Vec::new();
        for a in answers.split_whitespace() {
            anyhow::ensure!(
                site.join(a).is_file(),
                "{}:{}: {a} is not a page of {}",
                path.display(),
                n + 1,
                site.display()
            );
            relevant.push(format!("http://{host}/{a}"));
        }
        anyhow::ensure!(
            !query.trim().is_empty() && !relevant.is_empty(),
            "{}:{}: a query and at least one page expected",
            path.display(),
            n + 1
        );
        out.push(Query {
            text: query.trim().to_string(),
            relevant,
        });
    }
    Ok(out)
}

/// Whether a query belongs to the tuning half (else the held-out half).
pub fn is_tuning(q: &Query) -> bool {
    blake3::hash(q.text.as_bytes()).as_bytes()[0].is_multiple_of(2)
}

/// The tuning and held-out halves.
pub fn split(queries: &[Query]) -> (Vec<&Query>, Vec<&Query>) {
    queries.iter().partition(|q| is_tuning(q))
}

/// Mean metrics over a query set.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Metrics {
    /// Mean reciprocal rank of the relevant page in the first [`DEPTH`] results.
    pub mrr: f64,
    /// Mean nDCG@10.
    pub ndcg: f64,
    /// Share of queries with the relevant page first.
    pub p1: f64,
    /// Queries.
    pub n: usize,
}

/// The 1-based rank of the first of `relevant` in `urls`.
fn rank_of(urls: &[String], relevant: &[String]) -> Option<usize> {
    urls.iter()
        .position(|u| relevant.contains(u))
        .map(|p| p + 1)
}

/// Scores one ranked list by its first relevant page: (reciprocal rank, nDCG@10 of
/// that page, a relevant page first).
pub fn score_list(urls: &[String], relevant: &[String]) -> (f64, f64, bool) {
    match rank_of(urls, relevant) {
        Some(r) if r <= DEPTH => (1.0 / r as f64, 1.0 / ((r + 1) as f64).log2(), r == 1),
        _ => (0.0, 0.0, false),
    }
}

/// Runs every query with `ranking` (title weight forced to 0: heading queries) and
/// averages.
pub fn evaluate(
    searcher: &Searcher,
    queries: &[&Query],
    ranking: &Ranking,
) -> anyhow::Result<Metrics> {
    evaluate_as_is(searcher, queries, &with(ranking, "title", 0.0))
}

/// Runs every query with `ranking` as it is (natural queries: the title counts)
/// and averages.
pub fn evaluate_as_is(
    searcher: &Searcher,
    queries: &[&Query],
    ranking: &Ranking,
) -> anyhow::Result<Metrics> {
    let ranking = *ranking;
    let scores = queries
        .par_iter()
        .map(|q| {
            let req = SearchRequest {
                query: q.text.clone(),
                top: DEPTH,
                offset: 0,
                ranking,
                facets: false,
            };
            let urls: Vec<String> = searcher
                .search(&req)?
                .hits
                .into_iter()
                .map(|h| h.url)
                .collect();
            Ok(score_list(&urls, &q.relevant))
        })
        .collect::<trawl::Result<Vec<_>>>()?;
    let n = scores.len().max(1) as f64;
    Ok(Metrics {
        mrr: scores.iter().map(|s| s.0).sum::<f64>() / n,
        ndcg: scores.iter().map(|s| s.1).sum::<f64>() / n,
        p1: scores.iter().filter(|s| s.2).count() as f64 / n,
        n: scores.len(),
    })
}

/// The weights a ranking has, by name, for the grids and the report.
pub const WEIGHTS: [&str; 9] = [
    "title",
    "anchors",
    "main_text",
    "other_text",
    "url",
    "pagerank",
    "inlinks",
    "hostrank",
    "depth",
];

/// The weight `name` of `r`.
pub fn get(r: &Ranking, name: &str) -> f32 {
    match name {
        "title" => r.title,
        "anchors" => r.anchors,
        "main_text" => r.main_text,
        "other_text" => r.other_text,
        "url" => r.url,
        "pagerank" => r.pagerank,
        "inlinks" => r.inlinks,
        "hostrank" => r.hostrank,
        "depth" => r.depth,
        _ => f32::NAN,
    }
}

/// `r` with the weight `name` set to `v`.
pub fn with(r: &Ranking, name: &str, v: f32) -> Ranking {
    let mut r = *r;
    match name {
        "title" => r.title = v,
        "anchors" => r.anchors = v,
        "main_text" => r.main_text = v,
        "other_text" => r.other_text = v,
        "url" => r.url = v,
        "pagerank" => r.pagerank = v,
        "inlinks" => r.inlinks = v,
        "hostrank" => r.hostrank = v,
        "depth" => r.depth = v,
        _ => {}
    }
    r
}

/// `r`'s weights as `name=value` pairs.
pub fn describe(r: &Ranking) -> String {
    WEIGHTS
        .iter()
        .map(|n| format!("{n}={}", get(r, n)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `r` as the Rust expression of a `Ranking` (what to paste into `Ranking::full()`).
pub fn as_rust(r: &Ranking) -> String {
    let fields = WEIGHTS
        .iter()
        .map(|n| format!("{n}: {:?}", get(r, n)))
        .collect::<Vec<_>>()
        .join(", ");
    format!("Ranking {{ {fields} }}")
}

/// A tuning run's result.
#[derive(Debug, Clone)]
pub struct Tuned {
    /// The best ranking found.
    pub ranking: Ranking,
    /// Its metrics on the tuning half.
    pub tuning: Metrics,
    /// Rankings evaluated.
    pub evaluated: usize,
}

/// Better by MRR, then nDCG (ties keep the earlier, simpler one).
fn better(a: &Metrics, b: &Metrics) -> bool {
    a.mrr > b.mrr + 1e-12 || ((a.mrr - b.mrr).abs() <= 1e-12 && a.ndcg > b.ndcg + 1e-12)
}

/// Whether the tuning may pick `r`: the text outside the main text (navigation,
/// footers) never weighs more than the main text. On one site whose boilerplate is
/// a constant line (the Rust book's), a large weight on it only flattens BM25's
/// length normalisation, which would hurt every site with real boilerplate.
pub fn admissible(r: &Ranking) -> bool {
    r.other_text <= r.main_text
}

/// The best of `start` and every combination of `grid` (weights by name and the
/// values each takes) applied to it, on `queries`.
pub fn grid_search(
    searcher: &Searcher,
    queries: &[&Query],
    start: &Ranking,
    grid: &[(&str, Vec<f32>)],
) -> anyhow::Result<Tuned> {
    let mut combos = vec![*start];
    for (name, values) in grid {
        combos = combos
            .iter()
            .flat_map(|r| values.iter().map(move |v| with(r, name, *v)))
            .collect();
    }
    let mut best = Tuned {
        ranking: *start,
        tuning: evaluate(searcher, queries, start)?,
        evaluated: 1,
    };
    for r in combos.into_iter().filter(admissible) {
        let m = evaluate(searcher, queries, &r)?;
        best.evaluated += 1;
        if better(&m, &best.tuning) {
            best.ranking = r;
            best.tuning = m;
        }
    }
    Ok(best)
}

/// Coordinate ascent from `from.ranking` over the weights `names`: each weight in
/// turn tries 0 and its value times each of `factors`, keeping any improvement,
/// for `passes` passes (or until a pass changes nothing).
pub fn coordinate_ascent(
    searcher: &Searcher,
    queries: &[&Query],
    from: Tuned,
    names: &[&str],
    passes: usize,
) -> anyhow::Result<Tuned> {
    const FACTORS: [f32; 6] = [0.25, 0.5, 0.8, 1.25, 2.0, 4.0];
    let mut best = from;
    for _ in 0..passes {
        let mut changed = false;
        for name in names {
            let v = get(&best.ranking, name);
            let base = if v == 0.0 { 0.1 } else { v };
            let mut tries: Vec<f32> = FACTORS.iter().map(|f| base * f).collect();
            tries.push(0.0);
            for t in tries {
                if t == v {
                    continue;
                }
                let r = with(&best.ranking, name, t);
                if !admissible(&r) {
                    continue;
                }
                let m = evaluate(searcher, queries, &r)?;
                best.evaluated += 1;
                if better(&m, &best.tuning) {
                    best.ranking = r;
                    best.tuning = m;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    Ok(best)
}

/// The three tuned rankings of the report.
#[derive(Debug, Clone)]
pub struct Tuning {
    /// BM25 alone over the page's text ([`Ranking::bm25`], nothing tuned).
    pub bm25: Tuned,
    /// BM25F: text fields, anchors and URL, no priors.
    pub bm25f: Tuned,
    /// The full ranking: BM25F and the priors (PageRank, inlinks, depth).
    pub full: Tuned,
}

/// The values a weight takes in the grids: around `v` (the default's value), or
/// a fixed ladder when the default is 0.
fn ladder(v: f32) -> Vec<f32> {
    if v > 0.0 {
        vec![0.0, v / 4.0, v / 2.0, v, v * 2.0, v * 4.0]
    } else {
        vec![0.0, 0.1, 0.3, 1.0, 3.0]
    }
}

/// Tunes the three rankings on `tuning` (see the module docs).
pub fn tune(searcher: &Searcher, tuning: &[&Query]) -> anyhow::Result<Tuning> {
    let zero_priors = |r: &Ranking| {
        let r = with(r, "pagerank", 0.0);
        let r = with(&r, "inlinks", 0.0);
        let r = with(&r, "hostrank", 0.0);
        with(&r, "depth", 0.0)
    };
    // BM25 alone: nothing to tune (the page's text as one field).
    let base = zero_priors(&Ranking::bm25());
    let bm25 = grid_search(searcher, tuning, &base, &[])?;
    // BM25F: the page's fields weighted, + anchors and URL, no priors.
    let grid = vec![
        ("main_text", vec![0.5, 1.0, 2.0, 4.0]),
        ("other_text", vec![0.0, 0.1, 0.25, 0.5, 1.0]),
        ("anchors", vec![0.0, 0.25, 0.5, 1.0, 2.0]),
        ("url", vec![0.0, 0.5, 1.0, 2.0]),
    ];
    let bm25f = grid_search(searcher, tuning, &zero_priors(&Ranking::full()), &grid)?;
    let fields = ["main_text", "other_text", "anchors", "url"];
    let bm25f = coordinate_ascent(searcher, tuning, bm25f, &fields, 3)?;
    // Full: the priors on top of the best BM25F, then every weight.
    let defaults = Ranking::full();
    let grid = vec![
        ("pagerank", ladder(defaults.pagerank)),
        ("inlinks", ladder(defaults.inlinks)),
        ("depth", ladder(defaults.depth)),
    ];
    let full = grid_search(searcher, tuning, &bm25f.ranking, &grid)?;
    let all = [
        "main_text",
        "other_text",
        "anchors",
        "url",
        "pagerank",
        "inlinks",
        "depth",
    ];
    let full = coordinate_ascent(searcher, tuning, full, &all, 3)?;
    Ok(Tuning { bm25, bm25f, full })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_become_plain_queries() {
        assert_eq!(
            normalize_heading("The `String` Type: AND/OR?"),
            "the string type and or"
        );
        assert_eq!(normalize_heading("  -- "), "");
        assert_eq!(normalize_heading("Größe 変数"), "größe 変数");
    }

    #[test]
    fn ranks_score_as_mrr_and_ndcg() {
        let urls: Vec<String> = (1..=12).map(|i| format!("u{i}")).collect();
        let one = |u: &str| vec![u.to_string()];
        assert_eq!(score_list(&urls, &one("u1")), (1.0, 1.0, true));
        let (rr, ndcg, first) = score_list(&urls, &one("u3"));
        assert!((rr - 1.0 / 3.0).abs() < 1e-12 && (ndcg - 0.5).abs() < 1e-12 && !first);
        assert_eq!(score_list(&urls, &one("u11")), (0.0, 0.0, false));
        assert_eq!(score_list(&urls, &one("nope")), (0.0, 0.0, false));
        // Several answers: the first one found counts.
        let two = vec!["u5".to_string(), "u3".to_string()];
        assert_eq!(score_list(&urls, &two), score_list(&urls, &one("u3")));
    }

    #[test]
    fn the_split_is_deterministic_and_about_half() {
        let qs: Vec<Query> = (0..1000)
            .map(|i| Query {
                text: format!("query {i}"),
                relevant: Vec::new(),
            })
            .collect();
        let (a, b) = split(&qs);
        assert_eq!(a.len() + b.len(), 1000);
        assert!((400..600).contains(&a.len()), "{}", a.len());
        let mut rev = qs.clone();
        rev.reverse();
        let (a2, _) = split(&rev);
        let set = |v: &[&Query]| v.iter().map(|q| q.text.clone()).collect::<BTreeSet<_>>();
        assert_eq!(set(&a), set(&a2));
    }
}
