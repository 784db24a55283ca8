//! PDF: text with [pdf-extract](https://docs.rs/pdf-extract) page by page, the Info
//! dictionary (title, author, ...) and the link annotations with lopdf (which
//! pdf-extract re-exports).
//!
//! A page the library cannot read (it panics on some malformed pages) is counted in
//! `pages_failed` and left out; a document none of whose pages can be read is an error.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use pdf_extract::{Dictionary, Document, Object, ObjectId, PlainTextOutput};

use super::{DocLink, Extracted, urls_in_text};

/// Info dictionary entries kept, and their metadata keys.
const INFO_KEYS: [(&[u8], &str); 7] = [
    (b"Author", "author"),
    (b"Subject", "subject"),
    (b"Keywords", "keywords"),
    (b"Creator", "creator"),
    (b"Producer", "producer"),
    (b"CreationDate", "created"),
    (b"ModDate", "modified"),
];

/// Extracts the text, metadata and links of the first `max_pages` pages of a PDF.
pub fn extract(bytes: &[u8], max_pages: usize) -> Result<Extracted, String> {
    let mut doc = Document::load_mem(bytes).map_err(|e| format!("not a readable PDF: {e}"))?;
    if doc.is_encrypted() {
        // Most "encrypted" PDFs on the web only restrict printing or copying: their
        // user password is empty.
        doc.decrypt("")
            .map_err(|e| format!("encrypted with a password: {e}"))?;
    }
    let pages = doc.get_pages();
    let mut out = Extracted::default();
    let mut failed = 0usize;
    let mut first_error = None;
    for (&number, &id) in pages.iter().take(max_pages) {
        match page_text(&doc, number) {
            Ok(t) => {
                out.links.extend(annotation_links(&doc, id));
                out.links
                    .extend(urls_in_text(&t).into_iter().map(|u| DocLink {
                        href: u.to_string(),
                        anchor: String::new(),
                    }));
                out.text.push_str(t.trim_end());
                out.text.push('\n');
            }
            Err(e) => {
                failed += 1;
                first_error.get_or_insert(format!("page {number}: {e}"));
            }
        }
    }
    let parsed = pages.len().min(max_pages);
    if parsed > 0 && failed == parsed {
        return Err(format!(
            "no page could be read ({})",
            first_error.unwrap_or_default()
        ));
    }
    info(&doc, &mut out.title, &mut out.metadata);
    let m = &mut out.metadata;
    m.insert("pages".into(), pages.len().to_string());
    m.insert("pages_parsed".into(), (parsed - failed).to_string());
    if failed > 0 {
        m.insert("pages_failed".into(), failed.to_string());
    }
    Ok(out)
}

/// The text of page `number` (1-based); a panic of the library is an error.
fn page_text(doc: &Document, number: u32) -> Result<String, String> {
    let mut text = String::new();
    let run = catch_unwind(AssertUnwindSafe(|| {
        let mut output = PlainTextOutput::new(&mut text);
        pdf_extract::output_doc_page(doc, &mut output, number)
    }));
    match run {
        Ok(Ok(())) => Ok(text),
        Ok(Err(e)) => Err(e.to_string()),
        Err(panic) => Err(panic_message(panic.as_ref())),
    }
}

/// The message of a caught panic.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown".into());
    format!("the PDF library failed: {what}")
}

/// The title and the kept Info entries.
fn info(doc: &Document, title: &mut Option<String>, metadata: &mut BTreeMap<String, String>) {
    let Some(info) = doc
        .trailer
        .get(b"Info")
        .ok()
        .and_then(|o| resolve(doc, o))
        .and_then(|o| o.as_dict().ok())
    else {
        return;
    };
    let text = |key: &[u8]| {
        info.get(key)
            .ok()
            .and_then(|o| resolve(doc, o))
            .and_then(|o| pdf_extract::decode_text_string(o).ok())
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    *title = text(b"Title");
    for (key, name) in INFO_KEYS {
        if let Some(v) = text(key) {
            metadata.insert(name.to_string(), v);
        }
    }
}

/// `o`, or the object it refers to.
fn resolve<'a>(doc: &'a Document, o: &'a Object) -> Option<&'a Object> {
    match o {
        Object::Reference(id) => doc.get_object(*id).ok(),
        other => Some(other),
    }
}

/// The URIs of a page's link annotations (`/Subtype /Link` with a `/URI` action).
fn annotation_links(doc: &Document, page: ObjectId) -> Vec<DocLink> {
    let Some(annots) = doc
        .get_dictionary(page)
        .ok()
        .and_then(|p| p.get(b"Annots").ok())
        .and_then(|a| resolve(doc, a))
        .and_then(|a| a.as_array().ok())
    else {
        return Vec::new();
    };
    annots
        .iter()
        .filter_map(|a| resolve(doc, a).and_then(|a| a.as_dict().ok()))
        .filter_map(|a| uri_of(doc, a))
        .map(|href| DocLink {
            href,
            anchor: String::new(),
        })
        .collect()
}

fn uri_of(doc: &Document, annot: &Dictionary) -> Option<String> {
    let is_link = annot
        .get(b"Subtype")
        .ok()
        .and_then(|s| s.as_name().ok())
        .is_some_and(|s| s == b"Link");
    if !is_link {
        return None;
    }
    let action = annot
        .get(b"A")
        .ok()
        .and_then(|a| resolve(doc, a))
        .and_then(|a| a.as_dict().ok())?;
    let is_uri = action
        .get(b"S")
        .ok()
        .and_then(|s| s.as_name().ok())
        .is_some_and(|s| s == b"URI");
    if !is_uri {
        return None;
    }
    let uri = action.get(b"URI").ok().and_then(|u| resolve(doc, u))?;
    let bytes = uri.as_str().ok()?;
    let s = String::from_utf8_lossy(bytes).trim().to_string();
    (!s.is_empty()).then_some(s)
}
