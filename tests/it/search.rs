//! The search index through the binaries (docs/search.md): `index` over a crawl of the
//! test web, checked against the crawldb and the test web's site map (noindex pages,
//! duplicates, gone and redirected pages have no document; changed pages are
//! replaced), `search` (ranking, `site:`, errors), the JSON Lines export, and a
//! killed `index` run leaving the previous index searchable.

use crate::common;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use common::*;
use serde_json::Value;
use testweb::{Kind, SiteMap};

const WEB: &[&str] = &["--seed", "5", "--hosts", "5", "--pages", "14"];

fn web_flags(generation: u32) -> Vec<String> {
    let mut flags: Vec<String> = WEB.iter().map(|s| s.to_string()).collect();
    flags.extend(["--generation".to_string(), generation.to_string()]);
    flags
}

fn start_web(dir: &Path, addr: &str, generation: u32) -> TestWeb {
    let flags = web_flags(generation);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    TestWeb::start_on(dir, addr, &flags)
}

fn map_of(dir: &Path, generation: u32) -> SiteMap {
    let flags = web_flags(generation);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    site_map(dir, &flags)
}

/// generate (with `args`), fetch, parse, updatedb, linkdb, pagerank; false when
/// nothing was due.
fn round_with(crawl: &Path, config: &Path, args: &[&str]) -> bool {
    let out = run("generate", crawl, config, args);
    if out.status.code() == Some(3) {
        return false;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let segment = String::from_utf8_lossy(&out.stdout).trim().to_string();
    for stage in ["fetch", "parse", "updatedb", "linkdb"] {
        run_ok(stage, crawl, config, &[&segment]);
    }
    run_ok("pagerank", crawl, config, &[]);
    true
}

/// The index's documents by URL, read back through `index --to jsonl -` (and the
/// bulk format checked on the way: an action line before every document).
fn exported(crawl: &Path, config: &Path) -> BTreeMap<String, Value> {
    let out = run_ok("index", crawl, config, &["--to", "jsonl", "-"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len() % 2, 0, "action + document pairs");
    let mut docs = BTreeMap::new();
    for pair in lines.chunks(2) {
        let action: Value = serde_json::from_str(pair[0]).unwrap();
        let doc: Value = serde_json::from_str(pair[1]).unwrap();
        let url = doc["url"].as_str().unwrap().to_string();
        assert_eq!(action["index"]["_index"], "trawl");
        assert_eq!(action["index"]["_id"].as_str(), Some(url.as_str()));
        assert!(docs.insert(url, doc).is_none(), "one document per URL");
    }
    docs
}

/// The text an exported document stores: its main text, then the rest.
fn stored_text(doc: &Value) -> String {
    let part = |k: &str| doc[k].as_str().unwrap_or("").to_string();
    format!("{} {}", part("main_text"), part("other_text"))
}

/// The URLs that must have a document: fetched (or not modified) in the crawldb, and
/// not marked noindex by the site map.
fn expected(crawl: &Path, map: &SiteMap) -> BTreeSet<String> {
    crawldb_statuses(crawl)
        .into_iter()
        .filter(|(_, s)| s == "db_fetched" || s == "db_notmodified")
        .filter(|(u, _)| !map.get(u).is_some_and(|e| e.noindex))
        .map(|(u, _)| u)
        .collect()
}

/// Serves `site` as `host` beside a one-host test web, crawls `seeds` in one round
/// (fetch, parse, updatedb), indexes them; returns the web (keep it alive), the
/// config and the crawl directory.
fn index_static(
    dir: &Path,
    host: &str,
    site: &Path,
    seeds: &[String],
) -> (TestWeb, std::path::PathBuf, std::path::PathBuf) {
    let statics = format!("{host}={}", site.display());
    let web = TestWeb::start(dir, &["--hosts", "1", "--pages", "2", "--static", &statics]);
    let config = write_config(dir, &web.addr, 0.0, "");
    let crawl = dir.join("crawl");
    inject_seeds(dir, &crawl, &config, seeds);
    let segment = generate_segment(&crawl, &config);
    for stage in ["fetch", "parse", "updatedb"] {
        run_ok(stage, &crawl, &config, &[&segment]);
    }
    index_ok(&crawl, &config, &[]);
    (web, config, crawl)
}

/// Runs `index` with `args`; returns its summary line (stderr).
fn index_ok(crawl: &Path, config: &Path, args: &[&str]) -> String {
    let out = run("index", crawl, config, args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "index {args:?}: {err}");
    err
}

/// `S` of the `index: S segments, ...` summary line.
fn segments_indexed(out: &str) -> u64 {
    let line = out.lines().find(|l| l.starts_with("index: ")).unwrap();
    line["index: ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

fn search(crawl: &Path, config: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend(args);
    serde_json::from_str(&run_ok("search", crawl, config, &all)).unwrap()
}

#[test]
fn the_index_follows_the_crawl_and_search_ranks_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web = start_web(dir, "127.0.0.1:0", 0);
    let addr = web.addr.clone();
    let config = write_config(dir, &addr, 0.0, "[updatedb]\ndefault_interval = 3600\n");
    let crawl = dir.join("crawl");
    let map0 = map_of(dir, 0);
    inject_seeds(dir, &crawl, &config, &map0.seeds);
    let mut rounds = 0;
    while round_with(&crawl, &config, &[]) {
        rounds += 1;
        assert!(rounds <= 10, "the crawl did not converge");
    }
    run_ok("dedup", &crawl, &config, &[]);
    let summary = index_ok(&crawl, &config, &[]);
    assert_eq!(segments_indexed(&summary), rounds as u64);

    // Generation 0: exactly the fetched, indexable pages.
    let docs = exported(&crawl, &config);
    let want = expected(&crawl, &map0);
    let have: BTreeSet<String> = docs.keys().cloned().collect();
    assert_eq!(have, want, "indexed pages = fetched pages minus noindex");
    assert!(docs.len() >= 40, "a real crawl: {} documents", docs.len());
    let statuses = crawldb_statuses(&crawl);
    let noindex: Vec<&String> = map0
        .urls
        .iter()
        .filter(|(u, e)| e.noindex && statuses.get(*u).map(String::as_str) == Some("db_fetched"))
        .map(|(u, _)| u)
        .collect();
    assert!(!noindex.is_empty(), "the web has fetched noindex pages");
    let duplicates = statuses.values().filter(|s| *s == "db_duplicate").count();
    assert!(duplicates > 0, "dedup marked the copies");
    for (url, doc) in &docs {
        let e = map0.get(url).unwrap();
        assert_eq!(doc["title"].as_str(), e.title.as_deref(), "{url}: title");
        assert!(doc["pagerank"].as_f64().unwrap() > 0.0, "{url}: pagerank");
        assert!(!stored_text(doc).trim().is_empty(), "{url}: text");
        assert_eq!(
            doc["host"].as_str(),
            Some(trawl::urls::host_of(url).as_str())
        );
    }
    let with_anchors = docs
        .values()
        .filter(|d| !d["anchors"].as_array().unwrap().is_empty())
        .count();
    assert!(with_anchors > 0, "anchors of cross-host links are indexed");

    // A page's title as the query finds the page, nearly always first.
    let mut first = 0;
    let mut in_top = 0;
    for (url, doc) in &docs {
        let title = doc["title"].as_str().unwrap();
        let urls = hit_urls(&search(&crawl, &config, &[title]));
        first += usize::from(urls.first() == Some(url));
        in_top += usize::from(urls.contains(url));
    }
    assert!(
        in_top * 10 >= docs.len() * 9,
        "{in_top} of {} in the top 10",
        docs.len()
    );
    assert!(first * 2 >= docs.len(), "{first} of {} first", docs.len());

    // site: keeps one host; pagination continues where the first page stopped.
    let doc = docs.values().next().unwrap();
    let host = doc["host"].as_str().unwrap();
    let word = doc["title"]
        .as_str()
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    let q = format!("site:{host} {word}");
    let v = search(&crawl, &config, &[&q, "--top", "3"]);
    assert!(!hit_urls(&v).is_empty(), "{q}: results");
    // Facets: the matching pages counted by site, language and media type; they
    // add up to the matches of a one-site query, and narrowing to a site keeps it.
    let f = search(&crawl, &config, &[word, "--facets", "--top", "1"]);
    let total = f["total"].as_u64().unwrap();
    let sites = f["facets"]["site"].as_array().expect("facets.site");
    assert!(!sites.is_empty(), "{f}");
    let counted: u64 = sites.iter().map(|s| s[1].as_u64().unwrap()).sum();
    assert!(counted <= total && counted > 0, "{f}");
    let html = f["facets"]["content_type"].as_array().unwrap();
    assert!(
        html.iter().any(|t| t[0] == "text/html")
            && html.iter().all(|t| !t[0].as_str().unwrap().contains(';')),
        "media types alone: {f}"
    );
    let one = sites[0][0].as_str().unwrap();
    let narrowed = search(
        &crawl,
        &config,
        &[&format!("{word} site:{one}"), "--facets"],
    );
    assert_eq!(narrowed["total"], sites[0][1], "site:{one} keeps its count");
    assert_eq!(narrowed["facets"]["site"].as_array().unwrap().len(), 1);
    assert!(
        search(&crawl, &config, &[word])["facets"].is_null(),
        "no facets unless asked"
    );
    assert!(
        hit_urls(&v).iter().all(|u| trawl::urls::host_of(u) == host),
        "{q}"
    );
    let p1 = hit_urls(&search(&crawl, &config, &[host, "--top", "4"]));
    let p2 = hit_urls(&search(
        &crawl,
        &config,
        &[host, "--top", "4", "--offset", "4"],
    ));
    assert!(p1.iter().all(|u| !p2.contains(u)), "pages do not overlap");
    // Snippets highlight the query's words.
    let v = search(&crawl, &config, &[word]);
    assert!(
        v["hits"][0]["snippet"]["highlights"]
            .as_array()
            .is_some_and(|h| !h.is_empty()),
        "{v}"
    );

    // Errors: empty and malformed queries, a missing index.
    let out = run("search", &crawl, &config, &["  "]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the query is empty"));
    // What the grammar would misread is searched as words (issue 39): an unclosed
    // group is the word.
    assert_eq!(
        hit_urls(&search(&crawl, &config, &[&format!("title:({word}")])),
        hit_urls(&search(&crawl, &config, &[&format!("title:{word}")])),
    );
    // `title:*` (no word after a field) is the word `title`.
    assert_eq!(
        search(&crawl, &config, &["title:*"])["total"],
        search(&crawl, &config, &["title"])["total"]
    );
    for nothing in ["::", "\"(\""] {
        let out = run("search", &crawl, &config, &[nothing]);
        assert_eq!(out.status.code(), Some(1), "{nothing}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("the query has no words") && !err.contains("panicked"),
            "{nothing}: {err}"
        );
    }
    let out = run(
        "search",
        &crawl,
        &config,
        &["x", "--offset", "1000000000000"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not served"));
    // A filter is never dropped to find something: no page of an unknown host.
    let v = search(&crawl, &config, &[&format!("site:nowhere.web.test {word}")]);
    assert_eq!(v["total"], 0, "{v}");
    // site: hosts are matched case-insensitively.
    let upper = format!("site:{} {word}", host.to_uppercase());
    assert!(
        !hit_urls(&search(&crawl, &config, &[&upper])).is_empty(),
        "{upper}"
    );
    // A user error is its message, even where RUST_BACKTRACE is set: no backtrace.
    let out = stage_command(bin("search"), &dir.join("nowhere"), &config, &["x"])
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no search index here"), "{err}");
    assert!(!err.contains("backtrace"), "no backtrace: {err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");

    // Generation 1: pages changed, vanished, redirected; re-crawled and re-indexed
    // incrementally.
    drop(web);
    let web = start_web(dir, &addr, 1);
    let map1 = map_of(dir, 1);
    assert!(round_with(&crawl, &config, &["--add-days", "400"]));
    run_ok("dedup", &crawl, &config, &[]);
    let out = index_ok(&crawl, &config, &[]);
    assert_eq!(segments_indexed(&out), 1, "only the new segment");
    let docs1 = exported(&crawl, &config);
    let have1: BTreeSet<String> = docs1.keys().cloned().collect();
    let want1 = expected(&crawl, &map1);
    let statuses1 = crawldb_statuses(&crawl);
    let diff: Vec<String> = have1
        .symmetric_difference(&want1)
        .map(|u| format!("{u}: {:?} -> {:?}", statuses.get(u), statuses1.get(u)))
        .collect();
    assert!(
        diff.is_empty(),
        "generation 1: indexed != expected: {diff:#?}"
    );
    let gone: Vec<&String> = map1
        .urls
        .iter()
        .filter(|(u, e)| docs.contains_key(*u) && matches!(e.status, 404 | 410 | 301))
        .map(|(u, _)| u)
        .collect();
    assert!(!gone.is_empty(), "some indexed pages vanished or moved");
    for u in &gone {
        assert!(
            !docs1.contains_key(*u),
            "{u} vanished: its document is deleted"
        );
    }
    let changed: Vec<&String> = map1
        .urls
        .iter()
        .filter(|(u, e)| e.kind == Kind::Page && e.revision > 0 && docs1.contains_key(*u))
        .filter(|(u, _)| {
            docs.get(*u)
                .is_some_and(|d| d["segment"] != docs1[*u]["segment"])
        })
        .map(|(u, _)| u)
        .collect();
    assert!(
        !changed.is_empty(),
        "changed pages were refetched and re-indexed"
    );
    for u in changed {
        let text = stored_text(&docs1[u]);
        assert!(
            text.contains("Revision 1"),
            "{u}: the new content is indexed"
        );
    }

    // A killed run leaves the previous commit searchable; a rerun works.
    let before = docs1.len();
    for delay_ms in [30u64, 120, 400] {
        let mut child = stage_command(bin("index"), &crawl, &config, &["--full"])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(
            exported(&crawl, &config).len(),
            before,
            "after a kill at {delay_ms} ms"
        );
    }
    run_ok("index", &crawl, &config, &["--full"]);
    let rebuilt = exported(&crawl, &config);
    assert_eq!(
        rebuilt.keys().collect::<Vec<_>>(),
        docs1.keys().collect::<Vec<_>>()
    );
    drop(web);

    // The export to a file: written whole, in place.
    let file = dir.join("bulk.jsonl");
    run_ok(
        "index",
        &crawl,
        &config,
        &["--to", "jsonl", file.to_str().unwrap()],
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.lines().count(), 2 * before);
}

/// A word of `text` (as the index's analyzer cuts it) of at least two CJK characters
/// that no other page's text has: the query that must find this page.
fn distinctive_cjk_term(text: &str, others: &[&str]) -> Option<String> {
    let cjk =
        |c: char| ('\u{3040}'..='\u{30ff}').contains(&c) || ('\u{4e00}'..='\u{9fff}').contains(&c);
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for t in trawl::index::analyzer::terms(text) {
        if t.chars().count() >= 2 && t.chars().all(cjk) {
            *counts.entry(t).or_default() += 1;
        }
    }
    // The most frequent such word of this page that no other page contains.
    let mut best: Option<(usize, String)> = None;
    for (t, n) in counts {
        if others.iter().any(|o| o.contains(t.as_str())) {
            continue;
        }
        if best.as_ref().is_none_or(|(m, _)| n > *m) {
            best = Some((n, t));
        }
    }
    best.map(|(_, t)| t)
}

#[test]
fn chinese_and_japanese_pages_are_searchable() {
    let Some(corpora) = corpora() else {
        common::missing(
            "the shared corpora",
            "../shared/corpora is absent (real saved pages; set TRAWL_CORPORA)",
        );
        return;
    };
    let pages = corpora.join("pages");
    // Chinese (qq, gmw), Japanese (hukumusume, yahoo-4), English (bbc-1, ars-1).
    let names = ["qq", "gmw", "hukumusume", "yahoo-4", "bbc-1", "ars-1"];
    if names
        .iter()
        .any(|n| !pages.join(n).join("source.html").is_file())
    {
        common::missing(
            "the shared corpora",
            &format!("the corpus lacks one of {names:?}"),
        );
        return;
    }
    common::ran_with("corpora");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let seeds: Vec<String> = names
        .iter()
        .map(|n| format!("http://pages.web.test/{n}/source.html"))
        .collect();
    let (_web, config, crawl) = index_static(dir, "pages.web.test", &pages, &seeds);
    let docs = exported(&crawl, &config);
    assert_eq!(docs.len(), names.len(), "{:?}", docs.keys());
    let text_of = |u: &str| stored_text(&docs[u]);
    for (n, url) in names.iter().zip(&seeds).take(4) {
        let others: Vec<String> = seeds
            .iter()
            .filter(|s| *s != url)
            .map(|s| text_of(s))
            .collect();
        let others: Vec<&str> = others.iter().map(String::as_str).collect();
        let term = distinctive_cjk_term(&text_of(url), &others)
            .unwrap_or_else(|| panic!("{n}: no CJK word of its own"));
        let v = search(&crawl, &config, &[&term]);
        assert_eq!(
            hit_urls(&v).first(),
            Some(url),
            "{n}: the query {term:?} finds the page: {v}"
        );
        let snippet = &v["hits"][0]["snippet"];
        assert!(
            snippet["highlights"]
                .as_array()
                .is_some_and(|h| !h.is_empty()),
            "{n}: {term:?} is highlighted: {snippet}"
        );
    }
    // English words still work beside them.
    let v = search(&crawl, &config, &["site:pages.web.test BBC"]);
    assert!(hit_urls(&v).contains(&seeds[4]), "{v}");
}

/// A page for the BM25F test: an article of `paragraphs`, a navigation bar and a
/// footer of `footer` (a link and a line of text).
fn article_page(title: &str, heading: &str, paragraphs: &[&str], footer: &str) -> String {
    let body: String = paragraphs.iter().map(|p| format!("<p>{p}</p>\n")).collect();
    format!(
        "<!doctype html><html lang=en><head><title>{title}</title></head><body>\n\
         <nav><a href=\"/\">Home</a> <a href=\"/a.html\">Alpha</a> <a href=\"/b.html\">Beta</a></nav>\n\
         <article><h1>{title}</h1>\n<h2><a class=\"header\" href=\"#part\">{heading}</a></h2>\n{body}</article>\n\
         <footer><a href=\"/archive.html\">{footer} archive</a></footer>\n</body></html>\n"
    )
}

#[test]
fn the_main_text_outranks_boilerplate_which_stays_searchable() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let site = dir.join("site");
    std::fs::create_dir_all(&site).unwrap();
    let filler = "The harbour keeps its boats in rows, with ropes, nets and lanterns, \
                  and the keepers count them every morning before the tide turns again";
    let pages = [
        (
            "a.html",
            article_page(
                "Alpha notes",
                "Zephyr winds over the bay",
                &[
                    &format!("{filler}, while a zephyr crosses the bay from the west."),
                    &format!("{filler}; nobody writes it down."),
                ],
                "Gallery",
            ),
        ),
        (
            "b.html",
            article_page(
                "Beta notes",
                "Tides and moorings",
                &[
                    &format!("{filler}, and the moorings hold through the night."),
                    &format!("{filler}; the ledger stays closed."),
                ],
                "Zephyr",
            ),
        ),
        (
            "c.html",
            article_page(
                "Gamma notes",
                "Lanterns",
                &[&format!("{filler}, lanterns lit."), &format!("{filler}.")],
                "Gallery",
            ),
        ),
    ];
    for (name, html) in &pages {
        std::fs::write(site.join(name), html).unwrap();
    }
    let urls: Vec<String> = pages
        .iter()
        .map(|(n, _)| format!("http://notes.web.test/{n}"))
        .collect();
    let (_web, config, crawl) = index_static(dir, "notes.web.test", &site, &urls);
    let docs = exported(&crawl, &config);
    let (a, b) = (&urls[0], &urls[1]);
    let field = |u: &str, f: &str| docs[u][f].as_str().unwrap_or("").to_lowercase();
    // The heading links to itself (a permalink) and is still main text; the footer
    // is not, but the other text has it.
    assert!(
        field(a, "main_text").contains("zephyr winds over the bay"),
        "{}",
        docs[a]
    );
    assert!(!field(b, "main_text").contains("zephyr"), "{}", docs[b]);
    assert!(
        field(b, "other_text").contains("zephyr archive"),
        "{}",
        docs[b]
    );
    for ranking in ["full", "bm25"] {
        let v = search(&crawl, &config, &["zephyr", "--ranking", ranking]);
        // The page about it first, the page that only mentions it in its footer
        // found too (each word is indexed once: in main_text or in other_text).
        assert_eq!(hit_urls(&v), [a.clone(), b.clone()], "{ranking}: {v}");
        assert!(
            v["hits"][1]["snippet"]["text"]
                .as_str()
                .is_some_and(|s| s.to_lowercase().contains("zephyr")),
            "{ranking}: the footer's words are the snippet: {v}"
        );
    }
    // A phrase in the main text; a phrase only in the footer; a word of the nav.
    assert_eq!(
        hit_urls(&search(&crawl, &config, &["\"zephyr crosses\""])),
        std::slice::from_ref(a)
    );
    assert_eq!(
        hit_urls(&search(&crawl, &config, &["\"zephyr archive\""])),
        std::slice::from_ref(b)
    );
    assert_eq!(
        hit_urls(&search(&crawl, &config, &["beta", "--top", "5"])).len(),
        3
    );
    // `text` is stored, not a field a query names: `text:zephyr` is two words.
    let v = search(&crawl, &config, &["text:zephyr"]);
    assert_eq!(v["relaxed"], true, "no page has the word `text`: {v}");
    assert_eq!(hit_urls(&v)[0], *a, "{v}");
}

/// What people paste into a search box (issue 39): an error message with colons and
/// quotes, a dotted name, a path, code, an option; and a query that starts with a
/// dash needs no `--`.
#[test]
fn pasted_messages_paths_and_code_are_searched_as_words() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let site = dir.join("site");
    std::fs::create_dir_all(&site).unwrap();
    let pages = [
        (
            "hash.html",
            article_page(
                "Keys of a dict",
                "Why lists cannot be keys",
                &[
                    "Python raises TypeError: unhashable type: 'list' when a list is used as a dict key.",
                    "Use a tuple instead; os.path.join builds the path /etc/hosts from its parts.",
                ],
                "Archive",
            ),
        ),
        (
            "deps.html",
            article_page(
                "Building without dependencies",
                "The no-deps option",
                &[
                    "Run cargo doc --no-deps to document only this crate, and call f(x) once.",
                    "The harbour keeps its boats in rows.",
                ],
                "Archive",
            ),
        ),
        (
            "boats.html",
            article_page(
                "Boats",
                "Harbour rows",
                &["The harbour keeps its boats in rows, and a zebra watches them."],
                "Archive",
            ),
        ),
    ];
    for (name, html) in &pages {
        std::fs::write(site.join(name), html).unwrap();
    }
    let urls: Vec<String> = pages
        .iter()
        .map(|(n, _)| format!("http://paste.web.test/{n}"))
        .collect();
    let (_web, config, crawl) = index_static(dir, "paste.web.test", &site, &urls);
    let (hash, deps, boats) = (&urls[0], &urls[1], &urls[2]);
    for (typed, want) in [
        ("TypeError: unhashable type: 'list'", hash),
        ("unhashable type: 'list", hash),
        ("os.path.join", hash),
        ("/etc/hosts", hash),
        ("--no-deps", deps),
        ("f(x)", deps),
        ("title:\"without dependencies\"", deps),
    ] {
        let out = run("search", &crawl, &config, &["--json", typed]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{typed}: {err}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(hit_urls(&v).first(), Some(want), "{typed}: {v}");
    }
    // A leading dash is an exclusion, not a flag; the grammar's operators stay.
    let v = search(&crawl, &config, &["-zebra harbour"]);
    assert_eq!(hit_urls(&v), std::slice::from_ref(deps), "{v}");
    let v = search(&crawl, &config, &["harbour AND zebra"]);
    assert_eq!(hit_urls(&v), std::slice::from_ref(boats), "{v}");
    // A filter of a known field: type: with a short name.
    let v = search(&crawl, &config, &["type:html harbour"]);
    assert_eq!(hit_urls(&v).len(), 2, "{v}");
    let v = search(&crawl, &config, &["type:pdf harbour"]);
    assert_eq!(v["total"], 0, "{v}");

    // index.exclude: a page crawled but left out of the index, back when the pattern
    // goes (a changed list indexes every segment again); a pattern that is not a
    // regular expression is refused, naming it.
    let base = std::fs::read_to_string(&config).unwrap();
    let excluding = dir.join("exclude.toml");
    std::fs::write(
        &excluding,
        format!("{base}\n[index]\nexclude = [\"/boats\\\\.html$\"]\n"),
    )
    .unwrap();
    let out = index_ok(&crawl, &excluding, &[]);
    assert!(out.contains(" 1 excluded (index.exclude)"), "{out}");
    assert_eq!(
        hit_urls(&search(&crawl, &excluding, &["harbour"])),
        std::slice::from_ref(deps)
    );
    assert_eq!(search(&crawl, &excluding, &["zebra"])["total"], 0);
    let out = index_ok(&crawl, &excluding, &[]);
    assert!(out.contains("index: 0 segments"), "unchanged: {out}");
    let out = index_ok(&crawl, &config, &[]);
    assert!(!out.contains("excluded"), "{out}");
    assert_eq!(
        hit_urls(&search(&crawl, &config, &["zebra"])),
        std::slice::from_ref(boats)
    );
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        format!("{base}\n[index]\nexclude = [\"(unclosed\"]\n"),
    )
    .unwrap();
    let out = run("index", &crawl, &bad, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("index.exclude[0]") && err.contains("bad.toml"),
        "{err}"
    );
}

/// Template links (issue 39): a link on most pages of a site (its nav) gives its target
/// no anchor text; a link written in one page's text does.
#[test]
fn template_links_give_no_anchors_and_text_links_do() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let site = dir.join("site");
    std::fs::create_dir_all(&site).unwrap();
    let page = |title: &str, nav: bool, body: &str| {
        let nav = if nav {
            "<nav><a href=\"/colophon.html\">Colophon</a> <a href=\"/p0.html\">Start</a></nav>"
        } else {
            ""
        };
        format!(
            "<!doctype html><html lang=en><head><title>{title}</title></head><body>\n{nav}\n\
             <article><h1>{title}</h1><p>{body}</p></article></body></html>\n"
        )
    };
    let mut urls = Vec::new();
    for i in 0..7 {
        // Six pages with the site's nav; the seventh, without it, links the colophon
        // from its text.
        let html = if i == 6 {
            page(
                "Notes 6",
                false,
                "The <a href=\"/colophon.html\">printing details</a> are kept apart.",
            )
        } else {
            page(
                &format!("Notes {i}"),
                true,
                &format!("Page {i} of the harbour notes, with its boats and its ropes."),
            )
        };
        std::fs::write(site.join(format!("p{i}.html")), html).unwrap();
        urls.push(format!("http://tpl.web.test/p{i}.html"));
    }
    std::fs::write(
        site.join("colophon.html"),
        page(
            "About this book",
            true,
            "Set in a plain face and printed on plain paper.",
        ),
    )
    .unwrap();
    urls.push("http://tpl.web.test/colophon.html".to_string());
    let (_web, config, crawl) = index_static(dir, "tpl.web.test", &site, &urls);
    let internal = dir.join("internal.toml");
    let base = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &internal,
        format!("{base}\n[linkdb]\nignore_internal = false\n"),
    )
    .unwrap();
    run_ok("linkdb", &crawl, &internal, &[]);
    index_ok(&crawl, &internal, &["--full"]);
    let docs = exported(&crawl, &internal);
    let anchors = |u: &str| docs[u]["anchors"].to_string().to_lowercase();
    let colophon = "http://tpl.web.test/colophon.html";
    assert!(
        anchors(colophon).contains("printing details"),
        "{}",
        docs[colophon]
    );
    assert!(
        !anchors(colophon).contains("\"colophon\""),
        "{}",
        docs[colophon]
    );
    assert_eq!(
        hit_urls(&search(
            &crawl,
            &internal,
            &["anchors:\"printing details\""]
        )),
        [colophon.to_string()]
    );
    assert_eq!(search(&crawl, &internal, &["anchors:colophon"])["total"], 0);

    // PageRank leaves them out of its graph too (pagerank.ignore_template, on by
    // default): the colophon and the start page, in every page's nav, do not collect
    // every page's vote; the same graph as partition tasks.
    let tasks = dir.join("tasks");
    common::copy_tree(&crawl, &tasks);
    run_ok("pagerank", &crawl, &internal, &[]);
    let pr = pagerank_rows(&crawl);
    let start = "http://tpl.web.test/p0.html";
    let job = "tpl";
    pagerank_as_tasks(&tasks, &internal, job, &|flags| {
        let mut args = flags.to_vec();
        args.extend(["--job", job, "--partitions", "all", "--attempt", "a-1"]);
        run_ok("pagerank", &tasks, &internal, &args);
    });
    assert_same_pagerank(
        &pr,
        &pagerank_rows(&tasks),
        "template links left out, as tasks",
    );
    run_ok("pagerank", &crawl, &internal, &["--keep-template-links"]);
    let kept = pagerank_rows(&crawl);
    let p1 = "http://tpl.web.test/p1.html";
    // Kept, the nav's targets have every page's vote: the start page, linked by the
    // nav alone, ranks far above any other page of the notes.
    assert_eq!((kept[colophon].1, kept[start].1), (8, 7), "{kept:?}");
    assert!(kept[start].0 > 10.0 * kept[p1].0, "{kept:?}");
    // Left out, the start page ranks as any page no other page links, and the
    // colophon has the one link p6's text gives it.
    assert_eq!((pr[colophon].1, pr[start].1), (1, 0), "{pr:?}");
    assert!((pr[start].0 - pr[p1].0).abs() < 1e-12, "{pr:?}");
    assert!(pr[colophon].0 > pr[p1].0, "{pr:?}");
}
