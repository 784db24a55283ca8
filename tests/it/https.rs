//! HTTPS end to end, through the real binaries: `testweb serve --tls` serves every host
//! over TLS and plain HTTP on one address (certificates issued per SNI name by a
//! throw-away CA written with `--ca-out`), and the fetcher trusts that CA through
//! `fetch.ca_file`. Checked: outcomes in `crawl_fetch`, `content` and `robots`;
//! requests (and their TLS flag and connection number) in the server's log.
//! No DNS query leaves the machine: test hosts are mapped with `fetch.resolve`.

use crate::common;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use testweb::{SiteMap, UNTRUSTED_HOST};
use trawl::CrawlDatum;
use trawl::net::client::pool_idle_secs;
use trawl::net::robots::RobotsRecord;
use trawl::records::FetchRecord;

const WEB: [&str; 6] = ["--seed", "3", "--hosts", "3", "--pages", "6"];
const DELAY: f64 = 0.1;

/// Starts `testweb serve --tls` on `WEB` in `dir`; returns it and its CA file.
fn start_tls_web(dir: &Path) -> (TestWeb, PathBuf) {
    let ca = dir.join("ca.pem");
    let mut flags: Vec<&str> = WEB.to_vec();
    flags.extend(["--tls", "--ca-out", ca.to_str().unwrap()]);
    let web = TestWeb::start(dir, &flags);
    // The CA is written before the address file, which start() waited for.
    assert!(ca.is_file(), "--ca-out written before --addr-file");
    (web, ca)
}

/// Writes a config (in its own directory `name`) for the web at `addr`, with `fetch`
/// keys (raw TOML lines).
fn config(dir: &Path, name: &str, addr: &str, fetch: &str) -> PathBuf {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    let path = d.join("trawl.toml");
    let text = format!(
        "[crawl]\npartitions = 2\n\n[fetch]\nmax_connections = 16\ndelay = {DELAY}\n{fetch}\n\n\
         [fetch.resolve]\n\"*.web.test\" = \"{addr}\"\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn toml_path(p: &Path) -> String {
    p.to_str().unwrap().replace('\\', "\\\\")
}

fn fetch_list(segment: &str) -> BTreeSet<String> {
    let rows: Vec<CrawlDatum> =
        trawl::store::parquet::read_dataset(&Path::new(segment).join("crawl_generate")).unwrap();
    rows.into_iter().map(|d| d.url).collect()
}

fn robots_rows(segment: &str) -> BTreeMap<String, RobotsRecord> {
    let rows: Vec<RobotsRecord> =
        trawl::store::parquet::read_dataset(&Path::new(segment).join("robots")).unwrap();
    rows.into_iter().map(|r| (r.origin.clone(), r)).collect()
}

fn status_reason(r: &FetchRecord) -> (&str, &str) {
    (r.status.as_str(), r.reason.as_str())
}

/// The log lines written since line `since` (waits for the server's 50 ms flush).
fn log_since(web: &TestWeb, since: usize) -> Vec<LogLine> {
    std::thread::sleep(Duration::from_millis(300));
    read_log(&web.log).split_off(since.min(read_log(&web.log).len()))
}

/// `https://h/p` -> (`http://h/p`, true); `http://...` -> (itself, false).
fn plain(url: &str) -> (String, bool) {
    match url.strip_prefix("https://") {
        Some(rest) => (format!("http://{rest}"), true),
        None => (url.to_string(), false),
    }
}

fn host_path(url: &str) -> (String, String) {
    let u = url::Url::parse(url).unwrap();
    (u.host_str().unwrap().to_string(), u.path().to_string())
}

/// Checks one fetched segment against the site map and the server's log lines of its
/// fetch run; returns the number of https URLs fetched with a 2xx.
fn check_round(segment: &str, map: &SiteMap, lines: &[LogLine]) -> usize {
    let list = fetch_list(segment);
    let rows = fetch_rows(segment);
    let content = content_rows(segment);
    // Exactly one row per fetch-list URL (no redirects are followed inline).
    assert_eq!(
        rows.keys().cloned().collect::<BTreeSet<_>>(),
        list,
        "crawl_fetch rows = fetch list"
    );
    let mut https_ok = 0;
    for (url, r) in &rows {
        let (http_url, tls) = plain(url);
        let e = map.get(&http_url);
        let (host, path) = host_path(url);
        let requested = lines
            .iter()
            .filter(|l| l.host == host && l.path == path && l.tls == tls)
            .count();
        if e.is_some_and(|e| e.disallowed) {
            assert_eq!(status_reason(r), ("fetch_gone", "robots_denied"), "{url}");
            assert_eq!(requested, 0, "{url} denied but requested");
            continue;
        }
        assert_eq!(requested, 1, "{url}: requested once, tls = {tls}");
        let status = e.map_or(404, |e| e.status);
        let want = match status {
            200 => "fetch_success",
            301 => "fetch_redir_perm",
            302 => "fetch_redir_temp",
            _ => "fetch_gone",
        };
        assert_eq!(r.status.as_str(), want, "{url}: {r:?}");
        assert_eq!(r.http_status, Some(i32::from(status)), "{url}");
        if status == 200 {
            let e = e.unwrap();
            let c = content
                .get(url)
                .unwrap_or_else(|| panic!("{url}: no content"));
            assert_eq!(
                blake3::hash(&c.content).to_hex().to_string(),
                e.body_blake3,
                "{url}: the body served"
            );
            if tls {
                https_ok += 1;
            }
        }
    }
    https_ok
}

/// The main path: https and http seeds, two rounds with the CA trusted through
/// `fetch.ca_file`: every URL fetched as the site map says, https requests arrive over
/// TLS (robots.txt of each https origin too), http ones in the clear, and each host's
/// TLS requests of a run share one keep-alive connection.
#[test]
fn https_crawl_with_the_test_ca() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (web, ca) = start_tls_web(dir);
    let map = site_map(dir, &WEB);
    let crawl = dir.join("crawl");
    let cfg = config(
        dir,
        "main",
        &web.addr,
        &format!("ca_file = \"{}\"", toml_path(&ca)),
    );
    let seeds: Vec<String> = vec![
        "https://site0.web.test/".into(),
        "https://site1.web.test/".into(),
        "http://site2.web.test/".into(),
    ];
    inject_seeds(dir, &crawl, &cfg, &seeds);
    let mut https_ok = 0;
    let mut https_requests_per_host_max = 0;
    for round in 0..2 {
        let since = read_log(&web.log).len();
        let segment = generate_segment(&crawl, &cfg);
        let summary = fetch_ok(&crawl, &cfg, &segment);
        let lines = log_since(&web, since);
        eprintln!("round {round}: {}", summary.trim());
        https_ok += check_round(&segment, &map, &lines);

        // robots.txt: one request per origin (scheme, host), over TLS for https.
        let robots = robots_rows(&segment);
        let origins: BTreeSet<String> = fetch_list(&segment)
            .iter()
            .map(|u| {
                let u = url::Url::parse(u).unwrap();
                format!("{}://{}", u.scheme(), u.host_str().unwrap())
            })
            .collect();
        assert_eq!(
            robots.keys().cloned().collect::<BTreeSet<_>>(),
            origins,
            "round {round}: {summary}"
        );
        for (origin, r) in &robots {
            let (host, _) = host_path(origin);
            let tls = origin.starts_with("https://");
            let want = map.hosts[&host].robots_status;
            assert_eq!(r.http_status, Some(i32::from(want)), "{origin}: {r:?}");
            let n = lines
                .iter()
                .filter(|l| l.host == host && l.path == "/robots.txt" && l.tls == tls)
                .count();
            assert_eq!(n, 1, "{origin}: robots.txt requested once over tls = {tls}");
        }

        // Keep-alive: one TLS connection per host for the whole run. The pool keeps an
        // idle connection pool_idle_secs(delay) (2 s here) and a host's requests come
        // about `DELAY` apart, so a host needs a second connection only if a gap between
        // two of its TLS requests came near that timeout (a badly stalled machine):
        // such gaps are the only extra connections allowed.
        let idle_ms = (pool_idle_secs(DELAY) * 1000.0) as i64;
        let mut per_host: BTreeMap<&str, Vec<&LogLine>> = BTreeMap::new();
        for l in lines.iter().filter(|l| l.tls) {
            per_host.entry(l.host.as_str()).or_default().push(l);
        }
        for (host, ls) in &per_host {
            let expired = ls
                .windows(2)
                .filter(|w| w[1].time_ms - w[0].time_ms >= idle_ms - 250)
                .count();
            let conns: BTreeSet<u64> = ls.iter().map(|l| l.conn).collect();
            assert!(
                conns.len() <= 1 + expired,
                "round {round}, {host}: {} TLS requests on connections {conns:?} \
                 ({expired} idle gaps near {idle_ms} ms)",
                ls.len()
            );
            assert!(!conns.contains(&0), "connection numbers are logged");
            if conns.len() == 1 {
                https_requests_per_host_max = https_requests_per_host_max.max(ls.len());
            }
        }
        // Plain requests never share a connection with TLS ones.
        let tls_conns: BTreeSet<u64> = lines.iter().filter(|l| l.tls).map(|l| l.conn).collect();
        assert!(
            lines
                .iter()
                .filter(|l| !l.tls)
                .all(|l| !tls_conns.contains(&l.conn))
        );

        run_ok("parse", &crawl, &cfg, &[&segment]);
        run_ok("updatedb", &crawl, &cfg, &[&segment]);
    }
    eprintln!(
        "https pages fetched: {https_ok}; most TLS requests of one host in a run on one \
         connection: {https_requests_per_host_max}"
    );
    assert!(https_ok >= 5, "{https_ok} https pages fetched");
    assert!(
        https_requests_per_host_max >= 4,
        "one connection carried at most {https_requests_per_host_max} TLS requests of a host"
    );
    // Relative links of https pages stayed https: round 2 fetched https pages beyond
    // the seeds.
    let db = crawldb_statuses(&crawl);
    let fetched_https = db
        .iter()
        .filter(|(u, s)| u.starts_with("https://") && s.as_str() == "db_fetched")
        .count();
    assert!(fetched_https > 2, "{fetched_https} https URLs db_fetched");
    drop(web);
}

/// Without `fetch.ca_file` the test CA is unknown: every https URL fails the handshake
/// (`tls_error`, a host failure: `max_host_exceptions` of them close the host), its
/// robots.txt is unavailable for the same reason, and the server sees no HTTP request
/// over TLS at all; http:// on the same address still works.
#[test]
fn unknown_ca_is_a_tls_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (web, _ca) = start_tls_web(dir);
    let since = read_log(&web.log).len();

    // robots.txt on: the https origin's robots.txt fails, so its pages are not tried
    // (and carry the cause, tls_error).
    let crawl = dir.join("crawl-robots");
    let cfg = config(dir, "robots", &web.addr, "");
    let seeds = vec![
        "https://site0.web.test/".to_string(),
        "https://site0.web.test/p1.html".to_string(),
        "http://site2.web.test/".to_string(),
    ];
    inject_seeds(dir, &crawl, &cfg, &seeds);
    let segment = generate_segment(&crawl, &cfg);
    fetch_ok(&crawl, &cfg, &segment);
    let rows = fetch_rows(&segment);
    for u in &seeds[..2] {
        assert_eq!(status_reason(&rows[u]), ("fetch_retry", "tls_error"), "{u}");
    }
    assert_eq!(rows[&seeds[2]].status.as_str(), "fetch_success");
    let robots = robots_rows(&segment);
    let r = &robots["https://site0.web.test"];
    assert_eq!(
        (r.outcome.as_str(), r.reason.as_str()),
        ("unavailable", "tls_error")
    );
    assert_eq!(r.http_status, None);

    // robots.txt off: the pages themselves fail with tls_error, counted as host
    // failures: after max_host_exceptions (3) the host's remaining URLs are skipped.
    let crawl = dir.join("crawl-pages");
    let cfg = config(
        dir,
        "pages",
        &web.addr,
        "respect_robots = false\nmax_host_exceptions = 3",
    );
    let seeds: Vec<String> = (0..5)
        .map(|j| match j {
            0 => "https://site1.web.test/".to_string(),
            j => format!(
                "https://site1.web.test/p{j}.html\tscore={}",
                1.0 - j as f64 / 10.0
            ),
        })
        .chain(["http://site2.web.test/p1.html".to_string()])
        .collect();
    inject_seeds(dir, &crawl, &cfg, &seeds);
    let segment = generate_segment(&crawl, &cfg);
    let summary = fetch_ok(&crawl, &cfg, &segment);
    let rows = fetch_rows(&segment);
    let reasons: BTreeMap<&str, usize> = rows
        .values()
        .filter(|r| r.url.starts_with("https://"))
        .fold(BTreeMap::new(), |mut m, r| {
            assert_eq!(r.status.as_str(), "fetch_retry", "{}", r.url);
            assert_eq!(r.http_status, None, "{}", r.url);
            *m.entry(r.reason.as_str()).or_insert(0) += 1;
            m
        });
    assert_eq!(
        reasons,
        BTreeMap::from([("host_failing", 2), ("tls_error", 3)]),
        "{summary}"
    );
    assert!(summary.contains("tls_error=3"), "{summary}");
    assert_eq!(
        rows["http://site2.web.test/p1.html"].status.as_str(),
        "fetch_success"
    );

    // The server answered no request over TLS: every handshake failed.
    let lines = log_since(&web, since);
    assert!(lines.iter().all(|l| !l.tls), "{lines:?}");
    assert_eq!(
        lines.iter().filter(|l| l.host == "site2.web.test").count(),
        3
    );
    drop(web);
}

/// `untrusted.web.test` presents a certificate from a CA that is never published: it
/// fails verification even with the test CA trusted, and is fetched (the web answers
/// 404 for this unknown host) once `fetch.tls_verify = false`.
#[test]
fn untrusted_certificate_fails_unless_verification_is_off() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (web, ca) = start_tls_web(dir);
    let url = format!("https://{UNTRUSTED_HOST}/");
    let ca_line = format!("ca_file = \"{}\"", toml_path(&ca));
    let since = read_log(&web.log).len();

    // Verified against the test CA: robots.txt unavailable (tls_error); and with
    // robots.txt off, the page itself.
    let crawl = dir.join("crawl-verify");
    let cfg = config(dir, "verify", &web.addr, &ca_line);
    inject_seeds(dir, &crawl, &cfg, std::slice::from_ref(&url));
    let segment = generate_segment(&crawl, &cfg);
    fetch_ok(&crawl, &cfg, &segment);
    let robots = robots_rows(&segment);
    let r = &robots[&format!("https://{UNTRUSTED_HOST}")];
    assert_eq!(
        (r.outcome.as_str(), r.reason.as_str()),
        ("unavailable", "tls_error")
    );
    assert_eq!(
        status_reason(&fetch_rows(&segment)[&url]),
        ("fetch_retry", "tls_error")
    );
    let crawl = dir.join("crawl-verify-norobots");
    let cfg = config(
        dir,
        "verify-norobots",
        &web.addr,
        &format!("{ca_line}\nrespect_robots = false"),
    );
    inject_seeds(dir, &crawl, &cfg, std::slice::from_ref(&url));
    let segment = generate_segment(&crawl, &cfg);
    fetch_ok(&crawl, &cfg, &segment);
    assert_eq!(
        status_reason(&fetch_rows(&segment)[&url]),
        ("fetch_retry", "tls_error")
    );
    let lines = log_since(&web, since);
    assert!(lines.is_empty(), "no request got through: {lines:?}");

    // Not verified: a response arrives (404 for robots.txt and the page).
    let crawl = dir.join("crawl-noverify");
    let cfg = config(dir, "noverify", &web.addr, "tls_verify = false");
    inject_seeds(dir, &crawl, &cfg, std::slice::from_ref(&url));
    let segment = generate_segment(&crawl, &cfg);
    fetch_ok(&crawl, &cfg, &segment);
    let row = &fetch_rows(&segment)[&url];
    assert_eq!(status_reason(row), ("fetch_gone", "http_404"));
    assert_eq!(row.http_status, Some(404));
    let r = &robots_rows(&segment)[&format!("https://{UNTRUSTED_HOST}")];
    assert_eq!(
        (r.outcome.as_str(), r.reason.as_str()),
        ("allow_all", "http_404")
    );
    let lines = log_since(&web, since);
    let paths: Vec<(&str, bool)> = lines
        .iter()
        .filter(|l| l.host == UNTRUSTED_HOST)
        .map(|l| (l.path.as_str(), l.tls))
        .collect();
    assert_eq!(paths, [("/robots.txt", true), ("/", true)]);
    drop(web);
}

/// A `fetch.ca_file` that does not exist, or holds no certificate, stops fetch before
/// anything is requested, with a message naming the key and the file; the segment
/// stays unfetched and a rerun with a good file works.
#[test]
fn bad_ca_file_stops_fetch_before_any_request() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (web, ca) = start_tls_web(dir);
    let since = read_log(&web.log).len();
    let crawl = dir.join("crawl");
    let missing = dir.join("no-such-ca.pem");
    let garbage = dir.join("garbage.pem");
    std::fs::write(&garbage, "this is not a certificate\n").unwrap();
    let good = config(
        dir,
        "good",
        &web.addr,
        &format!("ca_file = \"{}\"", toml_path(&ca)),
    );
    inject_seeds(dir, &crawl, &good, &["https://site0.web.test/".to_string()]);
    let segment = generate_segment(&crawl, &good);
    for (name, file, why) in [
        ("missing", &missing, "cannot read"),
        ("garbage", &garbage, "no certificate"),
    ] {
        let cfg = config(
            dir,
            name,
            &web.addr,
            &format!("ca_file = \"{}\"", toml_path(file)),
        );
        let out = run("fetch", &crawl, &cfg, &[&segment]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name}: fetch succeeded:\n{stderr}");
        assert!(stderr.contains("fetch.ca_file"), "{name}: {stderr}");
        assert!(
            stderr.contains(file.to_str().unwrap()),
            "{name}: names the file: {stderr}"
        );
        assert!(stderr.contains(why), "{name}: {stderr}");
        let seg = Path::new(&segment);
        for d in ["crawl_fetch", "content", "robots"] {
            assert!(!seg.join(d).exists(), "{name}: {d} written");
        }
    }
    assert!(log_since(&web, since).is_empty(), "nothing was requested");
    fetch_ok(&crawl, &good, &segment);
    assert_eq!(
        status_reason(&fetch_rows(&segment)["https://site0.web.test/"]),
        ("fetch_success", "ok")
    );
    drop(web);
}

/// On a machine without system root certificates (simulated with rustls-native-certs'
/// `SSL_CERT_FILE`/`SSL_CERT_DIR` pointing at nothing) fetch still runs: http:// as
/// usual, https:// verified against `fetch.ca_file` alone (a `tls_error` without it).
#[test]
fn without_system_roots_ca_file_alone_is_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (web, ca) = start_tls_web(dir);
    let empty = dir.join("no-roots");
    std::fs::create_dir_all(&empty).unwrap();
    let fetch_without_roots = |crawl: &Path, cfg: &Path, segment: &str| {
        let out = std::process::Command::new(bin("fetch"))
            .arg("--crawl-dir")
            .arg(crawl)
            .arg("--config")
            .arg(cfg)
            .arg(segment)
            .env_remove("TRAWL_CONFIG")
            .env_remove("TRAWL_CRAWL_DIR")
            .env("RUST_LOG", "warn")
            .env("SSL_CERT_FILE", dir.join("no-such-bundle.pem"))
            .env("SSL_CERT_DIR", &empty)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "fetch failed:\n{stderr}");
        stderr
    };
    let seeds = vec![
        "https://site0.web.test/".to_string(),
        "http://site1.web.test/".to_string(),
    ];
    for (name, fetch_keys, https_outcome) in [
        (
            "with-ca",
            format!("ca_file = \"{}\"\nrespect_robots = false", toml_path(&ca)),
            ("fetch_success", "ok"),
        ),
        (
            "without-ca",
            "respect_robots = false".to_string(),
            ("fetch_retry", "tls_error"),
        ),
    ] {
        let crawl = dir.join(format!("crawl-{name}"));
        let cfg = config(dir, name, &web.addr, &fetch_keys);
        inject_seeds(dir, &crawl, &cfg, &seeds);
        let segment = generate_segment(&crawl, &cfg);
        let stderr = fetch_without_roots(&crawl, &cfg, &segment);
        let rows = fetch_rows(&segment);
        assert_eq!(
            status_reason(&rows[&seeds[0]]),
            https_outcome,
            "{name}: {stderr}"
        );
        assert_eq!(
            status_reason(&rows[&seeds[1]]),
            ("fetch_success", "ok"),
            "{name}"
        );
        if name == "without-ca" {
            assert!(
                stderr.contains("system root certificates unavailable"),
                "{stderr}"
            );
        }
    }
    drop(web);
}

/// Every certificate of a `fetch.ca_file` is loaded, and a client builds with it and
/// with `fetch.tls_verify = false` (moved from the client's unit tests: it needs the
/// test web's CA).
#[test]
fn ca_file_certificates_are_trusted_and_tls_verify_builds() {
    use trawl::config::FetchConfig;
    use trawl::net::client::{Http, load_ca_file};
    let dir = tempfile::tempdir().unwrap();
    let a = testweb::TestCa::generate().unwrap();
    let b = testweb::TestCa::generate().unwrap();
    let pem = dir.path().join("ca.pem");
    std::fs::write(&pem, format!("{}{}", a.ca_pem(), b.ca_pem())).unwrap();
    assert_eq!(load_ca_file(&pem).unwrap().len(), 2);
    let cfg = FetchConfig {
        ca_file: pem,
        ..FetchConfig::default()
    };
    assert!(Http::new(&cfg).is_ok());
    let cfg = FetchConfig {
        tls_verify: false,
        ..FetchConfig::default()
    };
    assert!(Http::new(&cfg).is_ok());
}
