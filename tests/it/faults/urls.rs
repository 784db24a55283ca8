//! Faults: urls. Seeds with credentials, stray `%`, characters RFC 3986 does not allow
//! and no scheme are stored normalized, and the credentials reach no output; a
//! robots.txt rule with percent-encoded unreserved characters is obeyed (RFC 9309 2.2.2).

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::common::{
    TestWeb, bin, fetch_rows, files_under, generate_segment, site_map, stage_command, write_config,
};

const USER: &str = "alice";
const SECRET: &str = "s3cret-pw";

/// Runs a stage binary (`path`) with `--crawl-dir`/`--config` at `RUST_LOG=debug`,
/// asserting success; returns stdout and stderr.
fn run_logged(path: &str, crawl: &Path, config: &Path, args: &[&str]) -> (String, String) {
    let out = stage_command(path, crawl, config, args)
        .env("RUST_LOG", "debug")
        .output()
        .unwrap_or_else(|e| panic!("run {path}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{path} {args:?} failed ({:?}):\n{stderr}",
        out.status
    );
    (stdout, stderr)
}

fn assert_no_credentials(what: &str, text: &str) {
    assert!(
        !text.contains(SECRET) && !text.contains(USER),
        "credentials in {what}:\n{}",
        &text[..text.len().min(4000)]
    );
}

/// A seed file with `user:pass@`, a scheme-less host, stray `%`, and raw `| [ ] ^ ``
/// injects their normalized forms, exactly; a crawl round and a WARC export of it
/// leave the user name and password in no log line, no dataset, no crawl-dir file and
/// no WARC record.
#[test]
fn seeds_are_stored_normalized_and_credentials_reach_no_output() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web_flags = ["--seed", "5", "--hosts", "2", "--pages", "4"];
    let map = site_map(dir, &web_flags);
    let web = TestWeb::start(dir, &web_flags);
    let config = write_config(dir, &web.addr, 0.0, "");
    let crawl = dir.join("crawl");
    let hosts: Vec<String> = map.seeds.iter().map(|s| trawl::urls::host_of(s)).collect();
    let (h0, h1) = (&hosts[0], &hosts[1]);
    assert_ne!(h0, h1);

    let seeds = format!(
        "http://{USER}:{SECRET}@{h0}/\n\
         {h1}/\n\
         http://{h0}/search?q=foobar%\n\
         http://{h0}/90%+of/%zz/%7euser\n\
         http://{h0}/a|b/[x]?k=v|w^`[y]\n\
         http://{USER}@{h1}/?q=x\n\
         ftp://{USER}:{SECRET}@{h0}/rejected\n"
    );
    let seed_file = dir.join("seeds.txt");
    std::fs::write(&seed_file, &seeds).unwrap();
    let mut logs = Vec::new();
    let (_, inject_log) = run_logged(
        bin("inject"),
        &crawl,
        &config,
        &[seed_file.to_str().unwrap()],
    );
    assert!(
        inject_log.contains(&format!(
            "seed without a scheme taken as http: http://{h1}/"
        )),
        "{inject_log}"
    );
    // The rejected line (a scheme not crawled) is echoed with its credentials masked.
    assert!(
        inject_log.contains(&format!("seeds.txt:7: rejected ftp://***@{h0}/rejected")),
        "{inject_log}"
    );
    logs.push(("inject", inject_log));

    let stored: Vec<String> = crate::common::crawldb_statuses(&crawl)
        .into_keys()
        .collect();
    let mut want = vec![
        format!("http://{h0}/"),
        format!("http://{h1}/"),
        format!("http://{h0}/search?q=foobar%25"),
        format!("http://{h0}/90%25+of/%25zz/~user"),
        format!("http://{h0}/a%7Cb/%5Bx%5D?k=v%7Cw%5E%60%5By%5D"),
        format!("http://{h1}/?q=x"),
    ];
    want.sort();
    assert_eq!(stored, want);

    // One round, every stage logging at debug level, then a WARC export.
    let (segment, generate_log) = {
        let (out, log) = run_logged(bin("generate"), &crawl, &config, &[]);
        (out.trim().lines().last().unwrap().to_string(), log)
    };
    logs.push(("generate", generate_log));
    for stage in ["fetch", "parse", "updatedb", "linkdb"] {
        let (out, log) = run_logged(bin(stage), &crawl, &config, &[&segment]);
        logs.push((stage, out + &log));
    }
    let rows = fetch_rows(&segment);
    assert_eq!(
        rows.keys().cloned().collect::<Vec<_>>(),
        want,
        "fetch got the stored URLs"
    );
    assert_eq!(
        rows[&format!("http://{h0}/")].status.as_str(),
        "fetch_success"
    );
    let warc_dir = dir.join("warc");
    let (warc_out, warc_log) = run_logged(
        crate::common::bin("warc"),
        &crawl,
        &config,
        &["--out", warc_dir.to_str().unwrap()],
    );
    logs.push(("warc", warc_out + &warc_log));
    let (dump, _) = run_logged(bin("readdb"), &crawl, &config, &["--dump"]);
    logs.push(("readdb --dump", dump));
    let (seg_dump, _) = run_logged(bin("readseg"), &crawl, &config, &["--dump", &segment]);
    assert!(
        seg_dump.contains(&format!("\"http://{h0}/\"")),
        "readseg dumps rows"
    );
    logs.push(("readseg --dump", seg_dump));
    let server_log = std::fs::read_to_string(&web.log).unwrap_or_default();
    logs.push(("the test web's log", server_log));
    for (what, text) in &logs {
        assert_no_credentials(what, text);
    }

    // The WARC records (decompressed) and every non-Parquet file of the crawl dir.
    let warcs: Vec<PathBuf> = files_under(&warc_dir);
    assert!(!warcs.is_empty(), "warc wrote no file");
    let mut records = String::new();
    for f in &warcs {
        let mut gz = flate2::read::MultiGzDecoder::new(std::fs::File::open(f).unwrap());
        let mut bytes = Vec::new();
        gz.read_to_end(&mut bytes).unwrap();
        records.push_str(&String::from_utf8_lossy(&bytes));
    }
    assert!(
        records.contains(&format!("WARC-Target-URI: http://{h0}/\r\n")),
        "the page of the credentials seed is exported"
    );
    assert_no_credentials("the WARC export", &records);
    for f in files_under(&crawl) {
        if f.extension().is_some_and(|e| e == "parquet") {
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).into_owned();
        assert_no_credentials(&f.display().to_string(), &text);
    }
    drop(web);
}

/// robotsmoved.web.test's robots.txt says `Disallow: /%70rivate/` (`/private/` with
/// its `p` percent-encoded): fetch denies `/private/s1.html` without requesting it and
/// fetches the rest (RFC 9309 2.2.2; the matcher before matched `%70` only literally).
#[test]
fn robots_rule_with_escaped_unreserved_characters_is_obeyed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web_flags = ["--seed", "5", "--hosts", "1", "--pages", "3", "--hostile"];
    let map = site_map(dir, &web_flags);
    let host = "robotsmoved.web.test";
    let robots = map.hosts[host].robots_txt.clone().unwrap_or_default();
    assert!(robots.contains("Disallow: /%70rivate/\n"), "{robots}");
    let web = TestWeb::start(dir, &web_flags);
    let config = write_config(dir, &web.addr, 0.0, "");
    let crawl = dir.join("crawl");
    let url = |p: &str| format!("http://{host}{p}");
    let seeds = [url("/"), url("/p1.html"), url("/private/s1.html")];
    crate::common::inject_seeds(dir, &crawl, &config, &seeds);
    let segment = generate_segment(&crawl, &config);
    crate::common::fetch_ok(&crawl, &config, &segment);
    let log = web.stop();

    let rows = fetch_rows(&segment);
    let outcome = |u: &str| {
        let r = &rows[u];
        (r.status.as_str(), r.reason.as_str())
    };
    assert_eq!(rows.len(), 3);
    assert_eq!(
        outcome(&url("/private/s1.html")),
        ("fetch_gone", "robots_denied")
    );
    assert_eq!(outcome(&url("/")).0, "fetch_success");
    assert_eq!(outcome(&url("/p1.html")).0, "fetch_success");
    let mut paths: Vec<&str> = log
        .iter()
        .filter(|l| l.host == host)
        .map(|l| l.path.as_str())
        .collect();
    paths.sort_unstable();
    assert_eq!(paths, ["/", "/p1.html", "/robots-real.txt", "/robots.txt"]);
}
