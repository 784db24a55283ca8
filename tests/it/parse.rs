//! Runs the real `parse` binary on a hand-built segment and checks its datasets.

use crate::common;
use std::path::{Path, PathBuf};
use std::process::Command;

use trawl::records::{ContentRecord, CrawlParseRecord, Header, ParseDataRecord, ParseTextRecord};
use trawl::store::layout::{CrawlDir, SegmentMeta};
use trawl::store::parquet::{self, PartWriter, StagedDataset};
use trawl::store::partition::Partitioner;

const PARTS: usize = 4;
const SEG: &str = "20260101000000";

fn content(
    url: &str,
    ct: &str,
    body: Vec<u8>,
    score: f64,
    depth: i32,
    headers: Vec<Header>,
) -> ContentRecord {
    ContentRecord {
        url: url.into(),
        host: trawl::urls::host_of(url),
        fetch_time: 1_700_000_000_000,
        http_status: 200,
        content_type: Some(ct.into()),
        headers,
        content: body,
        truncated: false,
        ip_address: Some("127.0.0.1".into()),
        score,
        depth,
        rendered: None,
        render_status: None,
    }
}

fn build_crawl(root: &Path, rows: Vec<ContentRecord>, with_content: bool) -> PathBuf {
    let dir = CrawlDir::new(root);
    let seg = dir.segments_dir().join(SEG);
    std::fs::create_dir_all(&seg).unwrap();
    parquet::write_json(
        &seg.join("_meta.json"),
        &SegmentMeta {
            name: SEG.into(),
            generated_time: 0,
            partitions: PARTS,
            partition_key: Default::default(),
            urls: rows.len() as u64,
            redirects_in_crawl_parse: false,
        },
    )
    .unwrap();
    if with_content {
        let staged = StagedDataset::new(&seg.join("content")).unwrap();
        let mut writers: Vec<_> = (0..PARTS)
            .map(|i| PartWriter::<ContentRecord>::create(&staged.part_path(i)).unwrap())
            .collect();
        for r in rows {
            let p = Partitioner::by_host(PARTS).of_host(&r.host);
            writers[p].push(r).unwrap();
        }
        for w in writers {
            w.finish().unwrap();
        }
        staged.commit().unwrap();
    }
    seg
}

fn run_parse(root: &Path, config: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(common::bin("parse"))
        .arg("--crawl-dir")
        .arg(root)
        .arg("--config")
        .arg(config)
        .args(extra)
        .output()
        .unwrap()
}

fn pages() -> Vec<ContentRecord> {
    let home = br#"<!doctype html><html lang="en"><head><title>Home page</title>
        <meta name="description" content="The home">
        <link rel="canonical" href="/index.html"></head>
        <body><h1>Welcome</h1><p>Some text here.</p>
        <a href="/p1">First page</a> <a href="http://b.test/x#frag">Bee</a>
        <a href="/p1">dup</a> <a rel="nofollow" href="http://c.test/nf">nf</a>
        <a href="mailto:x@a.test">mail</a></body></html>"#;
    let robots = br#"<html><head><meta name="robots" content="noindex,nofollow"></head>
        <body><a href="/hidden">hidden</a></body></html>"#;
    let (sjis, _, _) = encoding_rs::SHIFT_JIS
        .encode("<html><body><p>日本語のページです。</p><a href='/j'>リンク</a></body></html>");
    vec![
        content("http://a.test/", "text/html", home.to_vec(), 1.0, 0, vec![]),
        content(
            "http://a.test/robots",
            "text/html",
            robots.to_vec(),
            0.5,
            0,
            vec![],
        ),
        content(
            "http://b.test/img.png",
            "image/png",
            vec![0x89, b'P', b'N', b'G', 0, 1, 2],
            0.2,
            1,
            vec![],
        ),
        content(
            "http://b.test/big",
            "text/html",
            vec![b'a'; 6000],
            0.2,
            1,
            vec![],
        ),
        content(
            "http://j.test/",
            "text/html; charset=Shift_JIS",
            sjis.into_owned(),
            0.3,
            2,
            vec![],
        ),
        content(
            "http://b.test/hdr",
            "text/html",
            b"<a href='/z'>z</a>".to_vec(),
            0.1,
            1,
            vec![Header {
                name: "x-robots-tag".into(),
                value: "nofollow".into(),
            }],
        ),
    ]
}

/// Builds a crawl of `rows` in a new temporary directory, writes `config` as its
/// trawl.toml and runs parse with `extra` flags; asserts it succeeded. Returns the
/// directory (kept alive), the segment and parse's stderr.
fn parse_rows(
    rows: Vec<ContentRecord>,
    config: &str,
    extra: &[&str],
) -> (tempfile::TempDir, PathBuf, String) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("crawl");
    let seg = build_crawl(&root, rows, true);
    let cfg = tmp.path().join("trawl.toml");
    std::fs::write(&cfg, config).unwrap();
    let out = run_parse(&root, &cfg, extra);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    (tmp, seg, stderr)
}

fn write_config(root: &Path) -> PathBuf {
    let p = root.join("trawl.toml");
    std::fs::write(&p, "[parse]\nmax_page_bytes = 5000\n").unwrap();
    p
}

#[test]
fn parses_a_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("crawl");
    let seg = build_crawl(&root, pages(), true);
    let cfg = write_config(tmp.path());
    // A leftover of a killed run must not get in the way.
    std::fs::create_dir_all(seg.join("parse_data.tmp-999999")).unwrap();
    let out = run_parse(&root, &cfg, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("parse: segment 20260101000000: 6 pages (5 success, 1 failed)"),
        "{stderr}"
    );
    assert!(!seg.join("parse_data.tmp-999999").exists());

    let data: Vec<ParseDataRecord> = parquet::read_dataset(&seg.join("parse_data")).unwrap();
    let text: Vec<ParseTextRecord> = parquet::read_dataset(&seg.join("parse_text")).unwrap();
    assert_eq!(data.len(), 6);
    assert_eq!(text.len(), 6);
    // Same partitioning as content.
    for (i, part) in parquet::part_files(&seg.join("parse_data"))
        .unwrap()
        .iter()
        .enumerate()
    {
        for r in parquet::read_part_all::<ParseDataRecord>(part).unwrap() {
            assert_eq!(
                Partitioner::by_host(PARTS).of_host(&trawl::urls::host_of(&r.url)),
                i
            );
        }
    }
    let get = |u: &str| data.iter().find(|d| d.url == u).unwrap();
    let home = get("http://a.test/");
    assert_eq!(home.status, "parse_success");
    assert_eq!(home.title.as_deref(), Some("Home page"));
    assert_eq!(home.lang.as_deref(), Some("en"));
    assert_eq!(home.canonical.as_deref(), Some("http://a.test/index.html"));
    assert_eq!(
        home.metadata.get("description").map(String::as_str),
        Some("The home")
    );
    let links: Vec<(&str, &str, bool)> = home
        .outlinks
        .iter()
        .map(|l| (l.url.as_str(), l.anchor.as_str(), l.nofollow))
        .collect();
    assert_eq!(
        links,
        vec![
            ("http://a.test/p1", "First page", false),
            ("http://b.test/x", "Bee", false),
            ("http://c.test/nf", "nf", true)
        ]
    );
    assert!(home.simhash.is_some() && home.signature.is_some());
    let rob = get("http://a.test/robots");
    assert!(rob.noindex && rob.nofollow);
    let img = get("http://b.test/img.png");
    assert_eq!(
        (img.status.as_str(), img.reason.as_str()),
        ("parse_success", "not_html")
    );
    let big = get("http://b.test/big");
    assert_eq!(
        (big.status.as_str(), big.reason.as_str()),
        ("parse_failed", "too_large")
    );
    let j = get("http://j.test/");
    assert_eq!(j.charset.as_deref(), Some("Shift_JIS"));
    assert_eq!(j.charset_source.as_deref(), Some("http_header"));
    let jt = text.iter().find(|t| t.url == "http://j.test/").unwrap();
    assert!(jt.text.contains("日本語のページです。"), "{}", jt.text);
    assert!(get("http://b.test/hdr").nofollow);

    // crawl_parse: partitioned by the row's url host; link rows carry depth+1 and the OPIC share.
    let mut cp = Vec::new();
    for (i, part) in parquet::part_files(&seg.join("crawl_parse"))
        .unwrap()
        .iter()
        .enumerate()
    {
        for r in parquet::read_part_all::<CrawlParseRecord>(part).unwrap() {
            assert_eq!(
                Partitioner::by_host(PARTS).of_host(&trawl::urls::host_of(&r.url)),
                i,
                "{r:?}"
            );
            assert_eq!(r.host, trawl::urls::host_of(&r.url));
            cp.push(r);
        }
    }
    let sigs: Vec<&str> = cp
        .iter()
        .filter(|r| r.kind == "signature")
        .map(|r| r.url.as_str())
        .collect();
    assert_eq!(sigs.len(), 5, "{sigs:?}");
    assert!(!sigs.contains(&"http://b.test/big"));
    let mut link_rows: Vec<(&str, &str, f64, i32)> = cp
        .iter()
        .filter(|r| r.kind == "link")
        .map(|r| {
            (
                r.url.as_str(),
                r.from_url.as_deref().unwrap(),
                r.score,
                r.depth,
            )
        })
        .collect();
    link_rows.sort_by(|a, b| a.0.cmp(b.0));
    assert_eq!(
        link_rows,
        vec![
            ("http://a.test/p1", "http://a.test/", 0.5, 1),
            ("http://b.test/x", "http://a.test/", 0.5, 1),
            ("http://j.test/j", "http://j.test/", 0.3, 3),
        ]
    );
    let p1 = cp.iter().find(|r| r.url == "http://a.test/p1").unwrap();
    assert_eq!(p1.anchor.as_deref(), Some("First page"));

    // A second run refuses, and says how to reparse; --reparse replaces.
    let again = run_parse(&root, &cfg, &[SEG]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("--reparse"));
    let re = run_parse(&root, &cfg, &[SEG, "--reparse"]);
    assert!(
        re.status.success(),
        "{}",
        String::from_utf8_lossy(&re.stderr)
    );
    let data2: Vec<ParseDataRecord> = parquet::read_dataset(&seg.join("parse_data")).unwrap();
    assert_eq!(data2.len(), 6);
}

#[test]
fn unfetched_segment_says_run_fetch() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("crawl");
    build_crawl(&root, Vec::new(), false);
    let cfg = write_config(tmp.path());
    let out = run_parse(&root, &cfg, &[SEG]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("run `fetch`"), "{err}");
}

#[test]
fn interrupted_run_leftovers_are_replaced() {
    // A run killed after committing parse_text but before parse_data: rerun works.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("crawl");
    let seg = build_crawl(&root, pages(), true);
    let cfg = write_config(tmp.path());
    let staged = StagedDataset::new(&seg.join("parse_text")).unwrap();
    PartWriter::<ParseTextRecord>::create(&staged.part_path(0))
        .unwrap()
        .finish()
        .unwrap();
    staged.commit().unwrap();
    let out = run_parse(&root, &cfg, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text: Vec<ParseTextRecord> = parquet::read_dataset(&seg.join("parse_text")).unwrap();
    assert_eq!(text.len(), 6);
}

/// Issue 4's metadata, non-HTML and link requirements, through the `parse` binary:
/// keywords, lang and headings recorded; text/plain parsed as text; PDF and images
/// recorded with type and size and no outlinks; `X-Robots-Tag` noarchive and
/// agent-specific values; `none` in the header and in meta robots; entities and
/// whitespace in `href`; `--max-outlinks`.
#[test]
fn metadata_non_html_robots_headers_and_outlink_cap() {
    let meta = br#"<!DOCTYPE html><html lang="fr-CA"><head><title>Meta page</title>
        <meta name="keywords" content="crawler,  parquet ,rust">
        <meta name="description" content="  About   meta  "></head>
        <body><h1>Main <em>title</em></h1><h2>Part one</h2><h2>Part two</h2><h3>Detail</h3>
        <p>Words of the page.</p>
        <a href="/q?a=1&amp;b=2&#38;c=3">entities</a>
        <a href="
           /w/x.html  ">whitespace</a>
        <a href="/e&#x2F;f">hex entity</a>
        <a href="/p#frag">fragment</a></body></html>"#;
    let plain = b"Plain  text file\n\nwith <a href=\"/not-a-link\">markup</a> shown as text.\n";
    let pdf =
        b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n(http://m.test/in-pdf)\n%%EOF\n".to_vec();
    let jpeg = vec![0xff, 0xd8, 0xff, 0xe0, 0, 16, b'J', b'F', b'I', b'F', 0, 1];
    let many: String = (0..30)
        .map(|i| format!("<a href='/l{i}'>link {i}</a> "))
        .collect();
    let hdr = |v: &str| {
        vec![Header {
            name: "X-Robots-Tag".into(),
            value: v.into(),
        }]
    };
    let rows = vec![
        content(
            "http://m.test/meta",
            "text/html",
            meta.to_vec(),
            1.0,
            0,
            vec![],
        ),
        content(
            "http://m.test/plain.txt",
            "text/plain; charset=utf-8",
            plain.to_vec(),
            1.0,
            0,
            vec![],
        ),
        content(
            "http://m.test/doc.pdf",
            "application/pdf",
            pdf.clone(),
            1.0,
            0,
            vec![],
        ),
        content(
            "http://m.test/pic.jpg",
            "image/jpeg",
            jpeg.clone(),
            1.0,
            0,
            vec![],
        ),
        content(
            "http://n.test/noarchive",
            "text/html",
            b"<p>Archive me not.</p><a href='/a1'>a1</a>".to_vec(),
            1.0,
            0,
            hdr("noarchive"),
        ),
        content(
            "http://n.test/agent",
            "text/html",
            b"<p>Agent specific.</p><a href='/a2'>a2</a>".to_vec(),
            1.0,
            0,
            // Ours applies; another crawler's does not.
            vec![
                hdr("otherbot: noindex, nofollow").remove(0),
                hdr("trawl: noindex").remove(0),
            ],
        ),
        content(
            "http://n.test/many",
            "text/html",
            many.into_bytes(),
            1.0,
            0,
            vec![],
        ),
        // `none` = noindex, nofollow: in the header, and in a meta tag.
        content(
            "http://n.test/none",
            "text/html",
            b"<p>Nothing for crawlers.</p><a href='/a3'>a3</a>".to_vec(),
            1.0,
            0,
            hdr("none"),
        ),
        content(
            "http://n.test/meta-none",
            "text/html",
            b"<html><head><meta name='robots' content='NONE'></head><body><p>Nothing here either.</p><a href='/a4'>a4</a></body></html>".to_vec(),
            1.0,
            0,
            vec![],
        ),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("crawl");
    let seg = build_crawl(&root, rows, true);
    let cfg = write_config(tmp.path());
    let out = run_parse(&root, &cfg, &["--max-outlinks", "10"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The "PDF" is one in name and signature only: the document helper cannot read it.
    assert!(stderr.contains("9 pages (8 success, 1 failed)"), "{stderr}");

    let data: Vec<ParseDataRecord> = parquet::read_dataset(&seg.join("parse_data")).unwrap();
    let text: Vec<ParseTextRecord> = parquet::read_dataset(&seg.join("parse_text")).unwrap();
    let cp: Vec<CrawlParseRecord> = parquet::read_dataset(&seg.join("crawl_parse")).unwrap();
    let get = |u: &str| data.iter().find(|d| d.url == u).unwrap();
    let text_of = |u: &str| text.iter().find(|t| t.url == u).unwrap();
    let md = |d: &ParseDataRecord, k: &str| d.metadata.get(k).cloned();
    let links_from = |u: &str| {
        cp.iter()
            .filter(|r| r.kind == "link" && r.from_url.as_deref() == Some(u))
            .count()
    };

    // Metadata: lang, keywords, description, headings h1-h3 (one per line).
    let m = get("http://m.test/meta");
    assert_eq!(m.lang.as_deref(), Some("fr-CA"));
    assert_eq!(md(m, "keywords").as_deref(), Some("crawler, parquet ,rust"));
    assert_eq!(md(m, "description").as_deref(), Some("About meta"));
    assert_eq!(md(m, "h1").as_deref(), Some("Main title"));
    assert_eq!(md(m, "h2").as_deref(), Some("Part one\nPart two"));
    assert_eq!(md(m, "h3").as_deref(), Some("Detail"));
    // Entities decoded, surrounding whitespace and newlines in href ignored, fragment dropped.
    let urls: Vec<&str> = m.outlinks.iter().map(|l| l.url.as_str()).collect();
    assert_eq!(
        urls,
        vec![
            "http://m.test/q?a=1&b=2&c=3",
            "http://m.test/w/x.html",
            "http://m.test/e/f",
            "http://m.test/p"
        ]
    );

    // text/plain: decoded text, whitespace collapsed, no outlinks, no main text.
    let p = get("http://m.test/plain.txt");
    assert_eq!(
        (p.status.as_str(), p.reason.as_str()),
        ("parse_success", "ok")
    );
    assert_eq!(p.charset.as_deref(), Some("UTF-8"));
    assert!(p.outlinks.is_empty() && p.signature.is_some() && p.simhash.is_some());
    let pt = text_of("http://m.test/plain.txt");
    assert_eq!(
        pt.text,
        "Plain text file with <a href=\"/not-a-link\">markup</a> shown as text."
    );
    assert_eq!(pt.main_text, None);
    assert_eq!(links_from("http://m.test/plain.txt"), 0);

    // A broken PDF (no cross-reference table, no pages): read by the document helper,
    // which says why it failed; no text, no links (docs/parse.md; tests/it/documents.rs
    // has real ones).
    let d = get("http://m.test/doc.pdf");
    assert_eq!(
        (d.status.as_str(), d.reason.as_str()),
        ("parse_failed", "document_failed")
    );
    assert_eq!(md(d, "format").as_deref(), Some("pdf"));
    assert!(md(d, "error").is_some_and(|e| !e.is_empty()), "{d:?}");
    assert_eq!(md(d, "size"), Some(pdf.len().to_string()));
    assert!(d.outlinks.is_empty() && d.title.is_none());
    assert_eq!(text_of("http://m.test/doc.pdf").text, "");

    // An image: type and size recorded, no text, no outlinks, signature of the bytes.
    {
        let (url, ty, body) = ("http://m.test/pic.jpg", "image/jpeg", &jpeg);
        let d = get(url);
        assert_eq!(
            (d.status.as_str(), d.reason.as_str()),
            ("parse_success", "not_html")
        );
        assert_eq!(md(d, "type").as_deref(), Some(ty));
        assert_eq!(md(d, "size"), Some(body.len().to_string()));
        assert!(d.outlinks.is_empty() && d.simhash.is_none() && d.title.is_none());
        assert_eq!(
            d.signature.as_deref(),
            Some(blake3::hash(body).to_hex().as_str())
        );
        assert_eq!(text_of(url).text, "");
        assert_eq!(links_from(url), 0);
        // A signature row still feeds updatedb's not-modified test.
        assert!(cp.iter().any(|r| r.kind == "signature" && r.url == url));
    }

    // X-Robots-Tag: noarchive recorded, links still followed.
    let n = get("http://n.test/noarchive");
    assert!(n.noarchive && !n.noindex && !n.nofollow);
    assert_eq!(links_from("http://n.test/noarchive"), 1);
    // Only the value addressed to our agent applies.
    let a = get("http://n.test/agent");
    assert!(a.noindex && !a.nofollow && !a.noarchive);
    assert_eq!(links_from("http://n.test/agent"), 1);

    // `none`, from the header or a meta tag (any case): noindex and nofollow, so the
    // page's link is not followed.
    for url in ["http://n.test/none", "http://n.test/meta-none"] {
        let d = get(url);
        assert!(d.noindex && d.nofollow && !d.noarchive, "{url}");
        assert_eq!(links_from(url), 0, "{url}");
    }

    // --max-outlinks 10: the first ten links in document order.
    let many = get("http://n.test/many");
    let urls: Vec<String> = many.outlinks.iter().map(|l| l.url.clone()).collect();
    let want: Vec<String> = (0..10).map(|i| format!("http://n.test/l{i}")).collect();
    assert_eq!(urls, want);
    assert_eq!(links_from("http://n.test/many"), 10);
}

/// A page over the per-page time budget becomes `parse_failed` / `time_budget`
/// with the phase in `metadata.error`; the stage goes on with the other pages.
#[test]
fn time_budget_fails_the_page_not_the_stage() {
    // About 3 MB of paragraphs: building its DOM alone takes far more than 1 ms.
    let big = "<p>Many words in many paragraphs, again and again.</p>\n".repeat(55_000);
    let rows = vec![
        content(
            "http://t.test/big",
            "text/html",
            big.into_bytes(),
            1.0,
            0,
            vec![],
        ),
        content(
            "http://t.test/i.png",
            "image/png",
            vec![0x89, b'P', b'N', b'G'],
            1.0,
            0,
            vec![],
        ),
    ];
    let (_tmp, seg, stderr) = parse_rows(rows, "", &["--max-page-millis", "1"]);
    assert!(stderr.contains("2 pages (1 success, 1 failed)"), "{stderr}");
    let data: Vec<ParseDataRecord> = parquet::read_dataset(&seg.join("parse_data")).unwrap();
    let big = data.iter().find(|d| d.url == "http://t.test/big").unwrap();
    assert_eq!(
        (big.status.as_str(), big.reason.as_str()),
        ("parse_failed", "time_budget")
    );
    assert!(
        big.metadata
            .get("error")
            .is_some_and(|e| e.starts_with("after ")),
        "{:?}",
        big.metadata
    );
    assert!(big.outlinks.is_empty() && big.signature.is_none());
    let text: Vec<ParseTextRecord> = parquet::read_dataset(&seg.join("parse_text")).unwrap();
    assert_eq!(
        text.iter()
            .find(|t| t.url == "http://t.test/big")
            .unwrap()
            .text,
        ""
    );
}

/// Pages in every charset the issue lists, through the `parse` binary: declared
/// honestly in `<meta>`, not declared at all, and declared wrongly in the HTTP header.
#[test]
fn charsets_honest_undeclared_and_lying() {
    let samples = charset_samples();
    let page = |body: &str, meta: Option<&str>| {
        let m = meta
            .map(|l| format!("<meta charset=\"{l}\">"))
            .unwrap_or_default();
        format!(
            "<!doctype html><html><head>{m}<title>t</title></head><body><p>{body}</p><p>{body}</p></body></html>"
        )
    };
    let mut rows = Vec::new();
    for (i, (label, text)) in samples.iter().enumerate() {
        let enc = encoding_rs::Encoding::for_label(label.as_bytes()).unwrap();
        let bytes = |html: String| enc.encode(&html).0.into_owned();
        let lie = if *label == "UTF-8" {
            "ISO-8859-1"
        } else {
            "utf-8"
        };
        rows.push(content(
            &format!("http://c{i}.test/honest"),
            "text/html",
            bytes(page(text, Some(label))),
            1.0,
            0,
            vec![],
        ));
        rows.push(content(
            &format!("http://c{i}.test/undeclared"),
            "text/html",
            bytes(page(text, None)),
            1.0,
            0,
            vec![],
        ));
        rows.push(content(
            &format!("http://c{i}.test/lying"),
            &format!("text/html; charset={lie}"),
            bytes(page(text, None)),
            1.0,
            0,
            vec![],
        ));
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("crawl");
    let seg = build_crawl(&root, rows, true);
    let cfg = write_config(tmp.path());
    let out = run_parse(&root, &cfg, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let data: Vec<ParseDataRecord> = parquet::read_dataset(&seg.join("parse_data")).unwrap();
    let text: Vec<ParseTextRecord> = parquet::read_dataset(&seg.join("parse_text")).unwrap();
    for (i, (label, sample)) in samples.iter().enumerate() {
        let name = encoding_rs::Encoding::for_label(label.as_bytes())
            .unwrap()
            .name();
        for (variant, source) in [
            ("honest", "meta"),
            ("undeclared", "detected"),
            ("lying", "detected"),
        ] {
            let url = format!("http://c{i}.test/{variant}");
            let d = data.iter().find(|d| d.url == url).unwrap();
            let t = text.iter().find(|t| t.url == url).unwrap();
            assert!(
                t.text.contains(sample),
                "{label} {variant}: decoded as {:?}: {}",
                d.charset,
                t.text
            );
            assert_eq!(
                d.charset_source.as_deref(),
                Some(source),
                "{label} {variant}"
            );
            if variant == "honest" {
                assert_eq!(d.charset.as_deref(), Some(name), "{label}");
            }
            if variant == "lying" {
                assert!(
                    d.metadata.contains_key("declared_charset"),
                    "{label}: {:?}",
                    d.metadata
                );
            }
        }
    }
}

/// Every link source the issue lists, through the `parse` binary: `a`, `area`,
/// `frame`, `iframe`, meta refresh, against `<base href>`; image alt as anchor,
/// anchors cut to `max_anchor_length`; nofollow links kept as link rows when
/// `ignore_nofollow_links = false`.
#[test]
fn link_sources_base_anchors_and_nofollow_config() {
    let html = br#"<html><head><base href="http://cdn.test/root/">
        <meta http-equiv="refresh" content="5; url=refreshed.html"></head>
        <body><a href="a.html">Anchor text longer than five</a>
        <a href="img.html"><img src="x.png" alt="Picture"></a>
        <map name="m"><area href="area.html" alt="Area"></map>
        <iframe src="inner.html"></iframe>
        <a rel="nofollow" href="nf.html">nf</a></body></html>"#;
    let frames =
        br#"<html><frameset><frame src="/left.html"><frame src="/right.html"></frameset></html>"#;
    let rows = vec![
        content(
            "http://l.test/dir/page",
            "text/html",
            html.to_vec(),
            1.0,
            0,
            vec![],
        ),
        content(
            "http://f.test/",
            "text/html",
            frames.to_vec(),
            1.0,
            0,
            vec![],
        ),
    ];
    let (_tmp, seg, _) = parse_rows(
        rows,
        "[parse]\nignore_nofollow_links = false\nmax_anchor_length = 5\n",
        &[],
    );
    let data: Vec<ParseDataRecord> = parquet::read_dataset(&seg.join("parse_data")).unwrap();
    let get = |u: &str| data.iter().find(|d| d.url == u).unwrap();
    let links = |u: &str| -> Vec<(String, String, bool)> {
        get(u)
            .outlinks
            .iter()
            .map(|l| (l.url.clone(), l.anchor.clone(), l.nofollow))
            .collect()
    };
    let l = |u: &str, a: &str, nf: bool| (u.to_string(), a.to_string(), nf);
    assert_eq!(
        links("http://l.test/dir/page"),
        vec![
            l("http://cdn.test/root/refreshed.html", "", false),
            l("http://cdn.test/root/a.html", "Ancho", false),
            l("http://cdn.test/root/img.html", "Pictu", false),
            l("http://cdn.test/root/area.html", "Area", false),
            l("http://cdn.test/root/inner.html", "", false),
            l("http://cdn.test/root/nf.html", "nf", true),
        ]
    );
    assert_eq!(
        links("http://f.test/"),
        vec![
            l("http://f.test/left.html", "", false),
            l("http://f.test/right.html", "", false),
        ]
    );
    let cp: Vec<CrawlParseRecord> = parquet::read_dataset(&seg.join("crawl_parse")).unwrap();
    assert!(
        cp.iter()
            .any(|r| r.kind == "link" && r.url == "http://cdn.test/root/nf.html"),
        "nofollow link kept when ignore_nofollow_links = false"
    );
}

/// One sample text per charset the parser must decode, as `(encoding label, text)`
/// (tests/data/charset_samples.txt, shared with the other charset tests).
fn charset_samples() -> Vec<(&'static str, &'static str)> {
    let samples = include_str!("../data/charset_samples.txt")
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

/// A page of the vendored article extraction benchmark (bench/data, tuning half).
fn benchmark_page(id: &str) -> Vec<u8> {
    use std::io::Read;
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/data/article-extraction-benchmark/html");
    let name = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with(id))
        .unwrap_or_else(|| panic!("no page {id} in {}", dir.display()));
    let gz = std::fs::read(dir.join(name)).unwrap();
    let mut html = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut html)
        .unwrap();
    html
}

/// Hard cases of main text, through the binary: real pages of the article
/// benchmark's tuning half (docs/parse.md, "Main text") and two pages that are not
/// articles.
#[test]
fn main_text_hard_cases() {
    // (page, url, lines that must be there, text that must not)
    let cases: &[(&str, &str, &[&str], &[&str])] = &[
        // The article's wrapper is named like boilerplate (`box article
        // modal-enabled`, `entry-content-read-more`); the photo credit and the
        // dateline go; the headline is the title, not the first line.
        (
            "432362",
            "http://nypost.test/plague",
            &["A case of the bubonic plague was reported in China over the weekend"],
            &["Shutterstock", "4:10pm", "Chinese hunter catches"],
        ),
        // Tweets embedded in a "social-media-embed" box are quoted text; the
        // newsletter and author-contact tail goes.
        (
            "3f65af",
            "http://nj.test/meth",
            &["Yes this is real and yes the state spent nearly half a million dollars on it"],
            &["Subscribe to NJ.com", "may be reached at"],
        ),
        // A gallery's captions and photo credits go.
        (
            "05844",
            "http://sfchronicle.test/cars",
            &["Toyota is displaying a rechargeable hybrid version of the RAV4"],
            &["Photo: Damian Dovarganes", "Caption"],
        ),
        // "Posted: Fri 6:45 PM, Feb 16, 2018 |" and "Updated: ..." datelines go.
        (
            "3ce1c8",
            "http://kwch.test/swim",
            &["Trinity Academy junior Ben Patton added to his collection of state titles"],
            &["Posted:", "Updated:"],
        ),
        // "Advert" slots inside the article and the magazine's subscription tail go.
        (
            "612cd2",
            "http://morebikes.test/clymer",
            &["I’ve worked on my own vehicles since I was 17"],
            &[
                "Advert\n",
                "Click here for more information",
                "Tell us what YOU think",
            ],
        ),
        // The lede sits in a summary box of its own next to the body.
        (
            "4a44ab",
            "http://rt.test/bolivia",
            &["Three people have died during protests in Bolivia"],
            &["Like this story? Share it with a friend!", "© Reuters"],
        ),
    ];
    let mut rows: Vec<ContentRecord> = cases
        .iter()
        .map(|(id, url, _, _)| content(url, "text/html", benchmark_page(id), 1.0, 0, vec![]))
        .collect();
    let mut nav = String::from("<nav><ul>");
    for i in 0..25 {
        nav.push_str(&format!("<li><a href=/s{i}>Section number {i}</a></li>"));
    }
    nav.push_str("</ul></nav>");
    let mut home = format!("<html><head><title>Valley News</title></head><body>{nav}<main>");
    for i in 0..10 {
        home.push_str(&format!(
            "<article><h2><a href=/story/{i}>Headline of story {i} about the valley</a></h2>\
             <p>Floods and repairs, story {i}.</p><a href=/weather>Weather</a></article>"
        ));
    }
    home.push_str("</main></body></html>");
    let form = format!(
        "<html><body>{nav}<form action=/login><h1>Sign in</h1><label>User name</label><input name=u>\
         <label>Password</label><input type=password name=p><button>Sign in</button></form></body></html>"
    );
    rows.push(content(
        "http://valley.test/",
        "text/html",
        home.into_bytes(),
        1.0,
        0,
        vec![],
    ));
    rows.push(content(
        "http://valley.test/login",
        "text/html",
        form.into_bytes(),
        1.0,
        0,
        vec![],
    ));

    let (_tmp, seg, _) = parse_rows(rows, "", &[]);
    let text: Vec<ParseTextRecord> = parquet::read_dataset(&seg.join("parse_text")).unwrap();
    let main_of = |url: &str| {
        text.iter()
            .find(|t| t.url == url)
            .unwrap_or_else(|| panic!("no parse_text row for {url}"))
            .main_text
            .clone()
    };
    for (id, url, there, gone) in cases {
        let main = main_of(url).unwrap_or_else(|| panic!("{id}: no main text"));
        // Paragraphs are lines of their own.
        assert!(main.lines().count() >= 3, "{id}: {main}");
        for t in *there {
            assert!(
                main.lines().any(|l| l.starts_with(t)),
                "{id}: no line starting {t:?} in\n{main}"
            );
        }
        for t in *gone {
            assert!(!main.contains(t), "{id}: {t:?} in\n{main}");
        }
    }
    // Not articles: no main text; their words stay in `text`.
    for url in ["http://valley.test/", "http://valley.test/login"] {
        assert_eq!(main_of(url), None, "{url}");
        let t = text.iter().find(|t| t.url == url).unwrap();
        assert!(t.text.contains("Section number 24"), "{url}: {}", t.text);
    }
}
