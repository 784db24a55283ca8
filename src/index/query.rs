//! What a user types, made into a query the grammar reads (docs/search.md, "Queries").
//!
//! People paste error messages (`TypeError: unhashable type: 'list'`), paths
//! (`os.path.join`, `/etc/hosts`), options (`--no-deps`) and code (`f(x)`, `a[0]`) into a
//! search box. tantivy's query grammar gives most of those characters a meaning
//! (`x:` a field, `'..'` a phrase, `[..]` a range, `^` a boost, `(..)` a group), so a
//! query like those fails or means something else. [`normalize`] keeps the grammar
//! where the query uses it on purpose (balanced `"phrases"`, `AND`/`OR`/`NOT`, a leading
//! `-word` or `+word`, balanced parentheses, `field:value` for a field the index has)
//! and turns every other special character into a word boundary, as the analyzer
//! would. [`words`] is the last resort when even that does not parse: the query's words
//! alone.

use super::schema::name;

/// The fields a query may name (`site:docs.rs`), as the user writes them, with the
/// index field each one means: the schema's searchable fields and `type` for
/// `content_type`.
const FIELDS: &[(&str, &str)] = &[
    ("site", name::SITE),
    ("lang", name::LANG),
    ("type", name::CONTENT_TYPE),
    (name::CONTENT_TYPE, name::CONTENT_TYPE),
    ("title", name::TITLE),
    ("url", name::URL),
    (name::ANCHORS, name::ANCHORS),
    ("anchor", name::ANCHORS),
    (name::MAIN_TEXT, name::MAIN_TEXT),
    (name::OTHER_TEXT, name::OTHER_TEXT),
    (name::URL_WORDS, name::URL_WORDS),
    (name::SEGMENT, name::SEGMENT),
];

/// Fields indexed as one untokenized string: their value is matched whole, so its
/// special characters are escaped, not split.
const RAW: &[&str] = &[
    name::SITE,
    name::LANG,
    name::CONTENT_TYPE,
    name::URL,
    name::SEGMENT,
];

/// `type:` short names and the content type each one means.
const TYPES: &[(&str, &str)] = &[
    ("html", "text/html"),
    ("htm", "text/html"),
    ("text", "text/plain"),
    ("txt", "text/plain"),
    ("plain", "text/plain"),
    ("pdf", "application/pdf"),
    ("xml", "application/xml"),
    ("json", "application/json"),
    (
        "docx",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ),
    (
        "xlsx",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ),
    (
        "pptx",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ),
    ("odt", "application/vnd.oasis.opendocument.text"),
    ("rss", "application/rss+xml"),
    ("atom", "application/atom+xml"),
];

/// Characters the grammar reads inside or around a word (tantivy's special
/// characters): outside the uses [`normalize`] keeps, they separate words.
const SPECIAL: &[char] = &[
    '+', '^', '`', ':', '{', '}', '"', '\'', '[', ']', '(', ')', '!', '\\', '*', '~', '<', '>',
    '=', '/',
];

/// The grammar's operators, kept when written in capitals between words.
const OPERATORS: &[&str] = &["AND", "OR", "NOT"];

/// The index field a query field name means (`type` -> `content_type`), if any.
fn field(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    FIELDS.iter().find(|(n, _)| *n == lower).map(|(_, f)| *f)
}

/// `text` with every special character turned into a space and leading dashes of
/// its words dropped: words only, for the analyzer to split further.
fn plain(text: &str) -> String {
    let spaced: String = text
        .chars()
        .map(|c| if SPECIAL.contains(&c) { ' ' } else { c })
        .collect();
    spaced
        .split_whitespace()
        .map(|w| w.trim_start_matches('-'))
        .filter(|w| !w.is_empty())
        .map(|w| {
            if OPERATORS.contains(&w) || w == "IN" {
                w.to_ascii_lowercase()
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The characters the grammar reads inside a word (tantivy's `ESCAPE_IN_WORD`).
const IN_WORD: &[char] = &['^', '`', ':', '{', '}', '"', '\'', '[', ']', '(', ')', '\\'];

/// A raw field's value with the characters the grammar reads in a word escaped (and
/// a leading `-`).
fn escaped(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for (i, c) in value.chars().enumerate() {
        if IN_WORD.contains(&c) || (i == 0 && c == '-') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A phrase's text as the grammar reads it between double quotes.
fn phrase(inner: &str) -> Option<String> {
    let words = plain(inner);
    (!words.is_empty()).then(|| format!("\"{words}\""))
}

/// Whether the query's parentheses group its words: each one opens a chunk (after
/// its sign) or closes one, and they open and close in order. Otherwise they are
/// code (`f(x)`) or a typo, and separate words.
fn grouping(query: &str) -> bool {
    let mut depth = 0usize;
    for (piece, _) in pieces(query) {
        let Piece::Chunk(c) = piece else { continue };
        let body = prefix(c).1;
        let opened = body.trim_start_matches('(');
        let inner = opened.trim_end_matches(')');
        if inner.contains(['(', ')']) {
            return false;
        }
        depth += body.len() - opened.len();
        let closes = opened.len() - inner.len();
        if closes > depth {
            return false;
        }
        depth -= closes;
    }
    depth == 0
}

/// One piece of the query: a chunk of non-space text, or a quoted phrase.
enum Piece<'a> {
    Chunk(&'a str),
    Phrase(&'a str),
}

/// The query's pieces: balanced `"phrases"` and the chunks between them (an
/// unmatched `"` is a word boundary). A chunk directly before a phrase is marked.
fn pieces(query: &str) -> Vec<(Piece<'_>, bool)> {
    let quotes: Vec<usize> = query.match_indices('"').map(|(i, _)| i).collect();
    // The quotes that pair up, in order; an odd last one is left unmatched.
    let paired = quotes.len() - quotes.len() % 2;
    let mut out: Vec<(Piece<'_>, bool)> = Vec::new();
    let mut at = 0;
    let chunks = |from: usize, to: usize, before_phrase: bool, out: &mut Vec<_>| {
        let text = &query[from..to];
        let ends_glued = before_phrase && !text.ends_with(char::is_whitespace);
        let words: Vec<&str> = text.split_whitespace().collect();
        let n = words.len();
        for (i, w) in words.into_iter().enumerate() {
            out.push((Piece::Chunk(w), ends_glued && i + 1 == n));
        }
    };
    for pair in quotes[..paired].chunks(2) {
        let (open, close) = (pair[0], pair[1]);
        chunks(at, open, true, &mut out);
        out.push((Piece::Phrase(&query[open + 1..close]), false));
        at = close + 1;
    }
    chunks(at, query.len(), false, &mut out);
    out
}

/// The prefix `-` or `+` of a chunk (a single one: `--flag` is a word), and the rest.
fn prefix(chunk: &str) -> (&str, &str) {
    if chunk.starts_with("--") {
        return ("", chunk);
    }
    for p in ["-", "+"] {
        if let Some(rest) = chunk.strip_prefix(p)
            && !rest.is_empty()
        {
            return (p, rest);
        }
    }
    ("", chunk)
}

/// One chunk as the grammar reads it; `glued`: a phrase follows it directly
/// (`title:"a b"`). `None` when nothing of it is left.
fn chunk(text: &str, glued: bool, parens: bool) -> Option<String> {
    if OPERATORS.contains(&text) {
        return Some(text.to_string());
    }
    let (sign, rest) = prefix(text);
    let (mut open, mut close) = (0, 0);
    let mut body = rest;
    if parens {
        let trimmed = body.trim_start_matches('(');
        open = body.len() - trimmed.len();
        body = trimmed;
        let trimmed = body.trim_end_matches(')');
        close = body.len() - trimmed.len();
        body = trimmed;
    }
    let wrap = |inner: String| format!("{sign}{}{inner}{}", "(".repeat(open), ")".repeat(close));
    if let Some((name, value)) = body.split_once(':')
        && let Some(f) = field(name)
    {
        if value.is_empty() && glued {
            // `field:"a phrase"`: the phrase follows.
            return Some(wrap(format!("{f}:")));
        }
        if value.is_empty() {
            // `type: 'list'`, a word ending a sentence of a pasted message.
            return Some(wrap(plain(name))).filter(|w| w.len() > sign.len());
        }
        if RAW.contains(&f) {
            let value = if f == name::CONTENT_TYPE {
                let lower = value.to_ascii_lowercase();
                TYPES
                    .iter()
                    .find(|(short, _)| *short == lower)
                    .map_or(lower.clone(), |(_, t)| t.to_string())
            } else {
                value.to_string()
            };
            return Some(wrap(format!("{f}:{}", escaped(&value))));
        }
        let words = plain(value);
        return match words.split_whitespace().count() {
            0 => Some(wrap(plain(name))).filter(|w| w.len() > sign.len()),
            1 => Some(wrap(format!("{f}:{words}"))),
            _ => Some(wrap(format!("{f}:\"{words}\""))),
        };
    }
    let words = plain(body);
    match words.split_whitespace().count() {
        0 if open + close > 0 => Some(wrap(String::new())),
        0 => None,
        1 => Some(wrap(words)),
        // One chunk that splits into several words (`os.path:join`, `f(x)` with
        // unbalanced parentheses): its words, kept together under a sign.
        _ if !sign.is_empty() => Some(wrap(format!("\"{words}\""))),
        _ => Some(wrap(words)),
    }
}

/// The query `query` as the grammar reads what its user meant: see the module's
/// documentation. A query of exclusions only (`-foo`) searches its words instead
/// (nothing would match otherwise).
pub fn normalize(query: &str) -> String {
    let parens = grouping(query);
    let mut out: Vec<String> = Vec::new();
    let mut glue = false;
    for (piece, glued) in pieces(query) {
        let text = match piece {
            Piece::Chunk(c) => chunk(c, glued, parens),
            Piece::Phrase(p) => phrase(p),
        };
        let Some(text) = text else {
            glue = false;
            continue;
        };
        let next_glue = glued && text.ends_with(':');
        match out.last_mut() {
            Some(last) if glue => last.push_str(&text),
            _ => out.push(text),
        }
        glue = next_glue;
    }
    if !out.is_empty() && out.iter().all(|t| t.starts_with('-')) {
        for t in &mut out {
            t.remove(0);
        }
    }
    out.join(" ")
}

/// The query's words alone, every special character a word boundary and no
/// operator: what is searched when [`normalize`]'s query does not parse.
pub fn words(query: &str) -> String {
    plain(query)
}

#[cfg(test)]
mod tests {
    use super::{normalize, words};

    #[test]
    fn what_people_paste_becomes_words() {
        let cases = [
            ("TypeError: unhashable type", "TypeError unhashable type"),
            (
                "TypeError: unhashable type: 'list'",
                "TypeError unhashable type list",
            ),
            ("os.path.join", "os.path.join"),
            ("f-string", "f-string"),
            ("read file line by line", "read file line by line"),
            ("/etc/hosts", "etc hosts"),
            ("a[0] = b(c)", "a 0 b c"),
            ("--no-deps", "no-deps"),
            ("C++ templates", "C templates"),
            ("can't connect", "can t connect"),
            ("what is 2^10?", "what is 2 10?"),
            ("say \"hello", "say hello"),
            ("(unbalanced", "unbalanced"),
            ("-foo", "foo"),
            ("IN the box", "in the box"),
        ];
        for (typed, want) in cases {
            assert_eq!(normalize(typed), want, "{typed:?}");
        }
    }

    #[test]
    fn the_grammar_stays_for_those_who_use_it() {
        let cases = [
            ("\"a phrase\" word", "\"a phrase\" word"),
            ("rust -java", "rust -java"),
            ("+must maybe", "+must maybe"),
            ("cats AND dogs", "cats AND dogs"),
            ("(cats OR dogs) -mice", "(cats OR dogs) -mice"),
            (
                "site:Docs.Rust-Lang.org borrow",
                "site:Docs.Rust-Lang.org borrow",
            ),
            ("title:\"the book\"", "title:\"the book\""),
            ("type:pdf report", "content_type:application/pdf report"),
            ("lang:de haus", "lang:de haus"),
            ("url:https://x.test/a", "url:https\\://x.test/a"),
            ("title:os.path", "title:os.path"),
            ("unknown:field", "unknown field"),
        ];
        for (typed, want) in cases {
            assert_eq!(normalize(typed), want, "{typed:?}");
        }
    }

    #[test]
    fn words_alone_have_no_grammar() {
        assert_eq!(words("NOT (a OR b): \"c"), "not a or b c");
        assert_eq!(words("::"), "");
    }
}
