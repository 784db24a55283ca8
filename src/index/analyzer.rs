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

use std::sync::OnceLock;

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

/// jieba's dictionary, loaded on first use (a few hundred milliseconds), so that a
/// run that never meets a Han character never pays for it.
fn jieba() -> &'static Jieba {
    static JIEBA: OnceLock<Jieba> = OnceLock::new();
    JIEBA.get_or_init(Jieba::new)
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

/// The tokens of one text, computed up front.
pub struct ScriptTokenStream {
    tokens: Vec<Token>,
    next: usize,
}

impl Tokenizer for ScriptTokenizer {
    type TokenStream<'a> = ScriptTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> ScriptTokenStream {
        let mut tokens = Vec::new();
        let mut push = |from: usize, to: usize| {
            tokens.push(Token {
                offset_from: from,
                offset_to: to,
                position: tokens.len(),
                text: text[from..to].to_string(),
                position_length: 1,
            })
        };
        let mut run: Option<(Script, usize)> = None;
        let mut close = |run: Option<(Script, usize)>, end: usize| {
            let Some((class, start)) = run else { return };
            match class {
                Script::Word => push(start, end),
                Script::Han => {
                    for t in jieba().cut(&text[start..end], true) {
                        push(start + t.byte_start, start + t.byte_end);
                    }
                }
                Script::Kana => {
                    let chars: Vec<(usize, char)> = text[start..end].char_indices().collect();
                    if chars.len() == 1 {
                        push(start, end);
                    }
                    for pair in chars.windows(2) {
                        let (a, _) = pair[0];
                        let (b, c) = pair[1];
                        push(start + a, start + b + c.len_utf8());
                    }
                }
            }
        };
        for (i, c) in text.char_indices() {
            let class = script(c);
            match (run, class) {
                (Some((current, _)), Some(class)) if current == class => {}
                (_, class) => {
                    close(run, i);
                    run = class.map(|class| (class, i));
                }
            }
        }
        close(run, text.len());
        ScriptTokenStream { tokens, next: 0 }
    }
}

impl TokenStream for ScriptTokenStream {
    fn advance(&mut self) -> bool {
        if self.next < self.tokens.len() {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        &self.tokens[self
            .next
            .saturating_sub(1)
            .min(self.tokens.len().saturating_sub(1))]
    }

    fn token_mut(&mut self) -> &mut Token {
        let i = self
            .next
            .saturating_sub(1)
            .min(self.tokens.len().saturating_sub(1));
        &mut self.tokens[i]
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
    fn kana_gives_bigrams() {
        assert_eq!(terms("カタカナ"), ["カタ", "タカ", "カナ"]);
        assert_eq!(terms("の"), ["の"]);
    }
}
