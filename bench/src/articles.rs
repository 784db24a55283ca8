//! Main-text evaluation against annotated article bodies: the 4-gram shingle metric of
//! the public article extraction benchmark (bench/data/article-extraction-benchmark),
//! written here from its definition.
//!
//! Text is cut into words (maximal runs of letters, digits and `_`, as a Unicode
//! `\w+`), words into overlapping 4-word shingles, counted with repeats. Per page,
//! true positives are the shingles both texts have (the smaller count), false positives
//! the extracted text's extra ones, false negatives the annotation's missing ones; the
//! three are divided by their sum so that every page weighs the same. Precision is the
//! mean over pages that extracted something or should have, recall likewise, and F1 is
//! their harmonic mean.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use trawl::error::{Error, IoContext, Result};

/// Shingle length.
pub const SHINGLE: usize = 4;

/// The words of `text`.
pub fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// The shingles of `text` with their counts (one shingle of all words when it has
/// fewer than [`SHINGLE`]).
pub fn shingles(text: &str) -> HashMap<Vec<&str>, u32> {
    let w = words(text);
    let mut out = HashMap::new();
    if w.is_empty() {
        return out;
    }
    let n = w.len().saturating_sub(SHINGLE - 1).max(1);
    for i in 0..n {
        let end = (i + SHINGLE).min(w.len());
        *out.entry(w[i..end].to_vec()).or_insert(0) += 1;
    }
    out
}

/// One page's normalized (true positives, false positives, false negatives).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counts {
    /// Shingles in both.
    pub tp: f64,
    /// Extracted, not annotated.
    pub fp: f64,
    /// Annotated, not extracted.
    pub fn_: f64,
}

/// Compares the extracted `got` with the annotated `want`.
pub fn compare(want: &str, got: &str) -> Counts {
    let w = shingles(want);
    let g = shingles(got);
    let mut c = Counts::default();
    for (k, &n) in &w {
        let m = g.get(k).copied().unwrap_or(0);
        c.tp += f64::from(n.min(m));
        c.fn_ += f64::from(n.saturating_sub(m));
    }
    for (k, &m) in &g {
        let n = w.get(k).copied().unwrap_or(0);
        c.fp += f64::from(m.saturating_sub(n));
    }
    let sum = c.tp + c.fp + c.fn_;
    if sum > 0.0 {
        c.tp /= sum;
        c.fp /= sum;
        c.fn_ /= sum;
    }
    c
}

/// Precision, recall and F1 over pages.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Scores {
    /// Mean precision.
    pub precision: f64,
    /// Mean recall.
    pub recall: f64,
    /// Harmonic mean of the two.
    pub f1: f64,
    /// Pages.
    pub pages: usize,
}

/// The scores of a set of pages.
pub fn scores(pages: &[Counts]) -> Scores {
    let mean = |v: Vec<f64>| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    let precision = mean(
        pages
            .iter()
            .filter(|c| c.tp + c.fp > 0.0)
            .map(|c| score(c.tp, c.fp, c.fn_))
            .collect(),
    );
    let recall = mean(
        pages
            .iter()
            .filter(|c| c.tp + c.fn_ > 0.0)
            .map(|c| score(c.tp, c.fn_, c.fp))
            .collect(),
    );
    let f1 = if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    };
    Scores {
        precision,
        recall,
        f1,
        pages: pages.len(),
    }
}

/// `tp / (tp + wrong)`, 1 when nothing is wrong either way.
fn score(tp: f64, wrong: f64, other_wrong: f64) -> f64 {
    if wrong == 0.0 && other_wrong == 0.0 {
        1.0
    } else if tp + wrong == 0.0 {
        0.0
    } else {
        tp / (tp + wrong)
    }
}

/// The share of `line`'s shingles that `text` also has (1 for a line without words):
/// what `--show` marks lines by.
pub fn covered(line: &str, text: &str) -> f64 {
    let l = shingles(line);
    if l.is_empty() {
        return 1.0;
    }
    let t = shingles(text);
    let total: u32 = l.values().sum();
    let hit: u32 = l
        .iter()
        .map(|(k, &n)| n.min(t.get(k).copied().unwrap_or(0)))
        .sum();
    f64::from(hit) / f64::from(total)
}

/// Whether a benchmark id is held out of tuning (ids starting with `8`-`f`).
pub fn held_out(id: &str) -> bool {
    id.chars()
        .next()
        .is_some_and(|c| matches!(c, '8'..='9' | 'a'..='f'))
}

/// Whether a page may be looked at while tuning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// Rules may be found on it (`--worst`, `--show`).
    Tuning,
    /// Never looked at page by page: only its set's figures are printed.
    HeldOut,
}

/// One annotated page of a benchmark set.
#[derive(Debug, Clone)]
pub struct Page {
    /// `zyte/<id>`, `wcxb/<id>` or `readability/<name>`: what `--show` takes and the
    /// peers' outputs are keyed by.
    pub key: String,
    /// Tuning or held out.
    pub split: Split,
    /// The annotated page type (`article` for every page of the Zyte set and the
    /// Readability pages; WCXB's own label otherwise).
    pub kind: String,
    /// The page's URL (links and the title rule use it).
    pub url: String,
    /// The page as saved.
    pub html: Vec<u8>,
    /// The annotated main text.
    pub truth: String,
}

fn gunzip(path: &Path) -> Result<Vec<u8>> {
    let gz = std::fs::read(path).at(path)?;
    let mut html = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut html)
        .map_err(|e| Error::input(path.display().to_string(), format!("not gzip: {e}")))?;
    Ok(html)
}

fn json_file(path: &Path) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path).at(path)?;
    serde_json::from_str(&text)
        .map_err(|e| Error::input(path.display().to_string(), format!("invalid JSON: {e}")))
}

/// A JSON file that must hold an object; `what` names its entries for the error.
fn json_object(path: &Path, what: &str) -> Result<serde_json::Map<String, serde_json::Value>> {
    match json_file(path)? {
        serde_json::Value::Object(m) => Ok(m),
        _ => Err(Error::input(
            path.display().to_string(),
            format!("not a JSON object of {what}"),
        )),
    }
}

/// The Zyte (Scrapinghub) article extraction benchmark as vendored in
/// bench/data/article-extraction-benchmark: `ground-truth.json` (id -> url,
/// articleBody) and `html/<id>.html.gz`. Ids `8`-`f` are held out ([`held_out`]).
pub fn load_zyte(dir: &Path) -> Result<Vec<Page>> {
    let truth_path = dir.join("ground-truth.json");
    let truth = json_object(&truth_path, "pages")?;
    let mut out = Vec::with_capacity(truth.len());
    for (id, v) in truth {
        out.push(Page {
            key: format!("zyte/{id}"),
            split: if held_out(&id) {
                Split::HeldOut
            } else {
                Split::Tuning
            },
            kind: "article".into(),
            url: v["url"].as_str().unwrap_or("http://example.com/").into(),
            html: gunzip(&dir.join("html").join(format!("{id}.html.gz")))?,
            truth: v["articleBody"].as_str().unwrap_or_default().into(),
        });
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}

/// WCXB, the Web Content eXtraction Benchmark (Murrough Foley, CC-BY-4.0; 2,008
/// pages of 7 labelled types, <https://github.com/Murrough-Foley/web-content-extraction-benchmark>):
/// `<split>/ground-truth/<id>.json` (`url`, the page type in
/// `_internal.page_type.primary`, `ground_truth.main_content`) and
/// `<split>/html/<id>.html.gz`. Its `test` split is held out, its `dev` split is for
/// tuning, less the dev pages that are test pages too (139 ids of WCXB 1.0 are in
/// both splits, and 3 more dev pages have a test page's URL): those are held out,
/// once, under their test id.
pub fn load_wcxb(dir: &Path) -> Result<Vec<Page>> {
    let mut out: Vec<Page> = Vec::new();
    let mut test_ids = std::collections::HashSet::new();
    let mut test_urls = std::collections::HashSet::new();
    for (split, role) in [("test", Split::HeldOut), ("dev", Split::Tuning)] {
        let gt_dir = dir.join(split).join("ground-truth");
        let mut ids: Vec<String> = std::fs::read_dir(&gt_dir)
            .at(&gt_dir)?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(".json"))
                    .map(str::to_string)
            })
            .collect();
        ids.sort();
        for id in ids {
            let gt = json_file(&gt_dir.join(format!("{id}.json")))?;
            let url = gt["url"]
                .as_str()
                .unwrap_or("http://example.com/")
                .to_string();
            if role == Split::HeldOut {
                test_ids.insert(id.clone());
                test_urls.insert(url.clone());
            } else if test_ids.contains(&id) || test_urls.contains(&url) {
                continue;
            }
            out.push(Page {
                key: format!("wcxb/{id}"),
                split: role,
                kind: gt["_internal"]["page_type"]["primary"]
                    .as_str()
                    .unwrap_or("unknown")
                    .into(),
                html: gunzip(&dir.join(split).join("html").join(format!("{id}.html.gz")))?,
                truth: gt["ground_truth"]["main_content"]
                    .as_str()
                    .unwrap_or_default()
                    .into(),
                url,
            });
        }
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}

/// A page of trafilatura's evaluation set (`tests/evaldata.json` of
/// github.com/adbar/trafilatura, pages in `tests/eval` and `tests/cache`): snippets
/// its main text must hold (`with`) and must not (`without`).
pub struct SnippetPage {
    /// The page's URL (the key of evaldata.json).
    pub url: String,
    /// The page.
    pub html: Vec<u8>,
    /// Snippets of the main text.
    pub with: Vec<String>,
    /// Snippets of the page outside the main text.
    pub without: Vec<String>,
}

/// The pages of trafilatura's evaluation set in a clone `dir` of its repository
/// (entries whose file is missing are skipped).
pub fn load_trafilatura(dir: &Path) -> Result<Vec<SnippetPage>> {
    let index = dir.join("tests").join("evaldata.json");
    let entries = json_object(&index, "url -> {file, with, without}")?;
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for (url, e) in entries {
        let Some(file) = e["file"].as_str() else {
            continue;
        };
        let html = ["eval", "cache"]
            .iter()
            .map(|d| dir.join("tests").join(d).join(file))
            .find(|p| p.is_file());
        let Some(html) = html else { continue };
        out.push(SnippetPage {
            url,
            html: std::fs::read(&html).at(&html)?,
            with: strings(&e["with"]),
            without: strings(&e["without"]),
        });
    }
    Ok(out)
}

/// Snippet counts of one page: `with` snippets found and missed, `without`
/// snippets kept and left out (whitespace runs compare as one space).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SnippetCounts {
    /// `with` snippets in the text.
    pub found: usize,
    /// `with` snippets not in it.
    pub missed: usize,
    /// `without` snippets in it.
    pub kept: usize,
    /// `without` snippets not in it.
    pub left_out: usize,
}

impl SnippetCounts {
    /// Adds another page's counts.
    pub fn add(&mut self, o: SnippetCounts) {
        self.found += o.found;
        self.missed += o.missed;
        self.kept += o.kept;
        self.left_out += o.left_out;
    }
}

/// Counts the snippets of `page` in `text`.
pub fn snippets(page: &SnippetPage, text: &str) -> SnippetCounts {
    let norm = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let text = norm(text);
    let mut c = SnippetCounts::default();
    for w in &page.with {
        if text.contains(&norm(w)) {
            c.found += 1;
        } else {
            c.missed += 1;
        }
    }
    for w in &page.without {
        if text.contains(&norm(w)) {
            c.kept += 1;
        } else {
            c.left_out += 1;
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_compare_whitespace_collapsed() {
        let page = SnippetPage {
            url: "u".into(),
            html: Vec::new(),
            with: vec!["the  story\n goes".into(), "missing".into()],
            without: vec!["Read more".into(), "footer".into()],
        };
        let c = snippets(&page, "The day: the story goes on.\nRead more");
        assert_eq!(
            c,
            SnippetCounts {
                found: 1,
                missed: 1,
                kept: 1,
                left_out: 1
            }
        );
    }

    #[test]
    fn shingle_metric_by_hand() {
        let want = "one two three four five";
        // Shingles [1234] and [2345]; the extraction has only [1234].
        let got = "one two three four";
        let c = compare(want, got);
        assert_eq!(
            c,
            Counts {
                tp: 0.5,
                fp: 0.0,
                fn_: 0.5
            }
        );
        let s = scores(&[c, compare("a b c d", "a b c d")]);
        assert_eq!((s.precision, s.recall), (1.0, 0.75));
        assert!((s.f1 - 2.0 * 0.75 / 1.75).abs() < 1e-12);
        assert_eq!(compare("", ""), Counts::default());
        assert_eq!(
            words("Don't stop—go_on 42x"),
            ["Don", "t", "stop", "go_on", "42x"]
        );
        assert!(held_out("8a") && held_out("f0") && !held_out("7f") && !held_out("0a"));
    }
}
