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

#[cfg(test)]
mod tests {
    use super::*;

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
