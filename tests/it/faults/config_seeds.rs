//! Faults: config_seeds.
//!
//! Configuration values that used to be accepted (`delay = nan` turned politeness off,
//! `delay = inf` hung fetch, `[inject] score = nan`, negative intervals, `max_retries =
//! -1`, `schemes = ["gopher"]`) are refused by the stage that loads them, exit code 1,
//! naming the file, the key, the value and what is allowed, before anything is written;
//! flags that override keys are checked the same way. Seed inputs: a byte order mark,
//! a Latin-1 line, a rejection printed twice, a 10 MB line echoed in full, and
//! directories, several files and standard input.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::SystemTime;

use crate::common::{bin, crawldb_statuses, run, run_ok, stage_command};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A config for a crawl that never reaches a server (the test hosts map to the
/// loopback discard port), with `extra` lines added to their sections:
/// `("fetch", "delay = nan")`. Returns the file and its text.
fn config(dir: &Path, name: &str, extra: &[(&str, &str)]) -> (PathBuf, String) {
    let mut sections: Vec<(&str, Vec<&str>)> = vec![
        ("crawl", vec!["partitions = 2"]),
        ("urls", vec![]),
        ("inject", vec![]),
        ("fetch", vec!["max_connections = 4"]),
        ("updatedb", vec![]),
        ("pagerank", vec![]),
    ];
    for (section, line) in extra {
        match sections.iter_mut().find(|(s, _)| s == section) {
            Some((_, lines)) => lines.push(line),
            None => sections.push((section, vec![line])),
        }
    }
    let mut text = String::new();
    for (section, lines) in &sections {
        text.push_str(&format!("[{section}]\n"));
        for l in lines {
            text.push_str(l);
            text.push('\n');
        }
        text.push('\n');
    }
    text.push_str("[fetch.resolve]\n\"*.web.test\" = \"127.0.0.1:9\"\n");
    let path = dir.join(name);
    std::fs::write(&path, &text).unwrap();
    (path, text)
}

/// Every file under `dir` with its size and modification time (empty if `dir` is absent).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u64, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                stack.push(e.path());
            }
            out.insert(e.path(), (meta.len(), meta.modified().unwrap()));
        }
    }
    out
}

/// A crawl directory with two seeds injected and one generated segment; returns the
/// good config and the segment.
fn crawl_with_segment(dir: &Path, crawl: &Path) -> (PathBuf, String) {
    let (good, _) = config(dir, "good.toml", &[]);
    let seeds = dir.join("seeds.txt");
    std::fs::write(&seeds, "http://a.web.test/\nhttp://b.web.test/\n").unwrap();
    run_ok("inject", crawl, &good, &[seeds.to_str().unwrap()]);
    let segment = run_ok("generate", crawl, &good, &[]);
    (good, segment.trim().lines().last().unwrap().to_string())
}

/// The 1-based line of `needle` in `text`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l == needle).unwrap() + 1
}

/// Asserts `out` is a refusal (exit 1) whose message holds every piece of `expected`.
fn assert_refused(out: &Output, what: &str, expected: &[&str]) {
    let err = stderr(out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{what}: exit code; stderr:\n{err}"
    );
    for piece in expected {
        assert!(
            err.contains(piece),
            "{what}: {piece:?} missing from:\n{err}"
        );
    }
}

#[test]
fn bad_config_values_are_refused_before_anything_is_written() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let crawl = dir.join("crawl");
    let (_, segment) = crawl_with_segment(dir, &crawl);
    let seeds = dir.join("seeds.txt");
    let seeds = seeds.to_str().unwrap();
    // (stage, its arguments, section, bad line, expected pieces of the message).
    type Case<'a> = (&'a str, &'a [&'a str], &'a str, &'a str, &'a [&'a str]);
    let cases: &[Case] = &[
        (
            "fetch",
            &[&segment],
            "fetch",
            "delay = nan",
            &["fetch.delay = nan", "a number from 0 to 86400 seconds"],
        ),
        (
            "fetch",
            &[&segment],
            "fetch",
            "delay = inf",
            &["fetch.delay = inf", "a number from 0 to 86400 seconds"],
        ),
        (
            "fetch",
            &[&segment],
            "fetch",
            "delay = -0.5",
            &["fetch.delay = -0.5", "a number from 0 to 86400 seconds"],
        ),
        (
            "fetch",
            &[&segment],
            "fetch",
            "per_host_connections = -1",
            &[
                "fetch.per_host_connections = -1",
                "an integer from 1 to 65536",
            ],
        ),
        (
            "fetch",
            &[&segment],
            "fetch",
            "read_timeout = 0",
            &[
                "fetch.read_timeout = 0",
                "a number above 0 and up to 86400 seconds",
            ],
        ),
        (
            "inject",
            &[seeds],
            "inject",
            "score = nan",
            &["inject.score = nan", "a finite number"],
        ),
        (
            "inject",
            &[seeds],
            "inject",
            "fetch_interval = -86400",
            &[
                "inject.fetch_interval = -86400",
                "an integer from 1 to 3153600000 seconds",
            ],
        ),
        (
            "inject",
            &[seeds],
            "urls",
            "schemes = [\"gopher\"]",
            &[
                "urls.schemes = [\"gopher\"]",
                "a non-empty list of \"http\", \"https\"",
            ],
        ),
        (
            "updatedb",
            &[&segment],
            "updatedb",
            "max_retries = -1",
            &["updatedb.max_retries = -1", "an integer from 0 to 1000"],
        ),
        (
            "generate",
            &[],
            "generate",
            "count_mode = \"site\"",
            &[
                "generate.count_mode = \"site\"",
                "one of \"host\", \"domain\"",
            ],
        ),
        (
            "pagerank",
            &[],
            "pagerank",
            "damping = 1.5",
            &[
                "pagerank.damping = 1.5",
                "a number from 0 up to (not including) 1",
            ],
        ),
        (
            "pagerank",
            &[],
            "pagerank",
            "tolerance = nan",
            &["pagerank.tolerance = nan", "a finite number >= 0"],
        ),
    ];
    for (i, (stage, args, section, line, expected)) in cases.iter().enumerate() {
        let (bad, text) = config(dir, &format!("bad{i}.toml"), &[(section, line)]);
        let bad_name = bad.display().to_string();
        let at_line = format!("(line {})", line_of(&text, line));
        let before = snapshot(&crawl);
        let out = run(stage, &crawl, &bad, args);
        let what = format!("{stage} with [{section}] {line}");
        let mut pieces = vec![bad_name.as_str(), at_line.as_str(), "the default is"];
        pieces.extend_from_slice(expected);
        assert_refused(&out, &what, &pieces);
        assert_eq!(snapshot(&crawl), before, "{what}: the crawl dir changed");
        // A stage that creates the crawl directory does not create it either.
        if *stage == "inject" {
            let fresh = dir.join(format!("fresh{i}"));
            let out = run(stage, &fresh, &bad, args);
            assert_refused(&out, &what, expected);
            assert!(!fresh.exists(), "{what}: {} was created", fresh.display());
        }
    }
    // The crawl itself still works with the good config.
    assert_eq!(crawldb_statuses(&crawl).len(), 2);
}

#[test]
fn unknown_keys_are_refused_with_the_nearest_known_key() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let crawl = dir.join("crawl");
    let (_, segment) = crawl_with_segment(dir, &crawl);
    let cases: &[(&str, &str, &str)] = &[
        ("fetch", "delai = 2.0", "unknown key fetch.delai"),
        (
            "updatedb",
            "max_retry = 2",
            "unknown key updatedb.max_retry",
        ),
        ("crawl", "delay = 2.0", "unknown key crawl.delay"),
        ("fecth", "delay = 2.0", "unknown section [fecth]"),
    ];
    let hints = [
        "did you mean fetch.delay?",
        "did you mean updatedb.max_retries?",
        "did you mean fetch.delay?",
        "did you mean [fetch]?",
    ];
    for ((section, line, head), hint) in cases.iter().zip(hints) {
        let (bad, text) = config(dir, "typo.toml", &[(section, line)]);
        let needle = if head.contains("section") {
            format!("[{section}]")
        } else {
            line.to_string()
        };
        let at_line = format!("(line {})", line_of(&text, &needle));
        let before = snapshot(&crawl);
        let out = run("fetch", &crawl, &bad, &[&segment]);
        assert_refused(
            &out,
            line,
            &[&bad.display().to_string(), head, &at_line, hint],
        );
        assert_eq!(snapshot(&crawl), before, "{line}: the crawl dir changed");
    }
}

#[test]
fn flag_overrides_are_refused_like_file_values() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let crawl = dir.join("crawl");
    let (good, segment) = crawl_with_segment(dir, &crawl);
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            "fetch",
            &["--delay", "nan", &segment],
            &["fetch.delay = nan", "a number from 0 to 86400 seconds"],
        ),
        (
            "fetch",
            &["--delay", "inf", &segment],
            &["fetch.delay = inf", "a number from 0 to 86400 seconds"],
        ),
        (
            "fetch",
            &["--time-limit=-1", &segment],
            &[
                "fetch.time_limit = -1.0",
                "a number from 0 to 31536000 seconds",
            ],
        ),
        (
            "fetch",
            &["--max-connections", "0", &segment],
            &["fetch.max_connections = 0", "an integer from 1 to 65536"],
        ),
        (
            "generate",
            &["--top-n", "0"],
            &["generate.top_n = 0", "an integer >= 1"],
        ),
        (
            "sitemap",
            &["--delay", "nan"],
            &["fetch.delay = nan", "a number from 0 to 86400 seconds"],
        ),
        (
            "linkdb",
            &["--max-inlinks", "0"],
            &["linkdb.max_inlinks = 0", "an integer >= 1"],
        ),
        (
            "parse",
            &["--max-page-millis", "100000000000", &segment],
            &[
                "parse.max_page_millis = 100000000000",
                "an integer from 0 to 86400000 milliseconds",
            ],
        ),
        (
            "pagerank",
            &["--damping", "nan"],
            &[
                "pagerank.damping = nan",
                "a number from 0 up to (not including) 1",
            ],
        ),
    ];
    for (stage, args, expected) in cases {
        let before = snapshot(&crawl);
        let out = run(stage, &crawl, &good, args);
        let what = format!("{stage} {args:?}");
        let mut pieces = vec!["(command-line flags)"];
        pieces.extend_from_slice(expected);
        assert_refused(&out, &what, &pieces);
        assert_eq!(snapshot(&crawl), before, "{what}: the crawl dir changed");
    }
}

/// Runs inject on `args` with `stdin` as its standard input.
fn inject_stdin(crawl: &Path, config: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = stage_command(bin("inject"), crawl, config, args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(stdin).unwrap();
    drop(pipe);
    child.wait_with_output().unwrap()
}

fn urls(crawl: &Path) -> Vec<String> {
    crawldb_statuses(crawl).into_keys().collect()
}

#[test]
fn a_byte_order_mark_does_not_spoil_line_1() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let crawl = dir.join("crawl");
    let (cfg, _) = config(dir, "trawl.toml", &[]);
    let seeds = dir.join("bom.txt");
    std::fs::write(&seeds, "\u{feff}http://a.web.test/\nhttp://b.web.test/\n").unwrap();
    let out = run("inject", &crawl, &cfg, &[seeds.to_str().unwrap()]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("rejected http"), "{err}");
    assert!(
        err.contains("injected 2, already known 0, rejected 0"),
        "{err}"
    );
    assert_eq!(urls(&crawl), ["http://a.web.test/", "http://b.web.test/"]);
}

#[test]
fn a_latin1_line_is_reported_by_number_and_the_rest_injected() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let crawl = dir.join("crawl");
    let (cfg, _) = config(dir, "trawl.toml", &[]);
    let seeds = dir.join("latin1.txt");
    let mut bytes = b"http://a.web.test/\nhttp://b.web.test/\n".to_vec();
    bytes.extend_from_slice(b"http://c.web.test/caf\xE9\n");
    bytes.extend_from_slice(b"http://d.web.test/\n");
    std::fs::write(&seeds, bytes).unwrap();
    let out = run("inject", &crawl, &cfg, &[seeds.to_str().unwrap()]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let place = format!("{}:3: rejected", seeds.display());
    assert_eq!(err.matches(&place).count(), 1, "{err}");
    assert!(
        err.contains("not UTF-8 (byte 0xE9 at column 22); save the file as UTF-8"),
        "{err}"
    );
    assert!(
        err.contains("injected 3, already known 0, rejected 1"),
        "{err}"
    );
    assert_eq!(
        urls(&crawl),
        [
            "http://a.web.test/",
            "http://b.web.test/",
            "http://d.web.test/"
        ]
    );
}

#[test]
fn each_rejection_is_printed_once() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let crawl = dir.join("crawl");
    let (cfg, _) = config(dir, "trawl.toml", &[]);
    let seeds = dir.join("seeds.txt");
    std::fs::write(
        &seeds,
        "ftp://a.web.test/\nhttp://b.web.test/ score=abc\nhttp://c.web.test/\n",
    )
    .unwrap();
    // Printed once whatever the log level.
    for level in ["warn", "info"] {
        let out = Command::new(bin("inject"))
            .args(["--crawl-dir", crawl.to_str().unwrap()])
            .args(["--config", cfg.to_str().unwrap()])
            .arg(&seeds)
            .env("RUST_LOG", level)
            .output()
            .unwrap();
        let err = stderr(&out);
        assert!(out.status.success(), "{err}");
        for line in [1, 2] {
            let place = format!("{}:{line}:", seeds.display());
            assert_eq!(err.matches(&place).count(), 1, "line {line}:\n{err}");
        }
        assert_eq!(err.matches("ftp://a.web.test/").count(), 1, "{err}");
        assert!(err.contains("rejected 2"), "{err}");
    }
    assert_eq!(urls(&crawl), ["http://c.web.test/"]);
}

#[test]
fn a_10_mb_line_is_echoed_cut_short() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let crawl = dir.join("crawl");
    let (cfg, _) = config(dir, "trawl.toml", &[]);
    let seeds = dir.join("huge.txt");
    let mut huge_url = b"http://a.web.test/".to_vec();
    huge_url.resize(10 * 1024 * 1024, b'x');
    // A 10 MB line that is not UTF-8 either.
    let mut huge_latin1 = vec![0xE9u8; 10 * 1024 * 1024];
    huge_latin1.splice(0..0, b"http://b.web.test/".iter().copied());
    let mut bytes = huge_url.clone();
    bytes.push(b'\n');
    bytes.extend_from_slice(&huge_latin1);
    bytes.extend_from_slice(b"\nhttp://c.web.test/\n");
    std::fs::write(&seeds, bytes).unwrap();
    let out = run("inject", &crawl, &cfg, &[seeds.to_str().unwrap()]);
    let err = stderr(&out);
    assert!(out.status.success(), "{}", &err[..err.len().min(2000)]);
    assert!(err.len() < 2000, "stderr is {} bytes", err.len());
    let cut = format!(
        "{}\u{2026} ({} bytes)",
        "x".repeat(200 - 18),
        huge_url.len()
    );
    assert!(err.contains(&format!("http://a.web.test/{cut}")), "{err}");
    assert!(err.contains("(too_long)"), "{err}");
    assert!(
        err.contains(&format!("\u{2026} ({} bytes)", huge_latin1.len())),
        "the undecodable line is cut too: {err}"
    );
    assert!(
        err.contains(&format!("{}:2: rejected", seeds.display())),
        "{err}"
    );
    assert!(
        err.contains("injected 1, already known 0, rejected 2"),
        "{err}"
    );
    assert_eq!(urls(&crawl), ["http://c.web.test/"]);
}

#[test]
fn directories_several_files_and_stdin_are_inputs() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let (cfg, _) = config(dir, "trawl.toml", &[]);

    // A directory: every regular file, sorted; hidden files and subdirectories skipped.
    let seeds = dir.join("seeds");
    std::fs::create_dir_all(seeds.join("sub")).unwrap();
    std::fs::write(
        seeds.join("b.txt"),
        "http://b1.web.test/\nhttp://b2.web.test/\nftp://x/\n",
    )
    .unwrap();
    std::fs::write(
        seeds.join("a.txt"),
        "http://a1.web.test/\nhttp://a2.web.test/\n",
    )
    .unwrap();
    std::fs::write(seeds.join(".hidden"), "http://hidden.web.test/\n").unwrap();
    std::fs::write(seeds.join("_SUCCESS"), "http://success.web.test/\n").unwrap();
    std::fs::write(seeds.join("sub/c.txt"), "http://sub.web.test/\n").unwrap();
    let crawl = dir.join("crawl1");
    let out = run("inject", &crawl, &cfg, &[seeds.to_str().unwrap()]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let a = format!(
        "inject: {}: 2 accepted, 0 rejected",
        seeds.join("a.txt").display()
    );
    let b = format!(
        "inject: {}: 2 accepted, 1 rejected",
        seeds.join("b.txt").display()
    );
    let (ia, ib) = (err.find(&a), err.find(&b));
    assert!(
        ia.is_some() && ib.is_some() && ia < ib,
        "per input, sorted:\n{err}"
    );
    assert!(
        err.contains("injected 4, already known 0, rejected 1, crawldb 4 urls (2 inputs)"),
        "{err}"
    );
    assert_eq!(
        urls(&crawl),
        [
            "http://a1.web.test/",
            "http://a2.web.test/",
            "http://b1.web.test/",
            "http://b2.web.test/"
        ]
    );
    let stats = run_ok("readdb", &crawl, &cfg, &["--stats"]);
    assert!(stats.starts_with("urls\t4\nhosts\t4\n"), "{stats}");

    // Two files on the command line; a URL in both counts once.
    let one = dir.join("one.txt");
    let two = dir.join("two.txt");
    std::fs::write(&one, "http://a1.web.test/\nhttp://x.web.test/\n").unwrap();
    std::fs::write(&two, "http://y.web.test/\nhttp://x.web.test/\n").unwrap();
    let crawl = dir.join("crawl2");
    let out = run(
        "inject",
        &crawl,
        &cfg,
        &[one.to_str().unwrap(), two.to_str().unwrap()],
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("injected 3, already known 1, rejected 0, crawldb 3 urls (2 inputs)"),
        "{err}"
    );
    assert_eq!(
        urls(&crawl),
        [
            "http://a1.web.test/",
            "http://x.web.test/",
            "http://y.web.test/"
        ]
    );

    // Standard input, alone and beside a file (places say `-:line`).
    let crawl = dir.join("crawl3");
    let out = inject_stdin(
        &crawl,
        &cfg,
        &["-"],
        b"\xEF\xBB\xBFhttp://s1.web.test/\nhttp://s2.web.test/\nnot a url\n",
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(err.matches("-:3: rejected").count(), 1, "{err}");
    assert!(
        err.contains(
            "injected 2, already known 0, rejected 1, crawldb 2 urls (-: 2 accepted, 1 rejected)"
        ),
        "{err}"
    );
    let out = inject_stdin(
        &crawl,
        &cfg,
        &[one.to_str().unwrap(), "-"],
        b"http://s3.web.test/\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("injected 3, already known 0, rejected 0, crawldb 5 urls (2 inputs)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(urls(&crawl).len(), 5);

    // An empty directory and `-` given twice are refused before anything is written.
    let empty = dir.join("empty");
    std::fs::create_dir_all(empty.join("sub")).unwrap();
    let crawl = dir.join("crawl4");
    let out = run("inject", &crawl, &cfg, &[empty.to_str().unwrap()]);
    assert_refused(&out, "empty dir", &["holds no seed file"]);
    let out = inject_stdin(&crawl, &cfg, &["-", "-"], b"http://a.web.test/\n");
    assert_refused(&out, "stdin twice", &["standard input named twice"]);
    assert!(!crawl.exists());
}
