//! Small text helpers: whitespace collapsing, char-boundary truncation, word tokens.

/// Appends `s` to `out` with every run of whitespace turned into one space;
/// `out`'s trailing space state is respected so pieces can be appended in turn.
pub fn push_collapsed(out: &mut String, s: &str) {
    let mut space = out.is_empty() || out.ends_with(' ');
    for c in s.chars() {
        if c.is_whitespace() || c == '\u{0}' {
            if !space {
                out.push(' ');
                space = true;
            }
        } else {
            out.push(c);
            space = false;
        }
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
    let mut cur = String::new();
    for c in s.chars() {
        if is_ideographic(c) {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            out.push(c.to_string());
        } else if c.is_alphanumeric() {
            cur.extend(c.to_lowercase());
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
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
    }

    #[test]
    fn tokenizes() {
        assert_eq!(tokens("Hello, World! x2"), vec!["hello", "world", "x2"]);
        assert_eq!(tokens("東京abc"), vec!["東", "京", "abc"]);
    }
}
