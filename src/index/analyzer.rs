//! The analyzer of the index's text fields (`trawl_text`): words for alphabetic
//! scripts, dictionary words for Chinese, character bigrams for kana.
//!
//! tantivy's tokenizers split on non-alphanumeric characters only, so a run of Han
//! characters (Chinese has no spaces) would be one token and a query for one word of
//! it would find nothing. Here a text is cut into runs of one script class:
//!
//! - **Han** runs are cut into words by [jieba-rs](https://docs.rs/jieba-rs) (its
//!   dictionary and HMM for unknown words), the segmenter most Chinese search
//!   deployments use;
//! - **kana** (Hiragana, Katakana) runs give overlapping character bigrams, as
//!   Lucene's `CJKBigramFilter` does (a run of one character is one token);
//! - every other run of alphanumeric characters is one word (Latin, Cyrillic, Greek,
//!   Hangul, digits, ...).
//!
//! Tokens are then lowercased, folded to ASCII where a folding exists (`café` →
//! `cafe`) and dropped above 40 bytes. Queries go through the same analyzer, so a
//! Chinese query is cut the way the text was.

use std::collections::VecDeque;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use jieba_rs::Jieba;
use tantivy::tokenizer::{
    AsciiFoldingFilter, LowerCaser, RemoveLongFilter, TextAnalyzer, Token, TokenStream, Tokenizer,
};

/// The name the analyzer is registered under in the index.
pub const TEXT_ANALYZER: &str = "trawl_text";

/// Tokens longer than this (bytes) are dropped (hashes, base64, garbage).
const MAX_TOKEN_BYTES: usize = 40;

/// The analyzer for the index's text fields.
pub fn text_analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(ScriptTokenizer)
        .filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build()
}

/// jieba's segmenter, once loaded.
static JIEBA: OnceLock<Jieba> = OnceLock::new();

/// jieba's dictionary, loaded on first use (about 100 ms), so that a run that never
/// meets a Han character never pays for it.
fn jieba() -> &'static Jieba {
    JIEBA.get_or_init(Jieba::new)
}

/// A hint that `text` is about to be analyzed: when it holds a Han character, jieba's
/// dictionary starts loading on a thread of its own (once). Every thread that meets
/// Han text waits for the load; started while the pages are still being read, it is
/// done or nearly so by the time they are analyzed.
pub fn prepare_for(text: &str) {
    static STARTED: AtomicBool = AtomicBool::new(false);
    if STARTED.load(Ordering::Relaxed) || JIEBA.get().is_some() || !has_han(text) {
        return;
    }
    if !STARTED.swap(true, Ordering::Relaxed) {
        // Without a thread the first Han text loads it, as it would anyway.
        let _ = std::thread::Builder::new()
            .name("jieba-load".into())
            .spawn(|| {
                jieba();
            });
    }
}

/// Whether `text` holds a Han character (U+3400 to U+9FFF, where the common ones
/// are): its bytes are scanned for the UTF-8 lead bytes of that range (a pass the
/// compiler vectorizes), and only a text that has one is decoded.
fn has_han(text: &str) -> bool {
    let bytes = text.as_bytes();
    let maybe = bytes
        .chunks(64)
        .any(|c| c.iter().fold(false, |a, &b| a | (b.wrapping_sub(0xE3) < 7)));
    maybe && text.chars().any(|c| script(c) == Some(Script::Han))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Script {
    Han,
    Kana,
    Word,
}

fn script(c: char) -> Option<Script> {
    let u = c as u32;
    if (0x4E00..=0x9FFF).contains(&u)
        || (0x3400..=0x4DBF).contains(&u)
        || (0xF900..=0xFAFF).contains(&u)
        || (0x20000..=0x3134F).contains(&u)
    {
        Some(Script::Han)
    } else if (0x3040..=0x30FF).contains(&u) || (0x31F0..=0x31FF).contains(&u) {
        Some(Script::Kana)
    } else if c.is_alphanumeric() {
        Some(Script::Word)
    } else {
        None
    }
}

/// Splits text into script runs and each run into tokens (see the module doc).
#[derive(Debug, Clone, Copy, Default)]
pub struct ScriptTokenizer;

/// The tokens of one text, produced as the text is scanned (one token buffer reused;
/// the words of a Han or kana run are queued when the run is met).
pub struct ScriptTokenStream<'a> {
    text: &'a str,
    /// Where scanning goes on (bytes).
    pos: usize,
    /// Byte ranges of the current Han or kana run's tokens not handed out yet.
    pending: VecDeque<(usize, usize)>,
    token: Token,
    /// The position of the next token.
    next_position: usize,
}

impl Tokenizer for ScriptTokenizer {
    type TokenStream<'a> = ScriptTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> ScriptTokenStream<'a> {
        ScriptTokenStream {
            text,
            pos: 0,
            pending: VecDeque::new(),
            token: Token::default(),
            next_position: 0,
        }
    }
}

impl ScriptTokenStream<'_> {
    fn emit(&mut self, from: usize, to: usize) {
        self.token.offset_from = from;
        self.token.offset_to = to;
        self.token.position = self.next_position;
        self.token.position_length = 1;
        self.token.text.clear();
        self.token.text.push_str(&self.text[from..to]);
        self.next_position += 1;
    }

    /// The next run of one script class from `self.pos`: (class, start, end). ASCII
    /// is classified by the byte; other chars are decoded.
    fn next_run(&mut self) -> Option<(Script, usize, usize)> {
        let (class, start) = loop {
            let (class, len) = self.class_at(self.pos)?;
            if let Some(class) = class {
                break (class, self.pos);
            }
            self.pos += len;
        };
        let mut end = start;
        while let Some((c, len)) = self.class_at(end) {
            if c != Some(class) {
                break;
            }
            end += len;
        }
        self.pos = end;
        Some((class, start, end))
    }

    /// The class of the char at byte `at` (a char boundary) and its length; `None` at
    /// the end of the text.
    fn class_at(&self, at: usize) -> Option<(Option<Script>, usize)> {
        let b = *self.text.as_bytes().get(at)?;
        if b < 0x80 {
            let class = b.is_ascii_alphanumeric().then_some(Script::Word);
            return Some((class, 1));
        }
        let c = self.text.get(at..)?.chars().next()?;
        Some((script(c), c.len_utf8()))
    }
}

impl TokenStream for ScriptTokenStream<'_> {
    fn advance(&mut self) -> bool {
        loop {
            if let Some((from, to)) = self.pending.pop_front() {
                self.emit(from, to);
                return true;
            }
            let Some((class, start, end)) = self.next_run() else {
                return false;
            };
            match class {
                Script::Word => {
                    self.emit(start, end);
                    return true;
                }
                Script::Han => {
                    for t in jieba().cut(&self.text[start..end], true) {
                        self.pending
                            .push_back((start + t.byte_start, start + t.byte_end));
                    }
                }
                Script::Kana => {
                    let chars: Vec<(usize, char)> = self.text[start..end].char_indices().collect();
                    if chars.len() == 1 {
                        self.pending.push_back((start, end));
                    }
                    for pair in chars.windows(2) {
                        let (a, _) = pair[0];
                        let (b, c) = pair[1];
                        self.pending
                            .push_back((start + a, start + b + c.len_utf8()));
                    }
                }
            }
        }
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

/// The terms `text` is indexed under, in order (for tests and the query tools).
pub fn terms(text: &str) -> Vec<String> {
    let mut analyzer = text_analyzer();
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while stream.advance() {
        out.push(stream.token().text.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::terms;

    #[test]
    fn latin_words_are_lowercased_and_folded() {
        assert_eq!(terms("Café au LAIT, 2024!"), ["cafe", "au", "lait", "2024"]);
    }

    #[test]
    fn chinese_is_cut_into_dictionary_words() {
        let t = terms("我们在北京大学学习搜索引擎");
        assert!(t.contains(&"北京大学".to_string()), "{t:?}");
        assert!(t.contains(&"搜索引擎".to_string()), "{t:?}");
        // A query for one word finds the text: the same cut on both sides.
        assert_eq!(terms("搜索引擎"), ["搜索引擎"]);
    }

    #[test]
    fn mixed_scripts_split_at_the_boundary() {
        assert_eq!(terms("Rust语言"), ["rust", "语言"]);
    }

    #[test]
    fn han_is_detected_by_its_lead_bytes() {
        assert!(super::has_han("Rust 语言"));
        assert!(super::has_han(&format!("{}北京", "x".repeat(200))));
        assert!(!super::has_han("Café, ölçü, Ελληνικά, русский, 한국어"));
        assert!(
            !super::has_han("カタカナ"),
            "kana alone needs no dictionary"
        );
    }

    #[test]
    fn kana_gives_bigrams() {
        assert_eq!(terms("カタカナ"), ["カタ", "タカ", "カナ"]);
        assert_eq!(terms("の"), ["の"]);
    }
}
