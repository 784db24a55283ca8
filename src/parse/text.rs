//! Small text helpers: whitespace collapsing, char-boundary truncation, word tokens.

/// Whether `c` separates words for [`push_collapsed`]: Unicode whitespace or NUL.
#[inline]
fn is_space(c: char) -> bool {
    if c.is_ascii() {
        matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{0}')
    } else {
        c.is_whitespace()
    }
}

/// Appends `s` to `out` with every run of whitespace turned into one space;
/// `out`'s trailing space state is respected so pieces can be appended in turn.
pub fn push_collapsed(out: &mut String, s: &str) {
    let mut space = out.is_empty() || out.ends_with(' ');
    // Copies runs of non-space text in one go rather than char by char.
    let mut run: Option<usize> = None;
    for (i, c) in s.char_indices() {
        if is_space(c) {
            if let Some(start) = run.take() {
                out.push_str(&s[start..i]);
                space = false;
            }
            if !space {
                out.push(' ');
                space = true;
            }
        } else if run.is_none() {
            run = Some(i);
        }
    }
    if let Some(start) = run {
        out.push_str(&s[start..]);
    }
}

/// `s` with whitespace runs collapsed to single spaces and trimmed.
pub fn collapse(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_collapsed(&mut out, s);
    if out.ends_with(' ') {
        out.pop();
    }
    out
}

/// `s` cut to at most `max` chars (on a char boundary).
pub fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => s[..i].trim_end().to_string(),
        None => s.to_string(),
    }
}

/// Lowercase word tokens (runs of alphanumeric chars). CJK text without spaces
/// yields one token per ideograph so shingles and overlap measures still work.
pub fn tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(s, |t| out.push(t.to_string()));
    out
}

/// Calls `f` with each of [`tokens`]`(s)` in turn, without allocating a string
/// per token (one buffer is reused).
pub fn for_each_token(s: &str, mut f: impl FnMut(&str)) {
    let mut cur = String::new();
    for c in s.chars() {
        if c.is_ascii() {
            if c.is_ascii_alphanumeric() {
                cur.push(c.to_ascii_lowercase());
            } else if !cur.is_empty() {
                f(&cur);
                cur.clear();
            }
        } else if is_ideographic(c) {
            if !cur.is_empty() {
                f(&cur);
                cur.clear();
            }
            let mut b = [0u8; 4];
            f(c.encode_utf8(&mut b));
        } else if c.is_alphanumeric() {
            cur.extend(c.to_lowercase());
        } else if !cur.is_empty() {
            f(&cur);
            cur.clear();
        }
    }
    if !cur.is_empty() {
        f(&cur);
    }
}

fn is_ideographic(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xAC00..=0xD7AF)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapses_and_truncates() {
        assert_eq!(collapse("  a \n\t b\u{0}c  "), "a b c");
        assert_eq!(truncate_chars("héllo wörld", 7), "héllo w");
        assert_eq!(truncate_chars("日本語", 2), "日本");
        assert_eq!(truncate_chars("abc", 10), "abc");
        let mut s = String::from("a ");
        push_collapsed(&mut s, "  b");
        assert_eq!(s, "a b");
        push_collapsed(&mut s, "\u{a0}c\u{3000}\u{b}d\u{85}é ");
        assert_eq!(s, "a b c d é ");
    }

    #[test]
    fn tokenizes() {
        assert_eq!(tokens("Hello, World! x2"), vec!["hello", "world", "x2"]);
        assert_eq!(tokens("東京abc"), vec!["東", "京", "abc"]);
        assert_eq!(tokens("ÉTÉ déjà-vu ß"), vec!["été", "déjà", "vu", "ß"]);
    }
}
