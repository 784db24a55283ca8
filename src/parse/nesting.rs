//! A guard against pathological nesting. html5ever's tree builder scans the stack
//! of open elements for many start tags, so a page nested 100,000 levels deep
//! costs quadratic time. Like WebKit (whose parser caps the DOM depth at 512),
//! we flatten markup deeper than [`MAX_DEPTH`]: a fast byte scan tracks the
//! depth of open tags and, only when the limit is crossed, drops the start and
//! end tags beyond it (their text stays, so no content is lost).

use std::borrow::Cow;

/// Deepest nesting kept.
pub const MAX_DEPTH: usize = 512;

fn is_void(name: &[u8]) -> bool {
    const VOID: [&[u8]; 14] = [
        b"area", b"base", b"br", b"col", b"embed", b"hr", b"img", b"input", b"link", b"meta",
        b"source", b"track", b"wbr", b"param",
    ];
    VOID.iter().any(|v| v.eq_ignore_ascii_case(name))
}

fn is_raw_text(name: &[u8]) -> bool {
    [
        &b"script"[..],
        b"style",
        b"textarea",
        b"title",
        b"xmp",
        b"plaintext",
    ]
    .iter()
    .any(|v| v.eq_ignore_ascii_case(name))
}

/// Scans `html`; `emit` gets (kept ranges) when flattening. Returns the max depth.
fn scan(html: &str, limit: usize, mut out: Option<&mut String>) -> usize {
    let b = html.as_bytes();
    let mut depth = 0usize;
    let mut max = 0usize;
    let mut i = 0;
    let mut copied = 0;
    while let Some(p) = memchr_lt(&b[i..]) {
        let lt = i + p;
        i = lt + 1;
        if b[i..].starts_with(b"!--") {
            i = match find(&b[i + 3..], b"-->") {
                Some(q) => i + 3 + q + 3,
                None => b.len(),
            };
            continue;
        }
        let end_tag = b.get(i) == Some(&b'/');
        let name_start = if end_tag { i + 1 } else { i };
        let mut j = name_start;
        while j < b.len() && b[j].is_ascii_alphanumeric() {
            j += 1;
        }
        if j == name_start || !b[name_start].is_ascii_alphabetic() {
            continue;
        }
        let name = &b[name_start..j];
        let Some(gt) = b[j..].iter().position(|&c| c == b'>').map(|q| j + q) else {
            break;
        };
        let self_closing = gt > 0 && b[gt - 1] == b'/';
        let tag_end = gt + 1;
        i = tag_end;
        let drop = if end_tag {
            let d = depth > limit;
            depth = depth.saturating_sub(1);
            d
        } else if is_void(name) || self_closing {
            false
        } else {
            depth += 1;
            max = max.max(depth);
            if is_raw_text(name) {
                // Skip the element's raw text up to its end tag.
                let close = find_ci_end_tag(&b[i..], name);
                i = close.map(|q| i + q).unwrap_or(b.len());
            }
            depth > limit
        };
        if drop && let Some(o) = out.as_deref_mut() {
            o.push_str(&html[copied..lt]);
            copied = tag_end;
        }
    }
    if let Some(o) = out {
        o.push_str(&html[copied..]);
    }
    max
}

fn memchr_lt(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'<')
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn find_ci_end_tag(hay: &[u8], name: &[u8]) -> Option<usize> {
    let mut k = 0;
    while let Some(p) = memchr_lt(&hay[k..]) {
        let at = k + p;
        let rest = &hay[at + 1..];
        if rest.first() == Some(&b'/')
            && rest.len() > name.len()
            && rest[1..=name.len()].eq_ignore_ascii_case(name)
        {
            return Some(at);
        }
        k = at + 1;
    }
    None
}

/// `html` unchanged when its nesting stays within `limit`, else flattened.
pub fn flatten(html: &str, limit: usize) -> Cow<'_, str> {
    if scan(html, limit, None) <= limit {
        return Cow::Borrowed(html);
    }
    let mut out = String::with_capacity(html.len());
    scan(html, limit, Some(&mut out));
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shallow_pages_are_untouched() {
        let s = "<html><body><div><p>a<br>b</p><script>if (a<b) {}</script><!-- <div><div> --></div></body></html>";
        assert!(matches!(flatten(s, 4), Cow::Borrowed(_)));
        assert!(matches!(flatten(s, 3), Cow::Owned(_)));
    }

    #[test]
    fn deep_pages_are_flattened() {
        let s = "<div>".repeat(10) + "x" + &"</div>".repeat(10);
        let f = flatten(&s, 3);
        assert_eq!(f, "<div><div><div>x</div></div></div>");
    }
}
