//! Office documents: Office Open XML (DOCX, XLSX, PPTX) and OpenDocument (ODT, ODS,
//! ODP), zip archives of XML parts. Each part is streamed through quick-xml, never
//! held whole, so a compressed part that inflates to gigabytes costs time (the
//! helper's budget), not memory.
//!
//! - **DOCX**: `word/document.xml`, a line per paragraph; hyperlinks through
//!   `word/_rels/document.xml.rels` with their text as anchor.
//! - **XLSX**: the sheets in workbook order (a "page" each), a line per row, cells
//!   separated by spaces (shared strings resolved); each sheet's external hyperlinks.
//! - **PPTX**: the slides in presentation order (a "page" each), a line per
//!   paragraph; the slides' external hyperlinks.
//! - **ODF**: `content.xml`, a line per paragraph or heading; `text:a` links with
//!   their text.
//!
//! Title and metadata: `docProps/core.xml` (OOXML) or `meta.xml` (ODF).

use std::collections::{BTreeMap, HashMap};
use std::io::{BufReader, Cursor, Read};

use quick_xml::events::{BytesStart, Event};
use zip::ZipArchive;

use super::{DocLink, Extracted, Format};

type Archive<'a> = ZipArchive<Cursor<&'a [u8]>>;

/// The office format of a zip archive, from its part names (and ODF's `mimetype`).
pub fn sniff_zip(bytes: &[u8]) -> Option<Format> {
    let mut zip = ZipArchive::new(Cursor::new(bytes)).ok()?;
    if zip.index_for_name("word/document.xml").is_some() {
        return Some(Format::Docx);
    }
    if zip.index_for_name("xl/workbook.xml").is_some() {
        return Some(Format::Xlsx);
    }
    if zip.index_for_name("ppt/presentation.xml").is_some() {
        return Some(Format::Pptx);
    }
    let mut mime = String::new();
    zip.by_name("mimetype")
        .ok()?
        .take(100)
        .read_to_string(&mut mime)
        .ok()?;
    Format::from_media_type(mime.trim())
}

/// The text, metadata and links of an office document (at most `max_pages` sheets or
/// slides; at most `max_text` bytes of text).
pub fn extract(
    format: Format,
    bytes: &[u8],
    max_pages: usize,
    max_text: usize,
) -> Result<Extracted, String> {
    let mut zip = ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| format!("not a readable zip archive: {e}"))?;
    let mut out = Extracted::default();
    let mut sink = Sink::new(max_text);
    match format {
        Format::Docx => docx(&mut zip, &mut sink, &mut out.links)?,
        Format::Xlsx => {
            let n = xlsx(&mut zip, &mut sink, &mut out.links, max_pages)?;
            pages(&mut out.metadata, n, max_pages);
        }
        Format::Pptx => {
            let n = pptx(&mut zip, &mut sink, &mut out.links, max_pages)?;
            pages(&mut out.metadata, n, max_pages);
        }
        Format::Odt | Format::Ods | Format::Odp => odf(&mut zip, &mut sink, &mut out.links)?,
        Format::Pdf => return Err("not an office format".into()),
    }
    let (meta_part, fields): (&str, &[(&str, &str)]) = match format {
        Format::Odt | Format::Ods | Format::Odp => (
            "meta.xml",
            &[
                ("title", "title"),
                ("initial-creator", "author"),
                ("subject", "subject"),
                ("keyword", "keywords"),
                ("creation-date", "created"),
                ("date", "modified"),
            ],
        ),
        _ => (
            "docProps/core.xml",
            &[
                ("title", "title"),
                ("creator", "author"),
                ("subject", "subject"),
                ("keywords", "keywords"),
                ("created", "created"),
                ("modified", "modified"),
            ],
        ),
    };
    for (k, v) in properties(&mut zip, meta_part, fields) {
        if k == "title" {
            out.title = Some(v);
        } else {
            out.metadata.insert(k, v);
        }
    }
    if sink.cut {
        out.metadata.insert("text_truncated".into(), "true".into());
    }
    out.text = sink.text;
    Ok(out)
}

fn pages(m: &mut BTreeMap<String, String>, n: usize, max: usize) {
    m.insert("pages".into(), n.to_string());
    m.insert("pages_parsed".into(), n.min(max).to_string());
}

/// Text with a byte cap: what passes it is dropped (and `cut` says so).
struct Sink {
    text: String,
    cap: usize,
    cut: bool,
}

impl Sink {
    fn new(cap: usize) -> Sink {
        Sink {
            text: String::new(),
            cap,
            cut: false,
        }
    }

    fn push(&mut self, s: &str) {
        if self.cut {
            return;
        }
        if self.text.len() + s.len() > self.cap {
            let mut end = self.cap - self.text.len();
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            self.text.push_str(&s[..end]);
            self.cut = true;
        } else {
            self.text.push_str(s);
        }
    }

    fn space(&mut self) {
        if !self.text.is_empty() && !self.text.ends_with([' ', '\n']) {
            self.push(" ");
        }
    }

    fn line(&mut self) {
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.push("\n");
        }
    }
}

/// What [`walk`] reports.
enum Ev<'a> {
    Start(&'a str, &'a BytesStart<'a>),
    End(&'a str),
    Text(&'a str),
}

/// Streams the XML part `name` (missing: nothing) through `on`.
fn walk(zip: &mut Archive<'_>, name: &str, mut on: impl FnMut(Ev<'_>)) -> Result<(), String> {
    let Ok(part) = zip.by_name(name) else {
        return Ok(());
    };
    let mut reader = quick_xml::Reader::from_reader(BufReader::new(part));
    let mut buf = Vec::new();
    loop {
        let event = reader.read_event_into(&mut buf).map_err(|e| {
            format!(
                "{name}: malformed XML at byte {}: {e}",
                reader.error_position()
            )
        })?;
        match event {
            Event::Start(ref s) => on(Ev::Start(s.local_name().as_ref(), s)),
            Event::Empty(ref s) => {
                let n = s.local_name();
                on(Ev::Start(n.as_ref(), s));
                on(Ev::End(n.as_ref()));
            }
            Event::End(ref e) => on(Ev::End(e.local_name().as_ref())),
            Event::Text(ref t) => on(Ev::Text(&t.xml10_content())),
            Event::CData(t) => on(Ev::Text(&t.into_inner())),
            Event::GeneralRef(ref r) => {
                if let Some(c) = crate::xml::entity_char(r) {
                    on(Ev::Text(c.encode_utf8(&mut [0; 4])));
                }
            }
            Event::Eof => return Ok(()),
            _ => {}
        }
        buf.clear();
    }
}

/// The attribute of `s` whose local name is `name`, entities resolved.
fn attr(s: &BytesStart<'_>, name: &str) -> Option<String> {
    s.attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == name)
        .map(|a| {
            a.value
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&")
        })
}

/// The relationship id an element names (`r:id`: an `id` attribute with a namespace
/// prefix; `<p:sldId id="256" r:id="rId2">` has both).
fn rel_id(s: &BytesStart<'_>) -> Option<String> {
    s.attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == "id" && a.key.prefix().is_some())
        .map(|a| a.value.to_string())
}

/// A relationships part: id → (target, external).
fn rels(zip: &mut Archive<'_>, name: &str) -> Result<HashMap<String, (String, bool)>, String> {
    let mut m = HashMap::new();
    walk(zip, name, |ev| {
        if let Ev::Start("Relationship", s) = ev
            && let (Some(id), Some(target)) = (attr(s, "Id"), attr(s, "Target"))
        {
            let external = attr(s, "TargetMode").is_some_and(|m| m == "External");
            m.insert(id, (target, external));
        }
    })?;
    Ok(m)
}

/// The text of the elements of `part` named in `fields` (local name → key).
fn properties(zip: &mut Archive<'_>, part: &str, fields: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current: Option<(&str, String)> = None;
    let _ = walk(zip, part, |ev| match ev {
        Ev::Start(n, _) => {
            current = fields
                .iter()
                .find(|(f, _)| *f == n)
                .map(|(_, k)| (*k, String::new()));
        }
        Ev::Text(t) => {
            if let Some((_, v)) = current.as_mut() {
                v.push_str(t);
            }
        }
        Ev::End(_) => {
            if let Some((k, v)) = current.take() {
                let v = v.trim().to_string();
                if !v.is_empty() && !out.iter().any(|(key, _)| key == k) {
                    out.push((k.to_string(), v));
                }
            }
        }
    });
    out
}

fn docx(zip: &mut Archive<'_>, sink: &mut Sink, links: &mut Vec<DocLink>) -> Result<(), String> {
    let rels = rels(zip, "word/_rels/document.xml.rels")?;
    let mut in_text = false;
    let mut link: Option<(String, String)> = None;
    walk(zip, "word/document.xml", |ev| match ev {
        Ev::Start("t", _) => in_text = true,
        Ev::End("t") => in_text = false,
        Ev::Start("tab", _) => sink.space(),
        Ev::Start("br" | "cr", _) => sink.line(),
        Ev::End("p") => sink.line(),
        Ev::Start("hyperlink", s) => {
            link = rel_id(s)
                .and_then(|id| rels.get(&id))
                .filter(|(_, external)| *external)
                .map(|(t, _)| (t.clone(), String::new()));
        }
        Ev::End("hyperlink") => {
            if let Some((href, anchor)) = link.take() {
                links.push(DocLink {
                    href,
                    anchor: anchor.trim().to_string(),
                });
            }
        }
        Ev::Text(t) if in_text => {
            sink.push(t);
            if let Some((_, a)) = link.as_mut() {
                a.push_str(t);
            }
        }
        _ => {}
    })
}

/// The parts of an ordered list (`sheets` of a workbook, `sldIdLst` of a
/// presentation): the targets of the ids the `element`s name, in order, made
/// absolute under `dir`.
fn ordered_parts(
    zip: &mut Archive<'_>,
    main: &str,
    main_rels: &str,
    element: &str,
    dir: &str,
) -> Result<Vec<String>, String> {
    let rels = rels(zip, main_rels)?;
    let mut out = Vec::new();
    walk(zip, main, |ev| {
        if let Ev::Start(n, s) = ev
            && n == element
            && let Some((target, false)) = rel_id(s).and_then(|id| rels.get(&id)).cloned()
        {
            let path = match target.strip_prefix('/') {
                Some(abs) => abs.to_string(),
                None => format!("{dir}/{target}"),
            };
            out.push(path);
        }
    })?;
    Ok(out)
}

/// The relationships part of `part` (`a/b.xml` → `a/_rels/b.xml.rels`).
fn rels_of(part: &str) -> String {
    match part.rsplit_once('/') {
        Some((dir, file)) => format!("{dir}/_rels/{file}.rels"),
        None => format!("_rels/{part}.rels"),
    }
}

fn external_links(
    zip: &mut Archive<'_>,
    part: &str,
    links: &mut Vec<DocLink>,
) -> Result<(), String> {
    let mut targets: Vec<String> = rels(zip, &rels_of(part))?
        .into_values()
        .filter(|(_, external)| *external)
        .map(|(t, _)| t)
        .collect();
    targets.sort();
    links.extend(targets.into_iter().map(|href| DocLink {
        href,
        anchor: String::new(),
    }));
    Ok(())
}

fn xlsx(
    zip: &mut Archive<'_>,
    sink: &mut Sink,
    links: &mut Vec<DocLink>,
    max_pages: usize,
) -> Result<usize, String> {
    let mut strings: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    let mut in_text = false;
    walk(zip, "xl/sharedStrings.xml", |ev| match ev {
        Ev::Start("si", _) => current = Some(String::new()),
        Ev::End("si") => strings.push(current.take().unwrap_or_default()),
        Ev::Start("t", _) => in_text = true,
        Ev::End("t") => in_text = false,
        Ev::Text(t) if in_text => {
            if let Some(c) = current.as_mut() {
                c.push_str(t);
            }
        }
        _ => {}
    })?;
    let sheets = ordered_parts(
        zip,
        "xl/workbook.xml",
        "xl/_rels/workbook.xml.rels",
        "sheet",
        "xl",
    )?;
    for sheet in sheets.iter().take(max_pages) {
        let mut kind = String::new();
        let mut value = String::new();
        let mut in_value = false;
        let mut row: Vec<String> = Vec::new();
        walk(zip, sheet, |ev| match ev {
            Ev::Start("c", s) => {
                kind = attr(s, "t").unwrap_or_default();
                value.clear();
            }
            Ev::Start("v" | "t", _) => in_value = true,
            Ev::End("v" | "t") => in_value = false,
            Ev::Text(t) if in_value => value.push_str(t),
            Ev::End("c") => {
                let cell = if kind == "s" {
                    value
                        .trim()
                        .parse::<usize>()
                        .ok()
                        .and_then(|i| strings.get(i))
                        .cloned()
                        .unwrap_or_default()
                } else {
                    value.clone()
                };
                let cell = cell.trim();
                if !cell.is_empty() {
                    row.push(cell.to_string());
                }
            }
            Ev::End("row") if !row.is_empty() => {
                sink.push(&row.join(" "));
                sink.line();
                row.clear();
            }
            _ => {}
        })?;
        external_links(zip, sheet, links)?;
    }
    Ok(sheets.len())
}

fn pptx(
    zip: &mut Archive<'_>,
    sink: &mut Sink,
    links: &mut Vec<DocLink>,
    max_pages: usize,
) -> Result<usize, String> {
    let slides = ordered_parts(
        zip,
        "ppt/presentation.xml",
        "ppt/_rels/presentation.xml.rels",
        "sldId",
        "ppt",
    )?;
    for slide in slides.iter().take(max_pages) {
        let mut in_text = false;
        walk(zip, slide, |ev| match ev {
            Ev::Start("t", _) => in_text = true,
            Ev::End("t") => in_text = false,
            Ev::End("p") => sink.line(),
            Ev::Text(t) if in_text => sink.push(t),
            _ => {}
        })?;
        sink.line();
        external_links(zip, slide, links)?;
    }
    Ok(slides.len())
}

fn odf(zip: &mut Archive<'_>, sink: &mut Sink, links: &mut Vec<DocLink>) -> Result<(), String> {
    let mut depth_in_body = 0usize;
    let mut link: Option<(String, String)> = None;
    walk(zip, "content.xml", |ev| match ev {
        Ev::Start("body", _) => depth_in_body += 1,
        Ev::End("body") => depth_in_body = depth_in_body.saturating_sub(1),
        Ev::Start("s" | "tab", _) => sink.push(" "),
        Ev::Start("line-break", _) => sink.line(),
        Ev::End("p" | "h") => sink.line(),
        Ev::Start("a", s) => link = attr(s, "href").map(|h| (h, String::new())),
        Ev::End("a") => {
            if let Some((href, anchor)) = link.take() {
                links.push(DocLink {
                    href,
                    anchor: anchor.trim().to_string(),
                });
            }
        }
        Ev::Text(t) if depth_in_body > 0 => {
            sink.push(t);
            if let Some((_, a)) = link.as_mut() {
                a.push_str(t);
            }
        }
        _ => {}
    })
}
