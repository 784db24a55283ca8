//! Character-set detection and decoding, in the order browsers use:
//! byte-order mark, the HTTP `Content-Type` charset, a `<meta charset>` /
//! `http-equiv` prescan of the first 1024 bytes, then statistical detection
//! (chardetng) for pages that declare nothing.
//!
//! Declarations lie. A declared legacy charset is overridden by UTF-8 when the
//! bytes contain non-ASCII and are entirely valid UTF-8 (legacy multi-byte text
//! is almost never valid UTF-8 by accident). A single-byte declaration is
//! overridden by chardetng's guess when the guess is for another writing system
//! and decodes cleanly (a single-byte lie never shows as decode errors). A
//! declaration whose decoding produces errors is replaced by chardetng's guess
//! when that guess decodes cleanly. Every override is recorded with source
//! `detected` and the original label kept in `declared`.

use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE, WINDOWS_1252, X_USER_DEFINED};

/// How the charset was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CharsetSource {
    /// A byte-order mark.
    Bom,
    /// The HTTP `Content-Type` header.
    HttpHeader,
    /// A `<meta>` declaration in the first 1024 bytes.
    Meta,
    /// chardetng (nothing declared, or the declaration was wrong).
    Detected,
}

impl CharsetSource {
    /// The value stored in `parse_data.charset_source`.
    pub fn as_str(self) -> &'static str {
        match self {
            CharsetSource::Bom => "bom",
            CharsetSource::HttpHeader => "http_header",
            CharsetSource::Meta => "meta",
            CharsetSource::Detected => "detected",
        }
    }
}

/// A decoded document.
#[derive(Debug, Clone)]
pub struct Decoded {
    /// The text.
    pub text: String,
    /// The encoding used (WHATWG name, e.g. `Shift_JIS`).
    pub encoding: &'static Encoding,
    /// How it was chosen.
    pub source: CharsetSource,
    /// The declared label when a declaration was overridden.
    pub declared: Option<String>,
    /// Whether decoding met malformed bytes (replaced by U+FFFD).
    pub had_errors: bool,
}

/// The `charset` parameter of a `Content-Type` value, if any.
pub fn charset_param(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        if k.trim().eq_ignore_ascii_case("charset") {
            let v = v.trim().trim_matches(|c| c == '"' || c == '\'').trim();
            (!v.is_empty()).then_some(v)
        } else {
            None
        }
    })
}

/// Decodes `bytes`; `content_type` is the HTTP header value, `url_tld` the
/// page's top-level domain (a hint for detection), `html` whether to prescan
/// for `<meta>` declarations.
pub fn decode(
    bytes: &[u8],
    content_type: Option<&str>,
    url_tld: Option<&str>,
    html: bool,
) -> Decoded {
    if let Some((enc, bom_len)) = Encoding::for_bom(bytes) {
        let (text, had_errors) = enc.decode_without_bom_handling(&bytes[bom_len..]);
        return Decoded {
            text: text.into_owned(),
            encoding: enc,
            source: CharsetSource::Bom,
            declared: None,
            had_errors,
        };
    }
    let header = content_type
        .and_then(charset_param)
        .and_then(|l| Encoding::for_label(l.as_bytes()).map(|e| (l, e)));
    let declared = match header {
        Some((l, e)) => Some((l.to_string(), e, CharsetSource::HttpHeader)),
        None if html => prescan_meta(&bytes[..bytes.len().min(1024)])
            .map(|(l, e)| (l, fix_meta_encoding(e), CharsetSource::Meta)),
        None => None,
    };
    match declared {
        Some((label, enc, source)) => {
            if enc != UTF_8 && !bytes.is_ascii() && std::str::from_utf8(bytes).is_ok() {
                return finish(bytes, UTF_8, CharsetSource::Detected, Some(label));
            }
            if enc.is_single_byte() && non_ascii(bytes) >= MIN_NON_ASCII_TO_OVERRIDE {
                // A single-byte declaration decodes any bytes without errors, so
                // a lie shows only as text in the wrong script: trust chardetng
                // when it sees another script and its guess decodes cleanly.
                let guess = detect(bytes, url_tld);
                if guess != UTF_8
                    && script_of(guess) != script_of(enc)
                    && let Some(d) = clean_guess(bytes, guess, &label)
                {
                    return d;
                }
            }
            let (text, had_errors) = decode_with(bytes, enc);
            if had_errors {
                let guess = detect(bytes, url_tld);
                if guess != enc
                    && let Some(d) = clean_guess(bytes, guess, &label)
                {
                    return d;
                }
            }
            Decoded {
                text,
                encoding: enc,
                source,
                declared: None,
                had_errors,
            }
        }
        None => finish(bytes, detect(bytes, url_tld), CharsetSource::Detected, None),
    }
}

/// Non-ASCII bytes needed before chardetng may overrule a single-byte declaration.
const MIN_NON_ASCII_TO_OVERRIDE: usize = 16;

fn non_ascii(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| !b.is_ascii()).count()
}

/// The writing system an encoding is for (single-byte families; each
/// multi-byte CJK encoding is its own).
fn script_of(e: &'static Encoding) -> &'static str {
    match e.name() {
        "windows-1252" | "windows-1250" | "windows-1254" | "windows-1257" | "windows-1258"
        | "ISO-8859-2" | "ISO-8859-3" | "ISO-8859-4" | "ISO-8859-10" | "ISO-8859-13"
        | "ISO-8859-14" | "ISO-8859-15" | "ISO-8859-16" | "macintosh" => "latin",
        "windows-1251" | "KOI8-R" | "KOI8-U" | "ISO-8859-5" | "IBM866" | "x-mac-cyrillic" => {
            "cyrillic"
        }
        "windows-1253" | "ISO-8859-7" => "greek",
        "windows-1255" | "ISO-8859-8" | "ISO-8859-8-I" => "hebrew",
        "windows-1256" | "ISO-8859-6" => "arabic",
        "windows-874" => "thai",
        _ => e.name(),
    }
}

fn finish(
    bytes: &[u8],
    enc: &'static Encoding,
    source: CharsetSource,
    declared: Option<String>,
) -> Decoded {
    let (text, had_errors) = decode_with(bytes, enc);
    Decoded {
        text,
        encoding: enc,
        source,
        declared,
        had_errors,
    }
}

/// chardetng's `guess` overriding the declared `label`, if it decodes without errors.
fn clean_guess(bytes: &[u8], guess: &'static Encoding, label: &str) -> Option<Decoded> {
    let (text, had_errors) = decode_with(bytes, guess);
    (!had_errors).then(|| Decoded {
        text,
        encoding: guess,
        source: CharsetSource::Detected,
        declared: Some(label.to_string()),
        had_errors: false,
    })
}

fn decode_with(bytes: &[u8], enc: &'static Encoding) -> (String, bool) {
    let (text, had_errors) = enc.decode_without_bom_handling(bytes);
    (text.into_owned(), had_errors)
}

/// chardetng's guess (UTF-8 allowed).
pub fn detect(bytes: &[u8], tld: Option<&str>) -> &'static Encoding {
    let mut det = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
    // The first 64 KiB are plenty and bound the cost on huge pages.
    let sample = &bytes[..bytes.len().min(64 * 1024)];
    det.feed(sample, sample.len() == bytes.len());
    det.guess(tld.map(str::as_bytes), chardetng::Utf8Detection::Allow)
}

/// A `<meta>` declaring UTF-16 means UTF-8 (the bytes were ASCII-compatible
/// to be read at all), and `x-user-defined` means windows-1252 (HTML spec).
fn fix_meta_encoding(e: &'static Encoding) -> &'static Encoding {
    if e == UTF_16BE || e == UTF_16LE {
        UTF_8
    } else if e == X_USER_DEFINED {
        WINDOWS_1252
    } else {
        e
    }
}

/// The HTML spec's prescan ("get an encoding"), simplified: walks tags in the
/// first bytes, skipping comments, and returns the first `<meta charset>` or
/// `<meta http-equiv=content-type content="...charset=...">` with a known label.
pub fn prescan_meta(head: &[u8]) -> Option<(String, &'static Encoding)> {
    let mut i = 0;
    while i < head.len() {
        if head[i] != b'<' {
            i += 1;
            continue;
        }
        if head[i..].starts_with(b"<!--") {
            i = match find(&head[i + 4..], b"-->") {
                Some(p) => i + 4 + p + 3,
                None => return None,
            };
            continue;
        }
        let rest = &head[i + 1..];
        if rest.len() >= 5
            && rest[..4].eq_ignore_ascii_case(b"meta")
            && (rest[4].is_ascii_whitespace() || rest[4] == b'/')
        {
            let (attrs, end) = parse_attrs(&head[i + 5..]);
            if let Some(found) = meta_charset(&attrs) {
                return Some(found);
            }
            i += 5 + end;
            continue;
        }
        // Any other tag: skip to its end.
        match head[i..].iter().position(|&b| b == b'>') {
            Some(p) => i += p + 1,
            None => return None,
        }
    }
    None
}

fn meta_charset(attrs: &[(String, String)]) -> Option<(String, &'static Encoding)> {
    let get = |k: &str| attrs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    if let Some(cs) = get("charset") {
        let cs = cs.trim();
        return Encoding::for_label(cs.as_bytes()).map(|e| (cs.to_string(), e));
    }
    let equiv = get("http-equiv")?;
    if !equiv.trim().eq_ignore_ascii_case("content-type") {
        return None;
    }
    let content = get("content")?;
    let lower = content.to_ascii_lowercase();
    let pos = lower.find("charset")?;
    let after = content[pos + 7..].trim_start();
    let after = after.strip_prefix('=')?.trim_start();
    let label: String = after
        .trim_start_matches(['"', '\''])
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, ';' | '"' | '\''))
        .collect();
    Encoding::for_label(label.as_bytes()).map(|e| (label, e))
}

/// Parses attributes up to the closing `>`; returns them (names lowercased)
/// and the offset just past the tag.
fn parse_attrs(s: &[u8]) -> (Vec<(String, String)>, usize) {
    let mut attrs = Vec::new();
    let mut i = 0;
    loop {
        while i < s.len() && (s[i].is_ascii_whitespace() || s[i] == b'/') {
            i += 1;
        }
        if i >= s.len() {
            return (attrs, i);
        }
        if s[i] == b'>' {
            return (attrs, i + 1);
        }
        let start = i;
        while i < s.len() && !s[i].is_ascii_whitespace() && !matches!(s[i], b'=' | b'>' | b'/') {
            i += 1;
        }
        let name = String::from_utf8_lossy(&s[start..i]).to_ascii_lowercase();
        while i < s.len() && s[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut value = String::new();
        if i < s.len() && s[i] == b'=' {
            i += 1;
            while i < s.len() && s[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < s.len() && (s[i] == b'"' || s[i] == b'\'') {
                let q = s[i];
                i += 1;
                let vs = i;
                while i < s.len() && s[i] != q {
                    i += 1;
                }
                value = String::from_utf8_lossy(&s[vs..i]).into_owned();
                i = (i + 1).min(s.len());
            } else {
                let vs = i;
                while i < s.len() && !s[i].is_ascii_whitespace() && s[i] != b'>' {
                    i += 1;
                }
                value = String::from_utf8_lossy(&s[vs..i]).into_owned();
            }
        }
        if !name.is_empty() && !attrs.iter().any(|(n, _)| *n == name) {
            attrs.push((name, value));
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use encoding_rs::{BIG5, EUC_KR, GB18030, GBK, SHIFT_JIS, WINDOWS_1251};

    /// One sample text per charset the parser must decode, as `(encoding label, text)`
    /// (tests/data/charset_samples.txt, shared with the other charset tests).
    fn samples() -> Vec<(&'static str, &'static str)> {
        let samples = include_str!("../../tests/data/charset_samples.txt")
            .lines()
            .filter_map(|line| line.split_once('\t'))
            .collect::<Vec<_>>();
        let labels: Vec<&str> = samples.iter().map(|(label, _)| *label).collect();
        assert_eq!(
            labels,
            [
                "GBK",
                "gb18030",
                "Big5",
                "Shift_JIS",
                "EUC-KR",
                "windows-1251",
                "windows-1252",
                "UTF-8"
            ],
            "tests/data/charset_samples.txt must hold one sample per listed charset"
        );
        samples
    }

    fn page(body: &str, meta: Option<&str>) -> String {
        let m = meta
            .map(|l| format!("<meta charset=\"{l}\">"))
            .unwrap_or_default();
        format!(
            "<!doctype html><html><head>{m}<title>t</title></head><body><p>{body}</p><p>{body}</p></body></html>"
        )
    }

    fn enc(label: &str) -> &'static Encoding {
        Encoding::for_label(label.as_bytes()).unwrap()
    }

    #[test]
    fn labels_are_known() {
        for e in [
            GBK,
            GB18030,
            BIG5,
            SHIFT_JIS,
            EUC_KR,
            WINDOWS_1251,
            WINDOWS_1252,
            UTF_8,
        ] {
            assert_eq!(enc(e.name()), e);
        }
    }

    #[test]
    fn honest_header_declaration() {
        for (label, text) in samples().iter() {
            let html = page(text, None);
            let (bytes, _, _) = enc(label).encode(&html);
            let ct = format!("text/html; charset={label}");
            let d = decode(&bytes, Some(&ct), None, true);
            assert_eq!(d.source, CharsetSource::HttpHeader, "{label}");
            assert!(d.text.contains(text), "{label}: {}", d.text);
        }
    }

    #[test]
    fn honest_meta_declaration() {
        for (label, text) in samples().iter() {
            let html = page(text, Some(label));
            let (bytes, _, _) = enc(label).encode(&html);
            let d = decode(&bytes, Some("text/html"), None, true);
            assert_eq!(d.source, CharsetSource::Meta, "{label}");
            assert!(d.text.contains(text), "{label}");
        }
    }

    #[test]
    fn undeclared_is_detected() {
        for (label, text) in samples().iter() {
            let html = page(text, None);
            let (bytes, _, _) = enc(label).encode(&html);
            let d = decode(&bytes, None, None, true);
            assert_eq!(d.source, CharsetSource::Detected, "{label}");
            assert!(
                d.text.contains(text),
                "{label}: decoded as {}",
                d.encoding.name()
            );
        }
    }

    #[test]
    fn lying_declarations_are_overridden() {
        for (label, text) in samples().iter() {
            // Declared as something else: windows-1252 for CJK/Cyrillic, Shift_JIS for the rest.
            let lie = if *label == "windows-1252" || *label == "UTF-8" {
                "Shift_JIS"
            } else {
                "windows-1252"
            };
            let html = page(text, Some(lie));
            let (bytes, _, _) = enc(label).encode(&html);
            let d = decode(&bytes, None, None, true);
            if *label == "UTF-8" {
                assert_eq!(d.encoding, UTF_8);
                assert_eq!(d.declared.as_deref(), Some(lie));
            }
            // windows-1252 decodes any byte without error, so a 1252 lie about a
            // legacy charset cannot be caught by decode errors; only the UTF-8 rule
            // and the multi-byte lies (errors) are detectable.
            if lie != "windows-1252" {
                assert!(
                    d.text.contains(text),
                    "{label} declared {lie}: got {}",
                    d.encoding.name()
                );
                assert_eq!(d.source, CharsetSource::Detected);
            }
        }
    }

    #[test]
    fn legacy_pages_declared_utf8_are_detected() {
        for (label, text) in samples().iter().filter(|(l, _)| *l != "UTF-8") {
            let html = page(text, None);
            let (bytes, _, _) = enc(label).encode(&html);
            let d = decode(&bytes, Some("text/html; charset=utf-8"), None, true);
            assert!(
                d.text.contains(text),
                "{label} declared UTF-8: got {}",
                d.encoding.name()
            );
            assert_eq!(d.source, CharsetSource::Detected);
            assert_eq!(d.declared.as_deref(), Some("utf-8"));
        }
    }

    #[test]
    fn utf8_page_declared_latin1_in_header() {
        let html = page("Grüße aus Köln, naïve café", None);
        let d = decode(
            html.as_bytes(),
            Some("text/html; charset=ISO-8859-1"),
            None,
            true,
        );
        assert_eq!(d.encoding, UTF_8);
        assert!(d.text.contains("Grüße"));
    }

    #[test]
    fn honest_single_byte_declarations_stand() {
        // Western text declared as what it is is never overruled.
        for label in ["windows-1252", "ISO-8859-1", "ISO-8859-15"] {
            let text = "Le cœur de la cité médiévale était très animé; les élèves français étudiaient à l'école. Ça déçoit.";
            let html = page(text, Some(label));
            let (bytes, _, _) = enc(label).encode(&html);
            let d = decode(&bytes, None, None, true);
            assert_eq!(d.source, CharsetSource::Meta, "{label}");
            assert!(d.text.contains(text));
        }
    }

    #[test]
    fn bom_wins() {
        let mut bytes = vec![0xEF, 0xBB, 0xBF];
        bytes.extend_from_slice("<p>é</p>".as_bytes());
        let d = decode(&bytes, Some("text/html; charset=windows-1251"), None, true);
        assert_eq!(d.source, CharsetSource::Bom);
        assert_eq!(d.text, "<p>é</p>");
    }

    #[test]
    fn prescan_variants() {
        let p = |s: &str| prescan_meta(s.as_bytes()).map(|(_, e)| e.name());
        assert_eq!(
            p("<meta http-equiv=\"Content-Type\" content=\"text/html; charset=euc-kr\">"),
            Some("EUC-KR")
        );
        assert_eq!(p("<META CHARSET=shift_jis>"), Some("Shift_JIS"));
        assert_eq!(
            p("<!-- <meta charset=big5> --><meta charset='gbk'>"),
            Some("GBK")
        );
        assert_eq!(p("<meta name=x content=y>"), None);
        assert_eq!(p("<meta charset=\"utf-16\">").map(|_| ()), Some(()));
        assert_eq!(charset_param("text/html; Charset=\"UTF-8\""), Some("UTF-8"));
    }
}
