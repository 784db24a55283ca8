//! Documents that are not HTML: what `parse` extracts from a PDF (its text, title and
//! metadata, and its links: link annotations and the URLs written in its text).
//!
//! A document is recognized by its bytes ([`sniff`]), whatever the server called it,
//! and read in a process of its own ([`isolate`]: the `docparse` binary) under a page,
//! time and memory budget, so that a hostile or broken file costs at most that
//! budget: a panic, an endless loop or a decompression bomb in the PDF library ends
//! the helper, never `parse`.

pub mod isolate;
pub mod pdf;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The document formats `parse` reads besides HTML and plain text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// PDF.
    Pdf,
}

impl Format {
    /// The format's media type (`parse_data.content_type` of its documents).
    pub fn media_type(self) -> &'static str {
        match self {
            Format::Pdf => "application/pdf",
        }
    }

    /// The format's name (`parse_data.metadata.format`, `docparse --format`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Pdf => "pdf",
        }
    }

    /// The format named `name`.
    pub fn from_name(name: &str) -> Option<Format> {
        match name {
            "pdf" => Some(Format::Pdf),
            _ => None,
        }
    }

    /// The format a media type names (`application/pdf`, `application/x-pdf`).
    pub fn from_media_type(mime: &str) -> Option<Format> {
        match mime {
            "application/pdf" | "application/x-pdf" | "application/acrobat" => Some(Format::Pdf),
            _ => None,
        }
    }
}

/// The document format of a body, by its first bytes: `%PDF-` at the start, after at
/// most a byte-order mark and whitespace. (PDF readers accept more junk before it; a
/// sniffer that did would take an HTML page quoting `%PDF-` for a PDF.)
pub fn sniff(bytes: &[u8]) -> Option<Format> {
    let body = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let start = body
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(body.len());
    body[start..].starts_with(b"%PDF-").then_some(Format::Pdf)
}

/// A link found in a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocLink {
    /// The URL as written (absolute, or relative to the document's URL).
    pub href: String,
    /// Its text, when known (empty for a link annotation).
    pub anchor: String,
}

/// What a document gave.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Extracted {
    /// The text, page after page; a line per line of the document.
    pub text: String,
    /// The title (PDF: the Info dictionary's `Title`).
    pub title: Option<String>,
    /// Metadata: `author`, `subject`, `keywords`, `creator`, `producer`, `created`,
    /// `modified` when the document has them; `pages` (in the document),
    /// `pages_parsed` and `pages_failed`.
    pub metadata: BTreeMap<String, String>,
    /// Links, in document order (annotations of a page, then the URLs in its text).
    pub links: Vec<DocLink>,
}

/// The budget of one document's extraction (`[parse]` `max_document_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Pages read at most; the rest is left out (`pages_parsed` < `pages`).
    pub max_pages: usize,
    /// Wall time in milliseconds, after which the helper is killed.
    pub max_millis: u64,
    /// Address space of the helper in MiB.
    pub max_memory_mb: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_pages: 1000,
            max_millis: 30_000,
            max_memory_mb: 1024,
        }
    }
}

/// Extracts a document in this process, with the page cap but no time or memory
/// budget (the `docparse` helper and the benchmarks; `parse` goes through
/// [`isolate::extract`]). A panic of the PDF library on one page loses that page only.
pub fn extract_here(format: Format, bytes: &[u8], max_pages: usize) -> Result<Extracted, String> {
    match format {
        Format::Pdf => pdf::extract(bytes, max_pages),
    }
}

/// The `http(s)://` URLs written in `text`, in order: up to the first whitespace,
/// quote or bracket, without trailing punctuation (`see https://x.test/a.` → `https://x.test/a`).
pub fn urls_in_text(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("http") {
        let tail = &rest[at..];
        let scheme = if tail.starts_with("https://") {
            8
        } else if tail.starts_with("http://") {
            7
        } else {
            rest = &rest[at + 4..];
            continue;
        };
        let end = tail
            .find(|c: char| c.is_whitespace() || "\"'<>()[]{}|\\^`".contains(c))
            .unwrap_or(tail.len());
        let url = tail[..end].trim_end_matches(['.', ',', ';', ':', '!', '?']);
        if url.len() > scheme {
            out.push(url);
        }
        rest = &tail[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pdf_is_recognized_by_its_signature() {
        assert_eq!(sniff(b"%PDF-1.7\n%\xe2\xe3"), Some(Format::Pdf));
        assert_eq!(sniff(b"\xef\xbb\xbf%PDF-1.4"), Some(Format::Pdf));
        assert_eq!(sniff(b"\n %PDF-1.4"), Some(Format::Pdf));
        assert_eq!(sniff(b"<!DOCTYPE html><p>%PDF-</p>"), None);
        assert_eq!(sniff(b"<html>no document</html>"), None);
        assert_eq!(sniff(b""), None);
    }

    #[test]
    fn urls_are_found_in_text() {
        let t = "See https://a.test/x?y=1. Or (http://b.test/p), and httpx://no, http://";
        assert_eq!(urls_in_text(t), ["https://a.test/x?y=1", "http://b.test/p"]);
        assert!(urls_in_text("no links here").is_empty());
    }
}
