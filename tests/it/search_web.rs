//! The search web page (`search --serve`, docs/search.md, "Search web page") in a real browser:
//! the test web crawled and indexed through the binaries, the server started on a
//! free loopback port, then headless Chromium (tests/it/common/browser.rs) types
//! queries, clicks the button and the next-page link, and the test reads the results
//! from the DOM; the JSON API is checked with a plain HTTP client. A screenshot of a
//! results page is kept as `target/test-artifacts/search-page.png`.
//!
//! Skipped, with one message saying how to install it, when no Chromium is found.

use crate::common;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use common::browser::{self, Browser};
use common::*;
use serde_json::Value;

const WEB: &[&str] = &["--seed", "11", "--hosts", "5", "--pages", "16"];
const WAIT: Duration = Duration::from_secs(20);

/// A running `search --serve`, stopped with SIGTERM on drop.
struct Server {
    child: Child,
    stdout: BufReader<ChildStdout>,
    /// `http://ip:port`
    base: String,
}

impl Server {
    fn start(crawl: &Path, config: &Path) -> Server {
        let mut child = stage_command(bin("search"), crawl, config, &["--serve", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start search --serve");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let base = line
            .trim()
            .strip_prefix("search: serving ")
            .unwrap_or_else(|| panic!("the first line of search --serve: {line:?}"))
            .trim_end_matches('/')
            .to_string();
        assert!(base.starts_with("http://127.0.0.1:"), "{base}");
        Server {
            child,
            stdout,
            base,
        }
    }

    /// SIGTERM, then the exit status and what it printed after the first line.
    fn stop(mut self) -> (Option<i32>, String) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let status = self.child.wait().unwrap();
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut self.stdout, &mut rest);
        (status.code(), rest)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// GET `url` with a plain HTTP client: (status, body).
fn get(rt: &tokio::runtime::Runtime, url: &str) -> (u16, String) {
    rt.block_on(async {
        trawl::tls::install_provider();
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let r = client.get(url).send().await.unwrap();
        let status = r.status().as_u16();
        (status, r.text().await.unwrap())
    })
}

fn api(rt: &tokio::runtime::Runtime, base: &str, params: &str) -> (u16, Value) {
    let (status, body) = get(rt, &format!("{base}/api/search?{params}"));
    let v = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{params}: {e}: {body}"));
    (status, v)
}

fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The URLs of the results shown, in order.
fn shown_urls(b: &mut Browser) -> Vec<String> {
    let v = b.eval("[...document.querySelectorAll('#results li.result a.title')].map(a => a.href)");
    v.as_array()
        .unwrap()
        .iter()
        .map(|u| u.as_str().unwrap().to_string())
        .collect()
}

fn artifact(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/test-artifacts")
        .join(name)
}

#[test]
fn the_search_page_works_in_a_real_browser() {
    if !browser::available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web = TestWeb::start(dir, WEB);
    let config = write_config(dir, &web.addr, 0.0, "");
    let crawl = dir.join("crawl");
    let map = site_map(dir, WEB);
    inject_seeds(dir, &crawl, &config, &map.seeds);
    let mut rounds = 0;
    while round(&crawl, &config).is_some() {
        rounds += 1;
        assert!(rounds <= 10, "the crawl did not converge");
    }
    drop(web);
    run_ok("index", &crawl, &config, &[]);

    // A page the crawl fetched and the index must hold (not noindex, a title of its
    // own), from the crawldb and the test web's site map.
    let statuses = crawldb_statuses(&crawl);
    let indexed: Vec<(&String, &String)> = map
        .urls
        .iter()
        .filter(|(u, e)| {
            statuses.get(*u).map(String::as_str) == Some("db_fetched")
                && !e.noindex
                && e.duplicate_of.is_none()
        })
        .filter_map(|(u, e)| e.title.as_ref().map(|t| (u, t)))
        .collect();
    assert!(indexed.len() >= 40, "a real crawl: {} pages", indexed.len());
    let unique_title = |t: &String| indexed.iter().filter(|(_, o)| *o == t).count() == 1;
    let (page_url, page_title) = *indexed
        .iter()
        .find(|(_, t)| unique_title(t) && t.split_whitespace().count() >= 2)
        .expect("a page with a title of two words or more that no other page has");

    let server = Server::start(&crawl, &config);
    let base = server.base.clone();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    // --- The JSON API, with a plain HTTP client.
    let (status, v) = api(&rt, &base, &format!("q={}", enc(page_title)));
    assert_eq!(status, 200, "{v}");
    let hits = v["hits"].as_array().unwrap();
    assert!(v["total"].as_u64().unwrap() >= 1, "{v}");
    assert!(
        hits.iter().any(|h| h["url"] == page_url.as_str()),
        "{page_url} ({page_title:?}) among the API's results: {v}"
    );
    for h in hits {
        for key in ["url", "host", "snippet", "snippet_html"] {
            assert!(h[key].is_string(), "hit.{key}: {h}");
        }
        assert!(h["score"].is_number(), "{h}");
    }
    assert!(
        hits.iter()
            .any(|h| h["snippet_html"].as_str().unwrap().contains("<b>")),
        "highlighted snippets: {v}"
    );
    // A word many pages share: more than one page of results.
    let common_word = indexed
        .iter()
        .flat_map(|(_, t)| t.split_whitespace())
        .map(str::to_lowercase)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .find(|w| {
            w.chars().all(char::is_alphanumeric)
                && api(&rt, &base, &format!("q={}", enc(w))).1["total"]
                    .as_u64()
                    .is_some_and(|n| n > 12)
        })
        .expect("a title word on more than 12 pages");
    let (_, p1) = api(&rt, &base, &format!("q={common_word}&top=5"));
    let (_, p2) = api(&rt, &base, &format!("q={common_word}&top=5&page=2"));
    assert_eq!(hit_urls(&p1).len(), 5);
    assert!(
        hit_urls(&p1).iter().all(|u| !hit_urls(&p2).contains(u)),
        "pages overlap"
    );
    assert_eq!(p2["hits"][0]["rank"], 6);
    // The user's mistakes are 400s with a message, never 500s.
    for (params, says) in [
        ("q=", "the query is empty"),
        ("q=%3A%3A", "has no words"),
        ("q=a&page=0", "page"),
        ("q=a&top=1000", "top"),
        ("q=a&page=5000", "10000"),
        ("top=3", "q"),
    ] {
        let (status, v) = api(&rt, &base, params);
        assert_eq!(status, 400, "{params}: {v}");
        let msg = v["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{params}: {v}"));
        assert!(msg.contains(says), "{params}: {msg}");
    }
    let (status, _) = get(&rt, &format!("{base}/nothing-here"));
    assert_eq!(status, 404);
    // Only GET and HEAD; the page allows no script and nothing from elsewhere.
    rt.block_on(async {
        trawl::tls::install_provider();
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let r = client
            .post(format!("{base}/api/search?q=a"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 405);
        assert_eq!(r.headers()["allow"], "GET, HEAD");
        let r = client.get(format!("{base}/")).send().await.unwrap();
        let csp = r.headers()["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("default-src 'none'"), "{csp}");
        assert!(
            r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
    });
    // Another interface than loopback only with --public.
    let out = stage_command(bin("search"), &crawl, &config, &["--serve", "0.0.0.0:0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--public"), "{err}");

    // --- The page, in headless Chromium.
    let mut b = Browser::launch().expect("Chromium was found above");
    b.navigate(&format!("{base}/"));
    let intro = b.eval("document.querySelector('main').innerText");
    assert!(intro.as_str().unwrap().contains("pages crawled"), "{intro}");
    b.type_into("#q", page_title);
    b.click_and_wait("#go");
    b.wait_for(
        "document.querySelectorAll('#results li.result').length > 0",
        WAIT,
    );
    let href = b.eval("location.href");
    assert!(
        href.as_str()
            .unwrap()
            .contains(&format!("q={}", enc(page_title))),
        "the form submitted the query: {href}"
    );
    let shown = shown_urls(&mut b);
    assert!(
        shown.iter().any(|u| u == page_url),
        "{page_url} ({page_title:?}) among the page's results: {shown:?}"
    );
    assert!(shown.len() <= 10);
    // The matches are highlighted (<b> in the snippets), and each is a word of the
    // query; the query is shown back in the box.
    let marked =
        b.eval("[...document.querySelectorAll('#results .snippet b')].map(e => e.textContent)");
    let marked: Vec<String> = marked
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_lowercase())
        .collect();
    assert!(!marked.is_empty(), "no highlighted term in the snippets");
    let words: BTreeSet<String> = page_title
        .split_whitespace()
        .map(str::to_lowercase)
        .collect();
    assert!(
        marked.iter().all(|m| words
            .iter()
            .any(|w| w.contains(m.as_str()) || m.contains(w.as_str()))),
        "highlights {marked:?} are words of {page_title:?}"
    );
    assert_eq!(
        b.eval("document.querySelector('#q').value"),
        Value::from(page_title.as_str())
    );
    assert!(
        b.eval("document.querySelector('#total').textContent")
            .as_str()
            .is_some()
    );
    b.screenshot(&artifact("search-page.png"));

    // Pagination: a frequent word, page 1 then "Next".
    b.type_into("#q", &common_word);
    b.click_and_wait("#go");
    b.wait_for(
        "document.querySelectorAll('#results li.result').length === 10",
        WAIT,
    );
    let page1 = shown_urls(&mut b);
    let total: u64 = b
        .eval("document.querySelector('#total').textContent")
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(total > 10, "{common_word}: {total} results");
    b.click_and_wait("a[rel=next]");
    b.wait_for(
        "document.querySelectorAll('#results li.result').length > 0",
        WAIT,
    );
    assert_eq!(
        b.eval("document.querySelector('#first').textContent"),
        Value::from("11")
    );
    assert!(
        b.eval("location.search")
            .as_str()
            .unwrap()
            .contains("page=2")
    );
    let page2 = shown_urls(&mut b);
    assert!(
        page2.iter().all(|u| !page1.contains(u)),
        "page 2 repeats page 1"
    );
    assert_eq!(
        b.eval("document.querySelector('.pages .current').textContent"),
        Value::from("2")
    );
    b.click_and_wait("a[rel=prev]");
    assert_eq!(shown_urls(&mut b), page1, "Previous leads back to page 1");

    // A malformed query and an empty one: a clear message, no results, no crash.
    b.type_into("#q", "::");
    b.click_and_wait("#go");
    let error = b.wait_for("document.querySelector('#error')?.textContent", WAIT);
    assert!(error.as_str().unwrap().contains("has no words"), "{error}");
    assert_eq!(
        b.eval("document.querySelectorAll('#results').length"),
        Value::from(0)
    );
    b.type_into("#q", "   ");
    b.click_and_wait("#go");
    let error = b.wait_for("document.querySelector('#error')?.textContent", WAIT);
    assert!(
        error.as_str().unwrap().contains("the query is empty"),
        "{error}"
    );
    let (status, html) = get(&rt, &format!("{base}/?q=%3A%3A"));
    assert_eq!(status, 400);
    assert!(html.contains("has no words"));
    drop(b);

    // SIGTERM stops it cleanly.
    let (code, rest) = server.stop();
    assert_eq!(code, Some(0), "search --serve after SIGTERM: {rest}");
    let png = std::fs::read(artifact("search-page.png")).unwrap();
    assert!(png.len() > 1000 && png.starts_with(b"\x89PNG"));
}
