//! Office documents of the document host, written part by part: DOCX, XLSX, PPTX and
//! ODT with a title, text and one external hyperlink each, so that the site map knows
//! what parse must find in them.

use std::io::Write;

use zip::ZipWriter;
use zip::write::SimpleFileOptions;

const W: &str = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";
const R: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
const PKG: &str = "http://schemas.openxmlformats.org/package/2006/relationships";
const LINK: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink";

/// A document's content: title, paragraphs (rows, slides: see each writer), and one
/// hyperlink (URL, text).
pub struct Doc<'a> {
    /// The title (core properties / ODF meta).
    pub title: &'a str,
    /// Lines of text.
    pub lines: &'a [&'a str],
    /// The hyperlink's URL and text.
    pub link: (&'a str, &'a str),
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A zip of `parts` (the first stored, as ODF's `mimetype` must be; the rest deflated).
fn zip_of(parts: &[(&str, String)]) -> Vec<u8> {
    let mut z = ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (i, (name, body)) in parts.iter().enumerate() {
        let method = if i == 0 {
            zip::CompressionMethod::Stored
        } else {
            zip::CompressionMethod::Deflated
        };
        let opts = SimpleFileOptions::default().compression_method(method);
        // Writing to memory cannot fail.
        let _ = z.start_file(*name, opts);
        let _ = z.write_all(body.as_bytes());
    }
    z.finish().map(|c| c.into_inner()).unwrap_or_default()
}

fn core(title: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><cp:coreProperties \
         xmlns:cp=\"http://schemas.openxmlformats.org/package/2006/metadata/core-properties\" \
         xmlns:dc=\"http://purl.org/dc/elements/1.1/\"><dc:title>{}</dc:title>\
         <dc:creator>The trawl test web</dc:creator></cp:coreProperties>",
        esc(title)
    )
}

fn rels(items: &[(&str, &str, &str, bool)]) -> String {
    let mut s =
        format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Relationships xmlns=\"{PKG}\">");
    for (id, ty, target, external) in items {
        let mode = if *external {
            " TargetMode=\"External\""
        } else {
            ""
        };
        s.push_str(&format!(
            "<Relationship Id=\"{id}\" Type=\"{ty}\" Target=\"{}\"{mode}/>",
            esc(target)
        ));
    }
    s + "</Relationships>"
}

fn content_types(main: &str, part: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Types \
         xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\">\
         <Default Extension=\"rels\" ContentType=\"application/vnd.openxmlformats-package.relationships+xml\"/>\
         <Default Extension=\"xml\" ContentType=\"application/xml\"/>\
         <Override PartName=\"/{part}\" ContentType=\"{main}\"/></Types>"
    )
}

/// A DOCX: a paragraph per line, then a paragraph holding the hyperlink.
pub fn docx(d: &Doc<'_>) -> Vec<u8> {
    let mut body = String::new();
    for l in d.lines {
        body.push_str(&format!(
            "<w:p><w:r><w:t xml:space=\"preserve\">{}</w:t></w:r></w:p>",
            esc(l)
        ));
    }
    body.push_str(&format!(
        "<w:p><w:r><w:t>See </w:t></w:r><w:hyperlink r:id=\"rId9\"><w:r><w:t>{}</w:t></w:r></w:hyperlink></w:p>",
        esc(d.link.1)
    ));
    zip_of(&[
        (
            "[Content_Types].xml",
            content_types(
                "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
                "word/document.xml",
            ),
        ),
        (
            "_rels/.rels",
            rels(&[("rId1", "officeDocument", "word/document.xml", false)]),
        ),
        (
            "word/document.xml",
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?><w:document xmlns:w=\"{W}\" \
                 xmlns:r=\"{R}\"><w:body>{body}</w:body></w:document>"
            ),
        ),
        (
            "word/_rels/document.xml.rels",
            rels(&[("rId9", LINK, d.link.0, true)]),
        ),
        ("docProps/core.xml", core(d.title)),
    ])
}

/// An XLSX of one sheet: a row per line, its words in cells (shared strings), a
/// number cell, and the hyperlink on a cell holding its text.
pub fn xlsx(d: &Doc<'_>) -> Vec<u8> {
    let mut strings: Vec<String> = Vec::new();
    let mut rows = String::new();
    for (i, l) in d.lines.iter().enumerate() {
        rows.push_str(&format!("<row r=\"{}\">", i + 1));
        for w in l.split(' ') {
            rows.push_str(&format!("<c t=\"s\"><v>{}</v></c>", strings.len()));
            strings.push(esc(w));
        }
        rows.push_str(&format!("<c><v>{}</v></c></row>", i + 1));
    }
    let n = d.lines.len() + 1;
    rows.push_str(&format!(
        "<row r=\"{n}\"><c r=\"A{n}\" t=\"inlineStr\"><is><t>{}</t></is></c></row>",
        esc(d.link.1)
    ));
    let sst: String = strings
        .iter()
        .map(|s| format!("<si><t>{s}</t></si>"))
        .collect();
    let main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";
    zip_of(&[
        (
            "[Content_Types].xml",
            content_types(
                "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml",
                "xl/workbook.xml",
            ),
        ),
        (
            "_rels/.rels",
            rels(&[("rId1", "officeDocument", "xl/workbook.xml", false)]),
        ),
        (
            "xl/workbook.xml",
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?><workbook xmlns=\"{main}\" xmlns:r=\"{R}\">\
                 <sheets><sheet name=\"Gauges\" sheetId=\"1\" r:id=\"rId1\"/></sheets></workbook>"
            ),
        ),
        (
            "xl/_rels/workbook.xml.rels",
            rels(&[
                ("rId1", "worksheet", "worksheets/sheet1.xml", false),
                ("rId2", "sharedStrings", "sharedStrings.xml", false),
            ]),
        ),
        (
            "xl/sharedStrings.xml",
            format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?><sst xmlns=\"{main}\">{sst}</sst>"),
        ),
        (
            "xl/worksheets/sheet1.xml",
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?><worksheet xmlns=\"{main}\" xmlns:r=\"{R}\">\
                 <sheetData>{rows}</sheetData><hyperlinks><hyperlink ref=\"A{n}\" r:id=\"rId1\"/>\
                 </hyperlinks></worksheet>"
            ),
        ),
        (
            "xl/worksheets/_rels/sheet1.xml.rels",
            rels(&[("rId1", LINK, d.link.0, true)]),
        ),
        ("docProps/core.xml", core(d.title)),
    ])
}

/// A PPTX: a slide per line, and a last slide whose text is the hyperlink.
pub fn pptx(d: &Doc<'_>) -> Vec<u8> {
    let a = "http://schemas.openxmlformats.org/drawingml/2006/main";
    let p = "http://schemas.openxmlformats.org/presentationml/2006/main";
    let slide = |run: String| {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><p:sld xmlns:p=\"{p}\" xmlns:a=\"{a}\" \
             xmlns:r=\"{R}\"><p:cSld><p:spTree><p:sp><p:txBody><a:p>{run}</a:p></p:txBody></p:sp>\
             </p:spTree></p:cSld></p:sld>"
        )
    };
    let mut parts = vec![
        (
            "[Content_Types].xml".to_string(),
            content_types(
                "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml",
                "ppt/presentation.xml",
            ),
        ),
        (
            "_rels/.rels".to_string(),
            rels(&[("rId1", "officeDocument", "ppt/presentation.xml", false)]),
        ),
    ];
    let count = d.lines.len() + 1;
    let ids: String = (1..=count)
        .map(|i| format!("<p:sldId id=\"{}\" r:id=\"rId{i}\"/>", 255 + i))
        .collect();
    parts.push((
        "ppt/presentation.xml".into(),
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><p:presentation xmlns:p=\"{p}\" \
             xmlns:r=\"{R}\"><p:sldIdLst>{ids}</p:sldIdLst></p:presentation>"
        ),
    ));
    let targets: Vec<(String, String)> = (1..=count)
        .map(|i| (format!("rId{i}"), format!("slides/slide{i}.xml")))
        .collect();
    let items: Vec<(&str, &str, &str, bool)> = targets
        .iter()
        .map(|(id, t)| (id.as_str(), "slide", t.as_str(), false))
        .collect();
    parts.push(("ppt/_rels/presentation.xml.rels".into(), rels(&items)));
    for (i, l) in d.lines.iter().enumerate() {
        parts.push((
            format!("ppt/slides/slide{}.xml", i + 1),
            slide(format!("<a:r><a:t>{}</a:t></a:r>", esc(l))),
        ));
    }
    parts.push((
        format!("ppt/slides/slide{count}.xml"),
        slide(format!(
            "<a:r><a:rPr><a:hlinkClick r:id=\"rId7\"/></a:rPr><a:t>{}</a:t></a:r>",
            esc(d.link.1)
        )),
    ));
    parts.push((
        format!("ppt/slides/_rels/slide{count}.xml.rels"),
        rels(&[("rId7", LINK, d.link.0, true)]),
    ));
    parts.push(("docProps/core.xml".into(), core(d.title)));
    let refs: Vec<(&str, String)> = parts.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    zip_of(&refs)
}

/// An ODT: a heading, a paragraph per line, a paragraph holding the link.
pub fn odt(d: &Doc<'_>) -> Vec<u8> {
    let ns = "xmlns:office=\"urn:oasis:names:tc:opendocument:xmlns:office:1.0\" \
              xmlns:text=\"urn:oasis:names:tc:opendocument:xmlns:text:1.0\" \
              xmlns:xlink=\"http://www.w3.org/1999/xlink\" \
              xmlns:dc=\"http://purl.org/dc/elements/1.1/\" \
              xmlns:meta=\"urn:oasis:names:tc:opendocument:xmlns:meta:1.0\"";
    let mut body = format!("<text:h>{}</text:h>", esc(d.title));
    for l in d.lines {
        body.push_str(&format!("<text:p>{}</text:p>", esc(l)));
    }
    body.push_str(&format!(
        "<text:p>See <text:a xlink:type=\"simple\" xlink:href=\"{}\">{}</text:a></text:p>",
        esc(d.link.0),
        esc(d.link.1)
    ));
    zip_of(&[
        ("mimetype", "application/vnd.oasis.opendocument.text".into()),
        (
            "content.xml",
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?><office:document-content {ns}>\
                 <office:automatic-styles/><office:body><office:text>{body}</office:text>\
                 </office:body></office:document-content>"
            ),
        ),
        (
            "meta.xml",
            format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?><office:document-meta {ns}><office:meta>\
                 <dc:title>{}</dc:title><meta:initial-creator>The trawl test web</meta:initial-creator>\
                 </office:meta></office:document-meta>",
                esc(d.title)
            ),
        ),
    ])
}
