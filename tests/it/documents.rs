//! Documents (PDF, DOCX, XLSX, PPTX, ODT) through the binaries: the test web's document host
//! (`testweb serve --documents`) crawled with `crawl`, each PDF's parse checked
//! against what the test web wrote into it (title, text, link annotation, URL in the
//! text), the PDF served as `text/html` recognized by its bytes, the hostile PDFs
//! (broken, huge, slow, decompression bomb) ending within their budgets with their
//! reasons, the pages only the PDFs link to fetched, and the PDFs searchable.

use crate::common;
use common::*;
use testweb::documents::{DOCS_HOST, HUGE_PAGES, OFFICE, REPORT_PHRASES, office_link};

const WEB: &[&str] = &[
    "--seed",
    "3",
    "--hosts",
    "1",
    "--pages",
    "3",
    "--seed-count",
    "0",
    "--documents",
];
const MAX_PAGES: usize = 50;

fn url(path: &str) -> String {
    format!("http://{DOCS_HOST}{path}")
}

#[test]
fn documents_are_parsed_linked_and_indexed_within_their_budgets() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web = TestWeb::start(dir, WEB);
    let map = site_map(dir, WEB);
    let config = write_config(
        dir,
        &web.addr,
        0.0,
        &format!(
            // The bomb reaches 192 MiB in about 0.15 s and the slow PDF needs about 4 s
            // for its 50 pages (2-core machine): 1.5 s is far from both, even loaded.
            "[parse]\nmax_document_pages = {MAX_PAGES}\nmax_document_millis = 1500\n\
             max_document_memory_mb = 192\n"
        ),
    );
    let crawl = dir.join("crawl");
    let seeds = dir.join("seeds.txt");
    std::fs::write(&seeds, map.seeds.join("\n") + "\n").unwrap();
    assert_eq!(map.seeds, [url("/")]);
    run_ok(
        "crawl",
        &crawl,
        &config,
        &[
            "--seeds",
            seeds.to_str().unwrap(),
            "--rounds",
            "3",
            // The bomb is 3.4 MB: over the default 2 MiB cap, it would be cut and
            // parse would only say "truncated".
            "--set",
            "fetch.max_content_bytes=8388608",
        ],
    );
    let p = parses(&crawl);

    // The report: title and metadata from its Info dictionary, its text page after
    // page (all of it main text), its links as the site map lists them.
    let (d, t) = &p[&url("/report.pdf")];
    let entry = &map.urls[&url("/report.pdf")];
    assert_eq!(d.status, "parse_success", "{d:?}");
    assert_eq!(d.title, entry.title);
    assert_eq!(d.content_type.as_deref(), Some("application/pdf"));
    assert_eq!(d.metadata["format"], "pdf");
    assert_eq!(d.metadata["pages"], "3");
    assert_eq!(d.metadata["author"], "The trawl test web");
    let links: Vec<&str> = d.outlinks.iter().map(|o| o.url.as_str()).collect();
    assert_eq!(
        links, entry.outlinks,
        "annotation, then the URL in the text"
    );
    let main = t.main_text.as_deref().unwrap();
    let mut at = 0;
    for phrase in REPORT_PHRASES {
        let found = main[at..]
            .find(phrase)
            .unwrap_or_else(|| panic!("{phrase:?} in order in {main:?}"));
        at += found + phrase.len();
    }
    assert!(t.text.contains(REPORT_PHRASES[1]));
    assert!(d.signature.is_some() && d.simhash.is_some());

    // The PDF the server calls text/html is read as the PDF it is.
    let (d, _) = &p[&url("/lying.html")];
    assert_eq!(
        map.urls[&url("/lying.html")].content_type,
        "text/html; charset=utf-8"
    );
    assert_eq!(d.status, "parse_success", "{d:?}");
    assert_eq!(d.content_type.as_deref(), Some("application/pdf"));
    assert_eq!(d.metadata["declared_content_type"], "text/html");
    assert_eq!(d.title.as_deref(), Some("A PDF in disguise"));
    assert_eq!(d.outlinks[0].url, url("/from-lying.html"));

    // The office documents: title, text, hyperlink, the media type named.
    let statuses = crawldb_statuses(&crawl);
    for (path, ctype, title, line) in OFFICE {
        let (d, t) = &p[&url(path)];
        assert_eq!(d.status, "parse_success", "{path}: {d:?}");
        assert_eq!(d.title.as_deref(), Some(title), "{path}");
        assert_eq!(d.content_type.as_deref(), Some(ctype), "{path}");
        assert_eq!(
            d.metadata["format"],
            path.rsplit('.').next().unwrap(),
            "{path}"
        );
        assert_eq!(d.metadata["author"], "The trawl test web", "{path}");
        let main = t.main_text.as_deref().unwrap_or("");
        assert!(
            main.lines().any(|l| l.starts_with(line)),
            "{path}: {line:?} in {main:?}"
        );
        let links: Vec<&str> = d.outlinks.iter().map(|o| o.url.as_str()).collect();
        assert_eq!(links, map.urls[&url(path)].outlinks, "{path}");
        assert_eq!(statuses[&url(&office_link(path))], "db_fetched", "{path}");
    }
    let (d, _) = &p[&url("/minutes.docx")];
    assert_eq!(
        d.outlinks[0].anchor, "the linked page",
        "a DOCX link keeps its text"
    );
    let (d, _) = &p[&url("/survey.pptx")];
    assert_eq!(d.metadata["pages"], "3", "a PPTX's slides are its pages");

    // The feeds: items are outlinks, their titles the anchors.
    for path in ["/news.rss", "/news.atom"] {
        let (d, t) = &p[&url(path)];
        let entry = &map.urls[&url(path)];
        assert_eq!(d.status, "parse_success", "{path}: {d:?}");
        assert_eq!(d.title, entry.title, "{path}");
        assert_eq!(d.metadata["format"], "feed");
        assert_eq!(d.metadata["items"], "2");
        let links: Vec<&str> = d.outlinks.iter().map(|o| o.url.as_str()).collect();
        assert_eq!(links, entry.outlinks, "{path}");
        assert_eq!(d.outlinks[0].anchor, "Flood warning for the lower valley");
        assert!(
            t.text.contains("The new weir opens in spring."),
            "{path}: {}",
            t.text
        );
        for l in &entry.outlinks {
            assert_eq!(statuses[l], "db_fetched", "{l}");
        }
    }

    // The pages only the PDFs link to were crawled.
    for page in ["/linked.html", "/from-text.html", "/from-lying.html"] {
        assert_eq!(statuses[&url(page)], "db_fetched", "{page}");
    }

    // The hostile ones: each within its budget, with its reason.
    let reason = |path: &str| {
        let (d, _) = &p[&url(path)];
        (
            d.status.clone(),
            d.reason.clone(),
            d.metadata.get("error").cloned(),
        )
    };
    let (status, why, error) = reason("/broken.pdf");
    assert_eq!(
        (status.as_str(), why.as_str()),
        ("parse_failed", "document_failed")
    );
    assert!(error.unwrap().contains("MediaBox"));
    let (status, why, _) = reason("/slow.pdf");
    assert_eq!(
        (status.as_str(), why.as_str()),
        ("parse_failed", "time_budget")
    );
    let (status, why, error) = reason("/bomb.pdf");
    assert_eq!(
        (status.as_str(), why.as_str()),
        ("parse_failed", "memory_budget"),
        "{error:?}"
    );
    let (d, t) = &p[&url("/huge.pdf")];
    assert_eq!(d.status, "parse_success");
    assert_eq!(d.metadata["pages"], HUGE_PAGES.to_string());
    assert_eq!(d.metadata["pages_parsed"], MAX_PAGES.to_string());
    let text = t.main_text.as_deref().unwrap();
    assert!(
        text.contains(&format!("Huge document page {MAX_PAGES}\n"))
            || text.ends_with(&format!("page {MAX_PAGES}"))
    );
    assert!(!text.contains(&format!("page {}", MAX_PAGES + 1)));

    // The PDFs are in the index like pages.
    let out = run_ok("search", &crawl, &config, &["--json", "estuary survey"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(hit_urls(&v), [url("/report.pdf")], "{v}");
    assert_eq!(v["hits"][0]["title"], "Annual River Report");
    web.stop();
}
