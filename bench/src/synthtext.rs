//! Synthetic page text for the search benchmarks: words of a generated vocabulary
//! drawn with a Zipf distribution (exponent 1.0, as word frequencies in real text),
//! deterministic per page, and the mixed query load measured against them.
//!
//! The vocabulary ([`Vocabulary`]) is [`VOCABULARY`] pseudo-words built from
//! syllables, so posting lists range from a handful of documents (rare words) to
//! nearly every document (the most common words), as in an index of real pages.

use testweb::rng::{Rng, Zipf};

/// Words in the vocabulary.
pub const VOCABULARY: usize = 30_000;

const ONSETS: &[&str] = &[
    "b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br",
    "st", "tr", "pl", "gr", "ch", "sh", "th",
];
const NUCLEI: &[&str] = &["a", "e", "i", "o", "u", "ai", "ou", "ea"];

/// The words and the Zipf distribution over them (rank 0 is the most common).
#[derive(Debug)]
pub struct Vocabulary {
    words: Vec<String>,
    zipf: Zipf,
}

impl Default for Vocabulary {
    fn default() -> Self {
        Vocabulary::new()
    }
}

impl Vocabulary {
    /// The benchmark vocabulary: [`VOCABULARY`] distinct words of 1 or 2 syllables,
    /// shorter words more common (as in real text).
    pub fn new() -> Vocabulary {
        // Word i spells i in bijective base-|syllables| numbering: distinct words,
        // one syllable for the most common ones, then two, then three.
        let syllables: Vec<String> = ONSETS
            .iter()
            .flat_map(|o| NUCLEI.iter().map(move |n| format!("{o}{n}")))
            .collect();
        let base = syllables.len();
        let words = (0..VOCABULARY)
            .map(|i| {
                let mut n = i + 1;
                let mut w = String::new();
                while n > 0 {
                    n -= 1;
                    w.push_str(&syllables[n % base]);
                    n /= base;
                }
                w
            })
            .collect();
        Vocabulary {
            words,
            zipf: Zipf::new(VOCABULARY, 1.0),
        }
    }

    /// A word drawn by frequency.
    pub fn draw<'a>(&'a self, rng: &mut Rng) -> &'a str {
        &self.words[self.zipf.sample(rng)]
    }

    /// The word of frequency rank `rank` (clamped).
    pub fn word(&self, rank: usize) -> &str {
        &self.words[rank.min(self.words.len() - 1)]
    }

    /// `n` words of the page `key`, in sentences of 8 to 20 words (deterministic).
    pub fn text(&self, key: &str, n: usize) -> String {
        let mut rng = Rng::derive(1, key, 0);
        let mut s = String::with_capacity(n * 7);
        let mut left = 0;
        for i in 0..n {
            if left == 0 {
                if i > 0 {
                    s.push_str(". ");
                }
                left = rng.range(8, 21);
            } else {
                s.push(' ');
            }
            s.push_str(self.draw(&mut rng));
            left -= 1;
        }
        if n > 0 {
            s.push('.');
        }
        s
    }

    /// A title of 3 to 6 words for the page `key`.
    pub fn title(&self, key: &str) -> String {
        let mut rng = Rng::derive(1, key, 1);
        let n = rng.range(3, 7);
        (0..n)
            .map(|_| self.draw(&mut rng))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The kinds of query in the latency benchmark's mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryKind {
    /// One word.
    OneWord,
    /// Two words (both optional or both required, as the query parser decides).
    TwoWords,
    /// A quoted phrase of two or three consecutive words of a page.
    Phrase,
    /// One word with a `site:HOST` filter.
    Site,
}

impl QueryKind {
    /// Its name in the benchmark's table.
    pub fn name(self) -> &'static str {
        match self {
            QueryKind::OneWord => "one word",
            QueryKind::TwoWords => "two words",
            QueryKind::Phrase => "phrase",
            QueryKind::Site => "site:",
        }
    }
}

/// `n` queries, a quarter of each kind in turn: words by frequency (so common
/// and rare words both occur), phrases cut from the text of the pages `pages` names
/// (so they match), `site:` one of `hosts`.
pub fn query_mix(
    vocab: &Vocabulary,
    pages: &[String],
    hosts: &[String],
    words_per_page: usize,
    n: usize,
) -> Vec<(QueryKind, String)> {
    let mut rng = Rng::new(17);
    (0..n)
        .map(|i| match i % 4 {
            0 => (QueryKind::OneWord, vocab.draw(&mut rng).to_string()),
            1 => (
                QueryKind::TwoWords,
                format!("{} {}", vocab.draw(&mut rng), vocab.draw(&mut rng)),
            ),
            2 => {
                let page = if pages.is_empty() {
                    String::new()
                } else {
                    pages[rng.below(pages.len())].clone()
                };
                let text = vocab.text(&page, words_per_page);
                let words: Vec<&str> = text
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .collect();
                let len = rng.range(2, 4).min(words.len().max(1));
                let start = rng.below(words.len().saturating_sub(len) + 1);
                let phrase = words.get(start..start + len).unwrap_or(&[]).join(" ");
                (QueryKind::Phrase, format!("\"{phrase}\""))
            }
            _ => {
                let host = hosts
                    .get(rng.below(hosts.len().max(1)))
                    .cloned()
                    .unwrap_or_default();
                (
                    QueryKind::Site,
                    format!("{} site:{host}", vocab.draw(&mut rng)),
                )
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vocabulary_and_text_are_deterministic() {
        let v = Vocabulary::new();
        assert_eq!(
            v.words
                .iter()
                .collect::<std::collections::HashSet<_>>()
                .len(),
            VOCABULARY
        );
        assert_eq!(v.text("http://a/", 50), v.text("http://a/", 50));
        assert_ne!(v.text("http://a/", 50), v.text("http://b/", 50));
        let t = v.text("http://a/", 50);
        assert_eq!(t.split_whitespace().count(), 50);
        assert_eq!(
            v.title("x").split(' ').count(),
            v.title("x").split(' ').count()
        );
    }

    #[test]
    fn phrases_come_from_the_pages() {
        let v = Vocabulary::new();
        let pages = vec!["http://h0/p1".to_string()];
        let q = query_mix(&v, &pages, &["h0".into()], 100, 8);
        let text = v.text("http://h0/p1", 100).replace('.', "");
        for (kind, q) in &q {
            if *kind == QueryKind::Phrase {
                let p = q.trim_matches('"');
                assert!(text.contains(p), "{p}");
            }
        }
        assert!(q[3].1.ends_with(" site:h0"));
    }
}
