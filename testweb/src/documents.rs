//! The document host (`WebSpec::documents`, `docs.web.test`): PDFs with a title, text
//! and links (link annotations and URLs written in the text), a PDF the server calls
//! `text/html`, and hostile PDFs (broken, huge, slow, a decompression bomb). The PDFs
//! are written here, byte by byte, so the site map knows their titles, links and text.

use std::collections::BTreeMap;
use std::io::Write;

use super::html::PageBuilder;
use super::model::{Host, Kind, Resource};
use super::robots::Robots;

/// The document host.
pub const DOCS_HOST: &str = "docs.web.test";
/// Pages of `/huge.pdf`.
pub const HUGE_PAGES: usize = 2000;
/// Pages of `/slow.pdf`.
pub const SLOW_PAGES: usize = 100;
/// `Tj` operators on each page of `/slow.pdf`.
pub const SLOW_OPERATORS: usize = 100_000;
/// Bytes `/bomb.pdf`'s content stream inflates to.
pub const BOMB_BYTES: u64 = 512 << 20;
/// Words every page of `/report.pdf` holds, in order (a test finds them in the text).
pub const REPORT_PHRASES: [&str; 3] = [
    "Rivers carry sediment toward the delta",
    "The second page describes the estuary survey",
    "Appendix tables list every gauging station",
];
/// The Content-Type of a PDF.
pub const PDF_TYPE: &str = "application/pdf";
/// The office documents: path, Content-Type, title, a line of text only it holds.
pub const OFFICE: [(&str, &str, &str, &str); 4] = [
    (
        "/minutes.docx",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "Minutes of the Water Board",
        "The board approved the new weir budget",
    ),
    (
        "/gauges.xlsx",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "Gauge Readings",
        "Northbank station reading high",
    ),
    (
        "/survey.pptx",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "Survey Slides",
        "Kingfisher nests along the oxbow",
    ),
    (
        "/notes.odt",
        "application/vnd.oasis.opendocument.text",
        "Field Notes",
        "Otters seen below the footbridge",
    ),
];

/// The page an office document at `path` links to (`/minutes.docx` → `/from-docx.html`).
pub fn office_link(path: &str) -> String {
    let ext = path.rsplit('.').next().unwrap_or("");
    format!("/from-{ext}.html")
}

/// One page of a PDF: its lines of text and the URIs of its link annotations.
#[derive(Debug, Clone, Default)]
pub struct PdfPage {
    /// Lines of text, top to bottom.
    pub lines: Vec<String>,
    /// URIs of link annotations on the page.
    pub links: Vec<String>,
}

/// A PDF 1.4 file: the pages in Helvetica, an Info dictionary with `title`.
/// `media_box: false` leaves out every MediaBox (a broken file readers reject).
pub fn pdf(title: Option<&str>, pages: &[PdfPage], media_box: bool) -> Vec<u8> {
    let contents: Vec<Vec<u8>> = pages.iter().map(|p| content_stream(&p.lines)).collect();
    let links: Vec<&[String]> = pages.iter().map(|p| p.links.as_slice()).collect();
    write_pdf(title, &contents, &links, media_box, false)
}

/// A PDF whose page contents are given as streams, Flate-compressed when `deflated`.
fn write_pdf(
    title: Option<&str>,
    contents: &[Vec<u8>],
    links: &[&[String]],
    media_box: bool,
    deflated: bool,
) -> Vec<u8> {
    // Objects 1-4: catalog, page tree, font, info; then per page its content, its
    // annotations and the page itself.
    let mut objects: Vec<Vec<u8>> = vec![Vec::new(); 4];
    let mut kids = Vec::new();
    for (i, content) in contents.iter().enumerate() {
        let filter = if deflated {
            " /Filter /FlateDecode"
        } else {
            ""
        };
        let mut stream = format!("<< /Length {}{filter} >>\nstream\n", content.len()).into_bytes();
        stream.extend_from_slice(content);
        stream.extend_from_slice(b"\nendstream");
        objects.push(stream);
        let content_id = objects.len();
        let mut annots = Vec::new();
        for (k, uri) in links.get(i).copied().unwrap_or_default().iter().enumerate() {
            let y = 700 - 20 * k as i64;
            objects.push(
                format!(
                    "<< /Type /Annot /Subtype /Link /Rect [72 {y} 300 {}] /Border [0 0 0] \
                     /A << /S /URI /URI ({}) >> >>",
                    y + 14,
                    escape(uri)
                )
                .into_bytes(),
            );
            annots.push(format!("{} 0 R", objects.len()));
        }
        let mbox = if media_box {
            " /MediaBox [0 0 612 792]"
        } else {
            ""
        };
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R{mbox} /Resources << /Font << /F1 3 0 R >> >> \
                 /Contents {content_id} 0 R /Annots [{}] >>",
                annots.join(" ")
            )
            .into_bytes(),
        );
        kids.push(format!("{} 0 R", objects.len()));
    }
    objects[0] = b"<< /Type /Catalog /Pages 2 0 R >>".to_vec();
    objects[1] = format!(
        "<< /Type /Pages /Kids [{}] /Count {} >>",
        kids.join(" "),
        kids.len()
    )
    .into_bytes();
    objects[2] =
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_vec();
    let title = title.map_or(String::new(), |t| format!(" /Title ({})", escape(t)));
    objects[3] =
        format!("<< /Author (The trawl test web) /Producer (trawl-testweb){title} >>").into_bytes();
    let mut out = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets = Vec::with_capacity(objects.len());
    for (i, o) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(o);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for off in offsets {
        out.extend_from_slice(format!("{off:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R /Info 4 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// A PDF string literal's body: `(`, `)` and `\` escaped.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '(' | ')' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A content stream writing `lines` top to bottom in 12-point Helvetica.
fn content_stream(lines: &[String]) -> Vec<u8> {
    let mut s = String::from("BT /F1 12 Tf 14 TL 72 740 Td\n");
    for (i, l) in lines.iter().enumerate() {
        if i > 0 {
            s.push_str("T* ");
        }
        s.push_str(&format!("({}) Tj\n", escape(l)));
    }
    s.push_str("ET");
    s.into_bytes()
}

/// A zlib stream of `n` zero bytes, written directly (a literal, then copies of 258
/// bytes at distance 1 in one block of fixed Huffman codes): 13 bits per 258 bytes,
/// written without compressing n bytes.
pub fn zeros_zlib(n: u64) -> Vec<u8> {
    let mut w = BitWriter::default();
    w.out.extend_from_slice(&[0x78, 0x01]);
    w.bits(1, 1); // BFINAL
    w.bits(1, 2); // BTYPE 01: fixed Huffman codes
    let mut left = n;
    if left > 0 {
        w.code(0b0011_0000, 8); // literal 0
        left -= 1;
    }
    while left > 0 {
        let len = left.min(258);
        if len < 3 {
            for _ in 0..len {
                w.code(0b0011_0000, 8);
            }
        } else if len == 258 {
            w.code(0b1100_0101, 8); // length symbol 285: 258
            w.code(0, 5); // distance symbol 0: 1
        } else {
            // Length symbols 257..=264 are 3..=10 with no extra bits; longer tails
            // are written as literals (at most 257 of them, once).
            if len <= 10 {
                let sym = 257 + (len - 3) as u32; // 7-bit codes 0000001..
                w.code(sym - 256, 7);
                w.code(0, 5);
            } else {
                for _ in 0..len {
                    w.code(0b0011_0000, 8);
                }
            }
        }
        left -= len;
    }
    w.code(0, 7); // end of block
    w.flush();
    let b = (n % 65521) as u32;
    w.out.extend_from_slice(&((b << 16) | 1).to_be_bytes());
    w.out
}

#[derive(Default)]
struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl BitWriter {
    /// `count` bits of `value`, least significant first (headers and extra bits).
    fn bits(&mut self, value: u32, count: u32) {
        self.acc |= (value as u64) << self.n;
        self.n += count;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    /// A Huffman code of `len` bits, most significant first.
    fn code(&mut self, code: u32, len: u32) {
        let reversed = code.reverse_bits() >> (32 - len);
        self.bits(reversed, len);
    }

    fn flush(&mut self) {
        if self.n > 0 {
            self.out.push(self.acc as u8);
            self.acc = 0;
            self.n = 0;
        }
    }
}

/// The document host.
pub fn docs_host() -> Host {
    let url = |p: &str| format!("http://{DOCS_HOST}{p}");
    let mut resources = BTreeMap::new();
    let mut add = |r: Resource| {
        resources.insert(r.path.clone(), r);
    };
    let docs = [
        "/report.pdf",
        "/lying.html",
        "/broken.pdf",
        "/huge.pdf",
        "/slow.pdf",
        "/bomb.pdf",
        "/minutes.docx",
        "/gauges.xlsx",
        "/survey.pptx",
        "/notes.odt",
        "/news.rss",
        "/news.atom",
    ];
    let mut home = PageBuilder::new("Documents", None, None);
    home.heading("Documents");
    let list: Vec<(String, String)> = docs
        .iter()
        .map(|d| (d.to_string(), d.to_string()))
        .collect();
    home.link_list("Files", &list);
    let (body, _) = home.finish();
    let mut r = Resource::new(url("/"), "/".into(), Kind::Home, 200, body);
    r.title = Some("Documents".into());
    r.outlinks = docs.iter().map(|d| url(d)).collect();
    add(r);
    for (path, title) in [
        ("/linked.html", "Linked from a PDF annotation"),
        ("/from-text.html", "Named in a PDF's text"),
        ("/from-lying.html", "Linked from the PDF served as HTML"),
    ] {
        add(plain_page(&url(path), path, title));
    }
    let report = [
        PdfPage {
            lines: vec![
                REPORT_PHRASES[0].into(),
                format!("The data are at {} for everyone.", url("/from-text.html")),
            ],
            links: vec![url("/linked.html")],
        },
        PdfPage {
            lines: vec![REPORT_PHRASES[1].into()],
            links: Vec::new(),
        },
        PdfPage {
            lines: vec![REPORT_PHRASES[2].into()],
            links: Vec::new(),
        },
    ];
    let mut r = doc(
        &url("/report.pdf"),
        "/report.pdf",
        pdf(Some("Annual River Report"), &report, true),
        "a PDF of three pages: title, text, a link annotation and a URL in its text",
    );
    r.title = Some("Annual River Report".into());
    r.outlinks = vec![url("/linked.html"), url("/from-text.html")];
    add(r);
    for (path, ctype, title, line) in OFFICE {
        let target = office_link(path);
        add(plain_page(
            &url(&target),
            &target,
            &format!("Linked from {path}"),
        ));
        let href = url(&target);
        let doc_lines = [line, "Recorded by the river survey team"];
        let d = super::office::Doc {
            title,
            lines: &doc_lines,
            link: (&href, "the linked page"),
        };
        let body = match path.rsplit('.').next() {
            Some("docx") => super::office::docx(&d),
            Some("xlsx") => super::office::xlsx(&d),
            Some("pptx") => super::office::pptx(&d),
            _ => super::office::odt(&d),
        };
        let mut r = Resource::new(url(path), path.into(), Kind::Document, 200, body);
        r.content_type = ctype;
        r.title = Some(title.into());
        r.outlinks = vec![href.clone()];
        r.note = Some("an office document with a title, text and one hyperlink".into());
        add(r);
    }
    // Two feeds of the same two items: RSS 2.0 and Atom (served as text/xml).
    let items = [
        ("/news/flood.html", "Flood warning for the lower valley"),
        ("/news/weir.html", "The new weir opens in spring"),
    ];
    for (path, title) in items {
        add(plain_page(&url(path), path, title));
    }
    let mut rss = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\"><channel>\
         <title>River News</title><link>http://docs.web.test/</link>\
         <description>News of the river &amp; its valley</description>",
    );
    let mut atom = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\">\
         <title>River News (Atom)</title>",
    );
    for (path, title) in items {
        rss.push_str(&format!(
            "<item><title>{title}</title><link>{}</link><description>&lt;p&gt;{title}.&lt;/p&gt;</description></item>",
            url(path)
        ));
        atom.push_str(&format!(
            "<entry><title>{title}</title><link href=\"{path}\"/><summary>{title}.</summary></entry>"
        ));
    }
    rss.push_str("</channel></rss>\n");
    atom.push_str("</feed>\n");
    for (path, body, ctype, title) in [
        ("/news.rss", rss, "application/rss+xml", "River News"),
        ("/news.atom", atom, "text/xml", "River News (Atom)"),
    ] {
        let mut r = Resource::new(
            url(path),
            path.into(),
            Kind::Document,
            200,
            body.into_bytes(),
        );
        r.content_type = ctype;
        r.title = Some(title.into());
        r.outlinks = items.iter().map(|(p, _)| url(p)).collect();
        r.note = Some("a feed of two items: their links are its outlinks".into());
        add(r);
    }
    let lying = [PdfPage {
        lines: vec!["This PDF is served as text/html".into()],
        links: vec![url("/from-lying.html")],
    }];
    let mut r = doc(
        &url("/lying.html"),
        "/lying.html",
        pdf(Some("A PDF in disguise"), &lying, true),
        "a PDF the server calls text/html: parse must tell by its bytes",
    );
    r.content_type = super::model::HTML_TYPE;
    r.title = Some("A PDF in disguise".into());
    r.outlinks = vec![url("/from-lying.html")];
    add(r);
    add(doc(
        &url("/broken.pdf"),
        "/broken.pdf",
        pdf(
            Some("Broken"),
            &[PdfPage {
                lines: vec!["No page box".into()],
                links: Vec::new(),
            }],
            false,
        ),
        "a PDF whose pages have no MediaBox: the PDF library panics on them",
    ));
    let huge: Vec<PdfPage> = (1..=HUGE_PAGES)
        .map(|i| PdfPage {
            lines: vec![format!("Huge document page {i}")],
            links: Vec::new(),
        })
        .collect();
    add(doc(
        &url("/huge.pdf"),
        "/huge.pdf",
        pdf(Some("Huge"), &huge, true),
        "a PDF of 2000 pages: parse reads parse.max_document_pages of them",
    ));
    let mut slow = String::from("BT /F1 1 Tf 1 TL 0 0 Td\n");
    for _ in 0..SLOW_OPERATORS {
        slow.push_str("(ab) Tj ");
    }
    slow.push_str("ET");
    let slow = vec![deflate(slow.as_bytes()); SLOW_PAGES];
    add(doc(
        &url("/slow.pdf"),
        "/slow.pdf",
        write_pdf(Some("Slow"), &slow, &[], true, true),
        "100 pages of 100,000 text operators each (about 150 KB deflated): seconds to read, \
         a page at a time in little memory",
    ));
    add(doc(
        &url("/bomb.pdf"),
        "/bomb.pdf",
        write_pdf(Some("Bomb"), &[zeros_zlib(BOMB_BYTES)], &[], true, true),
        "a page whose content stream inflates to 512 MiB (3.4 MB deflated): a decompression bomb",
    ));
    Host {
        name: DOCS_HOST.into(),
        robots: Robots {
            groups: None,
            unavailable: false,
            padding_bytes: 0,
            moved_to: None,
            sitemaps: Vec::new(),
        },
        resources,
    }
}

/// A page with a title and a heading and no links (what documents link to).
fn plain_page(url: &str, path: &str, title: &str) -> Resource {
    let mut b = PageBuilder::new(title, None, None);
    b.heading(title);
    let (body, _) = b.finish();
    let mut r = Resource::new(url.into(), path.into(), Kind::Page, 200, body);
    r.title = Some(title.into());
    r
}

/// A PDF resource.
fn doc(url: &str, path: &str, body: Vec<u8>, note: &str) -> Resource {
    let mut r = Resource::new(url.into(), path.into(), Kind::Document, 200, body);
    r.content_type = PDF_TYPE;
    r.note = Some(note.into());
    r
}

fn deflate(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    let _ = e.write_all(bytes);
    e.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn the_zero_stream_inflates_to_its_length() {
        for n in [0u64, 1, 2, 3, 10, 11, 258, 259, 1000, 70_000] {
            let z = zeros_zlib(n);
            let mut out = Vec::new();
            flate2::read::ZlibDecoder::new(&z[..])
                .read_to_end(&mut out)
                .unwrap();
            assert_eq!(out.len() as u64, n, "{n}");
            assert!(out.iter().all(|&b| b == 0));
        }
        assert!(zeros_zlib(BOMB_BYTES).len() < 8 << 20);
    }

    #[test]
    fn a_pdf_starts_and_ends_as_one() {
        let p = pdf(Some("T (x)"), &[PdfPage::default()], true);
        assert!(p.starts_with(b"%PDF-1.4"));
        assert!(p.ends_with(b"%%EOF\n"));
        assert!(String::from_utf8_lossy(&p).contains("/Title (T \\(x\\))"));
    }
}
