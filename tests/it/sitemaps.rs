//! Sitemaps end to end: the real binaries crawl the test web's sitemap hosts
//! (`testweb --sitemaps`); expectations come from the site map's description of
//! every sitemap file.

use crate::common;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::{TestWeb, crawldb, run, run_ok, site_map, write_config};
use testweb::SiteMap;
use testweb::xmlsitemaps::{SMAP_HOST, SMAP2_HOST};
use trawl::DbStatus;
use trawl::sitemaps::SitemapRecord;
use trawl::sitemaps::parse::{ChangeFreq, parse_w3c_datetime};

const WEB: &[&str] = &["--hosts", "2", "--pages", "6", "--sitemaps"];

fn sitemapdb(crawl: &Path) -> BTreeMap<String, SitemapRecord> {
    trawl::store::parquet::read_dataset::<SitemapRecord>(&crawl.join("sitemapdb/current"))
        .unwrap()
        .into_iter()
        .map(|r| (r.url.clone(), r))
        .collect()
}

/// Runs the sitemap stage; returns its stderr (summary and problems).
fn sitemap(crawl: &Path, config: &Path, args: &[&str]) -> String {
    let out = run("sitemap", crawl, config, args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "sitemap {args:?} failed:\n{err}");
    err
}

/// The number after `key ` in the summary line.
fn count(summary: &str, key: &str) -> u64 {
    let line = summary
        .lines()
        .find(|l| l.starts_with("sitemap: ") || l.starts_with("inject --sitemaps: "))
        .unwrap_or_else(|| panic!("no summary line in {summary}"));
    let at = line
        .find(&format!("{key} "))
        .unwrap_or_else(|| panic!("no {key:?} in {line}"));
    line[at + key.len() + 1..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// The sitemap files a crawl finds from robots.txt: those named there and the
/// accepted children of indexes, recursively.
fn robots_files(map: &SiteMap) -> Vec<String> {
    let mut out: Vec<String> = map
        .sitemaps
        .values()
        .filter(|f| f.in_robots)
        .map(|f| f.url.clone())
        .collect();
    let mut i = 0;
    while i < out.len() {
        let f = &map.sitemaps[&out[i]];
        for c in f.children.iter().filter(|c| c.accepted) {
            out.push(c.loc.clone());
        }
        i += 1;
    }
    out
}

/// (url, priority, lastmod, changefreq) of every accepted entry of `files`, first mention wins.
type Expected = BTreeMap<String, (Option<f64>, Option<String>, Option<String>)>;

fn accepted(map: &SiteMap, files: &[String]) -> Expected {
    let mut out = Expected::new();
    for f in files {
        for e in map.sitemaps[f].entries.iter().filter(|e| e.accepted) {
            out.entry(e.loc.clone()).or_insert((
                e.priority,
                e.lastmod.clone(),
                e.changefreq.clone(),
            ));
        }
    }
    out
}

#[test]
fn sitemaps_reach_orphan_pages_with_priority_and_lastmod() {
    let dir = tempfile::tempdir().unwrap();
    let map = site_map(dir.path(), WEB);
    let web = TestWeb::start(dir.path(), WEB);
    let crawl = dir.path().join("crawl");
    let config = write_config(dir.path(), &web.addr, 0.0, "");
    common::inject_seeds(dir.path(), &crawl, &config, &map.seeds);

    // Orphans exist and nothing links to them.
    let orphans: BTreeSet<String> = map
        .urls
        .iter()
        .filter(|(_, e)| e.kind == testweb::Kind::Orphan)
        .map(|(u, _)| u.clone())
        .collect();
    assert!(orphans.len() >= 10);
    assert!(orphans.iter().all(|u| map.urls[u].in_degree == 0));

    // Before any fetch there is no robots.txt, so no sitemap.
    let s = sitemap(&crawl, &config, &[]);
    assert_eq!(count(&s, "fetched"), 0, "{s}");

    // Round 1 fetches the seeds and with them the robots.txt files.
    common::round(&crawl, &config).expect("round 1");
    let before = crawldb(&crawl);
    assert!(
        orphans.iter().all(|u| !before.contains_key(u)),
        "links never reach orphans"
    );

    let s = sitemap(&crawl, &config, &[]);
    let files = robots_files(&map);
    assert_eq!(files.len(), 8, "{files:?}");
    assert_eq!(count(&s, "fetched"), files.len() as u64, "{s}");
    assert_eq!(count(&s, "failed"), 0, "{s}");
    assert_eq!(count(&s, "malformed"), 5, "{s}"); // sitemap.xml, index, broken, txt, huge
    let want = accepted(&map, &files);
    let new: Vec<&String> = want.keys().filter(|u| !before.contains_key(*u)).collect();
    assert_eq!(count(&s, "added"), new.len() as u64, "{s}");
    assert_eq!(count(&s, "known"), (want.len() - new.len()) as u64, "{s}");
    let rejected: usize = files
        .iter()
        .flat_map(|f| {
            map.sitemaps[f]
                .entries
                .iter()
                .chain(&map.sitemaps[f].children)
        })
        .filter(|e| !e.accepted)
        .count();
    // Entries lost after the XML error and past the size limit are not "rejected" entries.
    let lost = files
        .iter()
        .flat_map(|f| &map.sitemaps[f].entries)
        .filter(|e| {
            e.note
                .as_deref()
                .is_some_and(|n| n.contains("XML") || n.contains("50 MB"))
        })
        .count();
    assert_eq!(count(&s, "rejected"), (rejected - lost) as u64, "{s}");

    // Problems are reported with the sitemap URL, position and reason.
    let broken = format!("http://{SMAP_HOST}/broken.xml");
    let huge = format!("http://{SMAP_HOST}/huge.xml.gz");
    for needle in [
        format!("{broken}: byte "),
        "bad <lastmod> \"last tuesday\"".to_string(),
        "bad <priority> \"very high\"".to_string(),
        "bad <changefreq> \"sometimes\"".to_string(),
        "malformed XML".to_string(),
        format!("{huge}: byte 52428800: file is larger than 52428800 bytes"),
        "outside the sitemap's scope".to_string(),
        "an index may only name sitemaps on its own site".to_string(),
    ] {
        assert!(s.contains(&needle), "stderr lacks {needle:?}:\n{s}");
    }

    // Every accepted URL is in the crawldb; new ones as the documented rule says.
    let db = crawldb(&crawl);
    for (url, (prio, lastmod, cf)) in &want {
        let d = db.get(url).unwrap_or_else(|| panic!("{url} missing"));
        if before.contains_key(url) {
            assert_eq!(
                d.score, before[url].score,
                "{url}: known URL keeps its score"
            );
            assert_eq!(d.status, before[url].status);
            continue;
        }
        assert_eq!(d.status, DbStatus::DbUnfetched, "{url}");
        assert_eq!(d.score, prio.unwrap_or(0.5), "{url}: score = priority");
        assert_eq!(
            d.modified_time,
            lastmod.as_deref().and_then(parse_w3c_datetime),
            "{url}: modified_time = lastmod"
        );
        let interval = cf
            .as_deref()
            .and_then(ChangeFreq::parse)
            .map_or(30 * 86400, |c| c.interval_secs(90 * 86400));
        assert_eq!(
            d.fetch_interval, interval,
            "{url}: interval from changefreq"
        );
        assert!(d.metadata.contains_key("sitemap"), "{url}");
        assert_eq!(d.depth, 0);
    }
    // Nothing rejected or lost got in.
    for f in &files {
        for e in map.sitemaps[f].entries.iter().filter(|e| !e.accepted) {
            let in_db = db.get(&e.loc);
            assert!(
                in_db.is_none_or(|d| !d.metadata.contains_key("sitemap")),
                "{} came from a sitemap",
                e.loc
            );
        }
    }
    assert!(!db.contains_key(&format!("http://{SMAP_HOST}/never1.html")));
    assert!(!db.contains_key(&format!("http://{SMAP_HOST}/never3.html")));
    assert!(!db.contains_key("http://elsewhere.web.test/x.html"));
    // smap2 publishes sitemaps nobody names: not found without probing.
    assert!(!db.contains_key(&format!("http://{SMAP2_HOST}/probed.html")));

    // The sitemapdb remembers every file with its outcome.
    let sdb = sitemapdb(&crawl);
    assert_eq!(sdb.len(), files.len());
    assert_eq!(sdb[&broken].reason, "malformed");
    assert_eq!(sdb[&huge].bytes, 52_428_800);
    assert!(
        sdb[&huge]
            .first_problem
            .as_deref()
            .unwrap()
            .contains("larger than")
    );
    assert!(sdb[&format!("http://{SMAP_HOST}/sitemap-news.xml.gz")].gzipped);
    let deep = &sdb[&format!("http://{SMAP_HOST}/sitemaps/deep.xml")];
    assert_eq!((deep.depth, deep.source.as_str()), (2, "index"));
    let added: i64 = sdb.values().map(|r| r.urls_added).sum();
    assert_eq!(added as usize, new.len());

    // Rerunning adds nothing twice: nothing is due, and forced refetches find known URLs.
    let s = sitemap(&crawl, &config, &[]);
    assert_eq!(count(&s, "fetched"), 0, "{s}");
    assert_eq!(count(&s, "not due"), files.len() as u64, "{s}");
    assert_eq!(count(&s, "added"), 0, "{s}");
    // Forced, with a politeness delay for the host (`fetch.delays`, over a global
    // delay of 0): requests to it are that far apart.
    let polite_dir = dir.path().join("polite");
    std::fs::create_dir_all(&polite_dir).unwrap();
    let polite = write_config(
        &polite_dir,
        &web.addr,
        0.0,
        &format!("[fetch.delays]\n\"{SMAP_HOST}\" = 0.25\n"),
    );
    let t0 = trawl::datum::now_millis();
    let s = sitemap(&crawl, &polite, &["--force"]);
    let t1 = trawl::datum::now_millis();
    assert_eq!(count(&s, "fetched"), files.len() as u64, "{s}");
    assert_eq!(count(&s, "added"), 0, "{s}");
    assert_eq!(count(&s, "known"), want.len() as u64, "{s}");
    assert_eq!(crawldb(&crawl).len(), db.len());

    // The next round fetches the orphans the sitemaps named.
    common::round(&crawl, &config).expect("round 2");
    let db = crawldb(&crawl);
    for url in new {
        assert_eq!(db[url].status, DbStatus::DbFetched, "{url}");
    }

    // Probing /sitemap.xml finds smap2's sitemap.
    let s = sitemap(&crawl, &config, &["--probe"]);
    assert!(count(&s, "fetched") >= 1, "{s}");
    let db = crawldb(&crawl);
    let probed = &db[&format!("http://{SMAP2_HOST}/probed.html")];
    assert_eq!(probed.score, 0.8);
    assert_eq!(probed.status, DbStatus::DbUnfetched);

    // inject --sitemaps: a sitemap named nowhere; its scope is its directory.
    let list = dir.path().join("sitemaps.txt");
    std::fs::write(
        &list,
        format!("# sitemaps to inject\nhttp://{SMAP2_HOST}/blog/sitemap.xml\n"),
    )
    .unwrap();
    let out = run(
        "inject",
        &crawl,
        &config,
        &["--sitemaps", list.to_str().unwrap()],
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    assert_eq!(count(&err, "added"), 1, "{err}");
    assert!(err.contains("outside the sitemap's scope"), "{err}");
    let db = crawldb(&crawl);
    let post = &db[&format!("http://{SMAP2_HOST}/blog/post1.html")];
    assert_eq!(post.score, 0.9);
    assert_eq!(
        post.fetch_interval,
        90 * 86400,
        "yearly is capped at max_interval"
    );
    assert!(!db.contains_key(&format!("http://{SMAP2_HOST}/about.html")));
    // A bad list is refused whole, naming the line.
    std::fs::write(&list, "http://ok.web.test/s.xml\nnot a url\n").unwrap();
    let out = run(
        "inject",
        &crawl,
        &config,
        &["--sitemaps", list.to_str().unwrap()],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("sitemaps.txt:2"), "{err}");

    // sitemaps.max_sitemaps bounds a run, index children included; the rest is deferred.
    let small_dir = dir.path().join("small");
    std::fs::create_dir_all(&small_dir).unwrap();
    let small = write_config(&small_dir, &web.addr, 0.0, "[sitemaps]\nmax_sitemaps = 3\n");
    let s = sitemap(&crawl, &small, &["--force"]);
    assert_eq!(count(&s, "fetched"), 3, "{s}");
    assert!(count(&s, "deferred") >= 1, "{s}");
    let nested = &sitemapdb(&crawl)[&format!("http://{SMAP_HOST}/sitemaps/nested-index.xml")];
    assert_eq!(
        (nested.status.as_str(), nested.reason.as_str()),
        ("deferred", "max_sitemaps")
    );
    let s = sitemap(&crawl, &config, &[]);
    assert!(
        count(&s, "fetched") >= 1,
        "the deferred child is due at once: {s}"
    );
    assert_eq!(count(&s, "added"), 0, "{s}");

    // Politeness: robots.txt of a sitemap host is read before its sitemaps.
    let log = web.stop();
    let first_robots = log
        .iter()
        .position(|l| l.host == SMAP_HOST && l.path == "/robots.txt")
        .unwrap();
    let first_sitemap = log
        .iter()
        .position(|l| l.host == SMAP_HOST && l.path == "/sitemap.xml")
        .unwrap();
    assert!(first_robots < first_sitemap);
    let times: Vec<i64> = log
        .iter()
        .filter(|l| l.host == SMAP_HOST && l.time_ms >= t0 && l.time_ms <= t1)
        .map(|l| l.time_ms)
        .collect();
    assert_eq!(
        times.len(),
        files.len() + 1,
        "robots.txt and every sitemap once"
    );
    for w in times.windows(2) {
        assert!(
            w[1] - w[0] >= 225,
            "requests {} ms apart, delay 250 ms",
            w[1] - w[0]
        );
    }
    let _ = run_ok;
}
