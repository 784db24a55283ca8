//! Documents that are not HTML: what `parse` extracts from a PDF ([`pdf`]: its text,
//! title and metadata, and its links: link annotations and the URLs written in its
//! text) and from office documents ([`office`]: DOCX, XLSX, PPTX, ODT, ODS, ODP).
//!
//! A document is recognized by its bytes ([`sniff`]), whatever the server called it,
//! and read in a process of its own ([`isolate`]: the `docparse` binary) under a page,
//! time and memory budget, so that a hostile or broken file costs at most that
//! budget: a panic, an endless loop or a decompression bomb in the PDF library ends
//! the helper, never `parse`.

pub mod feed;
pub mod isolate;
pub mod office;
pub mod pdf;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The document formats `parse` reads besides HTML and plain text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// PDF.
    Pdf,
    /// Word (Office Open XML).
    Docx,
    /// Excel (Office Open XML).
    Xlsx,
    /// PowerPoint (Office Open XML).
    Pptx,
    /// OpenDocument text.
    Odt,
    /// OpenDocument spreadsheet.
    Ods,
    /// OpenDocument presentation.
    Odp,
}

/// Every format with its name and media type.
const FORMATS: [(Format, &str, &str); 7] = [
    (Format::Pdf, "pdf", "application/pdf"),
    (
        Format::Docx,
        "docx",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ),
    (
        Format::Xlsx,
        "xlsx",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ),
    (
        Format::Pptx,
        "pptx",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ),
    (
        Format::Odt,
        "odt",
        "application/vnd.oasis.opendocument.text",
    ),
    (
        Format::Ods,
        "ods",
        "application/vnd.oasis.opendocument.spreadsheet",
    ),
    (
        Format::Odp,
        "odp",
        "application/vnd.oasis.opendocument.presentation",
    ),
];

impl Format {
    /// The format's media type (`parse_data.content_type` of its documents).
    pub fn media_type(self) -> &'static str {
        FORMATS.iter().find(|f| f.0 == self).map_or("", |f| f.2)
    }

    /// The format's name (`parse_data.metadata.format`, `docparse --format`).
    pub fn name(self) -> &'static str {
        FORMATS.iter().find(|f| f.0 == self).map_or("", |f| f.1)
    }

    /// The format named `name`.
    pub fn from_name(name: &str) -> Option<Format> {
        FORMATS.iter().find(|f| f.1 == name).map(|f| f.0)
    }

    /// The names of every format (`docparse --format`).
    pub fn names() -> impl Iterator<Item = &'static str> {
        FORMATS.iter().map(|f| f.1)
    }

    /// The format a media type names (`application/pdf`, `application/x-pdf`).
    pub fn from_media_type(mime: &str) -> Option<Format> {
        match mime {
            "application/x-pdf" | "application/acrobat" => Some(Format::Pdf),
            _ => FORMATS.iter().find(|f| f.2 == mime).map(|f| f.0),
        }
    }
}

/// The document format of a body, by its bytes: `%PDF-` at the start, after at most a
/// byte-order mark and whitespace (PDF readers accept more junk before it; a sniffer
/// that did would take an HTML page quoting `%PDF-` for a PDF); a zip archive whose
/// part names (or ODF `mimetype`) make it an office document (its central directory
/// is read, no part is inflated but the 100-byte `mimetype`).
pub fn sniff(bytes: &[u8]) -> Option<Format> {
    if bytes.starts_with(b"PK\x03\x04") {
        return office::sniff_zip(bytes);
    }
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
    /// Bytes of text kept at most (`parse.max_page_bytes`); the rest is dropped and
    /// `metadata.text_truncated` says so.
    pub max_text_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_pages: 1000,
            max_millis: 30_000,
            max_memory_mb: 1024,
            max_text_bytes: 8 * 1024 * 1024,
        }
    }
}

/// Extracts a document in this process, with the page and text caps but no time or
/// memory budget (the `docparse` helper; `parse` goes through [`isolate::extract`]). A
/// panic of the PDF library on one page loses that page only.
pub fn extract_here(
    format: Format,
    bytes: &[u8],
    max_pages: usize,
    max_text: usize,
) -> Result<Extracted, String> {
    match format {
        Format::Pdf => {
            let mut x = pdf::extract(bytes, max_pages)?;
            if x.text.len() > max_text {
                let mut end = max_text;
                while !x.text.is_char_boundary(end) {
                    end -= 1;
                }
                x.text.truncate(end);
                x.metadata.insert("text_truncated".into(), "true".into());
            }
            Ok(x)
        }
        _ => office::extract(format, bytes, max_pages, max_text),
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
