//! Evaluation of the parser on the shared corpus of saved pages
//! (`<corpora>/pages/<name>/`: `source.html`, `expected.html` = readability's
//! main content, `derived-links.json` = links found by html5lib + ada-url).
//! Used by the corpus tests and by `parsebench`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use url::Url;

use trawl::error::{Error, IoContext, Result};
use trawl::parse::html;
use trawl::parse::links;
use trawl::parse::maintext;
use trawl::parse::text::tokens;

/// The URL every corpus page is taken to live at.
pub const PAGE_URL: &str = "http://fakehost/test/page.html";

/// The corpora directory: `$TRAWL_CORPORA`, else `<workspace>/../shared/corpora`,
/// else `/work/shared/corpora`; `None` when none exists.
pub fn corpora_dir() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("TRAWL_CORPORA") {
        return Some(PathBuf::from(p)).filter(|p| p.is_dir());
    }
    [
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpora"),
        PathBuf::from("/work/shared/corpora"),
    ]
    .into_iter()
    .find(|p| p.is_dir())
}

/// One link of `derived-links.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct DerivedLink {
    /// `a` or `area`.
    pub tag: String,
    /// The resolved URL (may be `null` when unresolvable).
    pub url: Option<String>,
    /// The link's text.
    #[serde(default)]
    pub text: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct DerivedLinks {
    title: Option<String>,
    links: Vec<DerivedLink>,
}

/// One corpus page.
#[derive(Debug, Clone)]
pub struct CorpusPage {
    /// Folder name.
    pub name: String,
    /// `source.html` bytes.
    pub source: Vec<u8>,
    /// `expected.html` bytes (readability's main content).
    pub expected: Vec<u8>,
    /// The derived links.
    pub links: Vec<DerivedLink>,
    /// The derived title.
    pub title: Option<String>,
}

/// Loads every page of `<corpora>/pages` that has source, expected and links.
pub fn load_pages(corpora: &Path) -> Result<Vec<CorpusPage>> {
    let dir = corpora.join("pages");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .at(&dir)?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("source.html").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let p = dir.join(&name);
        let source = std::fs::read(p.join("source.html")).at(p.join("source.html"))?;
        let expected = std::fs::read(p.join("expected.html")).unwrap_or_default();
        let lp = p.join("derived-links.json");
        let derived: DerivedLinks = match std::fs::read(&lp) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| {
                Error::input(lp.display().to_string(), format!("invalid JSON: {e}"))
            })?,
            Err(_) => DerivedLinks {
                title: None,
                links: Vec::new(),
            },
        };
        out.push(CorpusPage {
            name,
            source,
            expected,
            links: derived.links,
            title: derived.title,
        });
    }
    Ok(out)
}

/// Token-level precision, recall and F1 of `got` against `want` (multisets of
/// lowercase word tokens). Two empty texts score 1.
pub fn token_prf(got: &str, want: &str) -> (f64, f64, f64) {
    let g = tokens(got);
    let w = tokens(want);
    if g.is_empty() && w.is_empty() {
        return (1.0, 1.0, 1.0);
    }
    let mut counts: HashMap<&str, i64> = HashMap::new();
    for t in &w {
        *counts.entry(t).or_default() += 1;
    }
    let mut overlap = 0i64;
    for t in &g {
        if let Some(c) = counts.get_mut(t.as_str())
            && *c > 0
        {
            *c -= 1;
            overlap += 1;
        }
    }
    let p = if g.is_empty() {
        0.0
    } else {
        overlap as f64 / g.len() as f64
    };
    let r = if w.is_empty() {
        0.0
    } else {
        overlap as f64 / w.len() as f64
    };
    let f = if p + r == 0.0 {
        0.0
    } else {
        2.0 * p * r / (p + r)
    };
    (p, r, f)
}

/// The visible text of an HTML document (for expected.html).
pub fn visible_text(html_bytes: &[u8]) -> String {
    let doc = scraper::Html::parse_document(&String::from_utf8_lossy(html_bytes));
    html::walk(&doc, "").text()
}

/// Per-page evaluation.
#[derive(Debug, Clone)]
pub struct PageScore {
    /// Page name.
    pub name: String,
    /// Main-text token precision / recall / F1 against expected.html.
    pub prf: (f64, f64, f64),
    /// F1 of our a/area link URL set against derived-links.json's.
    pub link_f1: f64,
    /// Whether our title equals the derived one (whitespace collapsed).
    pub title_match: bool,
}

/// Evaluates one page (main text, links, title).
pub fn evaluate_page(page: &CorpusPage) -> PageScore {
    let src = trawl::parse::charset::decode(&page.source, Some("text/html"), None, true).text;
    let doc = scraper::Html::parse_document(&src);
    let ex = html::walk(&doc, "trawl");
    let main = maintext::main_text(&ex).unwrap_or_default();
    let want = visible_text(&page.expected);
    let prf = token_prf(&main, &want);
    let page_url = Url::parse(PAGE_URL).ok();
    let mine: HashSet<String> = match &page_url {
        Some(u) => {
            let base = links::base_url(u, ex.base_href.as_deref());
            ex.links
                .iter()
                .filter(|l| l.tag == "a" || l.tag == "area")
                .filter_map(|l| links::resolve_raw(&base, &l.href))
                .map(|u| u.to_string())
                .collect()
        }
        None => HashSet::new(),
    };
    let theirs: HashSet<String> = page
        .links
        .iter()
        .filter_map(|l| l.url.as_deref())
        .filter_map(|s| Url::parse(s).ok().map(|u| u.to_string()))
        .collect();
    let link_f1 = set_f1(&mine, &theirs);
    let norm = |s: &str| trawl::parse::text::collapse(s);
    let title_match =
        ex.title.as_deref().map(norm) == page.title.as_deref().map(norm).filter(|t| !t.is_empty());
    PageScore {
        name: page.name.clone(),
        prf,
        link_f1,
        title_match,
    }
}

fn set_f1(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let inter = a.intersection(b).count() as f64;
    2.0 * inter / (a.len() + b.len()) as f64
}

/// Means over pages.
#[derive(Debug, Clone, Default)]
pub struct CorpusReport {
    /// Pages evaluated.
    pub pages: usize,
    /// Mean main-text precision.
    pub precision: f64,
    /// Mean main-text recall.
    pub recall: f64,
    /// Mean main-text F1.
    pub f1: f64,
    /// Mean link-set F1.
    pub link_f1: f64,
    /// Share of pages whose title matches.
    pub title_match: f64,
}

/// Averages page scores.
pub fn report(scores: &[PageScore]) -> CorpusReport {
    let n = scores.len().max(1) as f64;
    CorpusReport {
        pages: scores.len(),
        precision: scores.iter().map(|s| s.prf.0).sum::<f64>() / n,
        recall: scores.iter().map(|s| s.prf.1).sum::<f64>() / n,
        f1: scores.iter().map(|s| s.prf.2).sum::<f64>() / n,
        link_f1: scores.iter().map(|s| s.link_f1).sum::<f64>() / n,
        title_match: scores.iter().filter(|s| s.title_match).count() as f64 / n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prf_counts_multisets() {
        let (p, r, f) = token_prf("a b b c", "a b d");
        assert!((p - 0.5).abs() < 1e-9 && (r - 2.0 / 3.0).abs() < 1e-9);
        assert!((f - 2.0 * 0.5 * (2.0 / 3.0) / (0.5 + 2.0 / 3.0)).abs() < 1e-9);
        assert_eq!(token_prf("", ""), (1.0, 1.0, 1.0));
    }
}
