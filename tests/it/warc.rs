//! `warc`: a crawl of the test web exported to WARC files, read back by a structural
//! reader here and, when the Makefile's virtualenv has warcio, by warcio itself
//! (scripts/check_warc.py: digests, pairs, payloads).

use crate::common;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use trawl::records::ContentRecord;
use trawl::warc::writer::sha1_digest;

const WEB: &[&str] = &["--seed", "5", "--hosts", "4", "--pages", "10"];

fn warc(crawl: &Path, config: &Path, args: &[&str]) -> Vec<PathBuf> {
    let out = Command::new(common::bin("warc"))
        .arg("--crawl-dir")
        .arg(crawl)
        .arg("--config")
        .arg(config)
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "warc {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .collect()
}

/// One parsed WARC record: fields and block.
struct Rec {
    fields: BTreeMap<String, String>,
    block: Vec<u8>,
}

/// Reads a .warc.gz, checking that each gzip member holds exactly one record.
fn read_warc(path: &Path) -> Vec<Rec> {
    let bytes = std::fs::read(path).unwrap();
    let mut rest: &[u8] = &bytes;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let mut dec = flate2::bufread::GzDecoder::new(rest);
        let mut raw = Vec::new();
        dec.read_to_end(&mut raw).unwrap();
        rest = dec.into_inner();
        let head_end = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("header end");
        let head = std::str::from_utf8(&raw[..head_end]).unwrap();
        let mut lines = head.split("\r\n");
        assert_eq!(lines.next(), Some("WARC/1.1"));
        let fields: BTreeMap<String, String> = lines
            .map(|l| {
                let (k, v) = l.split_once(": ").expect("field");
                (k.to_string(), v.to_string())
            })
            .collect();
        let len: usize = fields["Content-Length"].parse().unwrap();
        let block = raw[head_end + 4..head_end + 4 + len].to_vec();
        assert_eq!(
            &raw[head_end + 4 + len..],
            b"\r\n\r\n",
            "one record per gzip member"
        );
        assert_eq!(fields["WARC-Block-Digest"], sha1_digest(&block));
        out.push(Rec { fields, block });
    }
    out
}

/// Structural check of an export against the segment's content rows.
fn check_structure(files: &[PathBuf], content: &[ContentRecord]) {
    let mut responses: BTreeMap<String, Rec> = BTreeMap::new();
    let mut requests = 0;
    for (i, f) in files.iter().enumerate() {
        let name = f.file_name().unwrap().to_str().unwrap();
        assert!(name.ends_with(&format!("-{i:05}.warc.gz")), "{name}");
        let recs = read_warc(f);
        assert_eq!(recs[0].fields["WARC-Type"], "warcinfo");
        assert_eq!(recs[0].fields["WARC-Filename"], name);
        let info_id = recs[0].fields["WARC-Record-ID"].clone();
        for r in recs.into_iter().skip(1) {
            assert_eq!(r.fields["WARC-Warcinfo-ID"], info_id);
            match r.fields["WARC-Type"].as_str() {
                "request" => {
                    requests += 1;
                    assert!(r.block.starts_with(b"GET /"));
                    assert!(r.fields["Content-Type"].contains("msgtype=request"));
                }
                "response" => {
                    let url = r.fields["WARC-Target-URI"].clone();
                    assert!(responses.insert(url, r).is_none(), "one response per URL");
                }
                other => panic!("unexpected record type {other}"),
            }
        }
    }
    assert_eq!(requests, responses.len());
    let want: BTreeSet<&str> = content.iter().map(|c| c.url.as_str()).collect();
    assert_eq!(
        responses
            .keys()
            .map(String::as_str)
            .collect::<BTreeSet<_>>(),
        want
    );
    for c in content {
        let r = &responses[&c.url];
        let end = r.block.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        assert_eq!(&r.block[end..], &c.content[..], "{} payload", c.url);
        assert_eq!(r.fields["WARC-Payload-Digest"], sha1_digest(&c.content));
        let status_line = format!("HTTP/1.1 {} ", c.http_status);
        assert!(r.block.starts_with(status_line.as_bytes()));
        assert_eq!(r.fields.get("WARC-IP-Address"), c.ip_address.as_ref());
    }
}

/// A copy of `src` in `dest_dir` with one payload byte changed (`</html>` ->
/// `</HTML>`, same length), each record still its own gzip member.
fn corrupt_copy(src: &Path, dest_dir: &Path) {
    std::fs::create_dir_all(dest_dir).unwrap();
    let bytes = std::fs::read(src).unwrap();
    let mut rest: &[u8] = &bytes;
    let mut out = Vec::new();
    let mut done = false;
    while !rest.is_empty() {
        let mut dec = flate2::bufread::GzDecoder::new(rest);
        let mut raw = Vec::new();
        dec.read_to_end(&mut raw).unwrap();
        rest = dec.into_inner();
        if !done && let Some(i) = raw.windows(7).position(|w| w == b"</html>") {
            raw[i + 2..i + 6].copy_from_slice(b"HTML");
            done = true;
        }
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut enc, &raw).unwrap();
        out.extend(enc.finish().unwrap());
    }
    assert!(done, "a page to corrupt");
    std::fs::write(dest_dir.join(src.file_name().unwrap()), out).unwrap();
}

/// Runs scripts/check_warc.py with the Makefile's virtualenv, if it has warcio;
/// also checks that it rejects a copy with a corrupted payload.
fn check_with_warcio(warc_dir: &Path, content: &[ContentRecord], scratch: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join(".venv/bin/python");
    let has_warcio = python.is_file()
        && Command::new(&python)
            .args(["-c", "import warcio"])
            .output()
            .is_ok_and(|o| o.status.success());
    if !has_warcio {
        common::missing(
            "warcio",
            &format!(
                "{} with warcio not found; `make .venv/bin/python` installs it",
                python.display()
            ),
        );
        return;
    }
    common::ran_with("warcio");
    let jsonl = scratch.join("content.jsonl");
    let mut text = String::new();
    for c in content {
        let hex: String = c.content.iter().map(|b| format!("{b:02x}")).collect();
        let row = serde_json::json!({
            "url": c.url, "http_status": c.http_status,
            "ip_address": c.ip_address, "content_hex": hex,
        });
        text.push_str(&row.to_string());
        text.push('\n');
    }
    std::fs::write(&jsonl, text).unwrap();
    let out = Command::new(&python)
        .arg(root.join("scripts/check_warc.py"))
        .arg(warc_dir)
        .arg(&jsonl)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "check_warc.py failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("0 problems"), "{stdout}");
    eprintln!("{}", stdout.trim());

    let first = std::fs::read_dir(warc_dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let bad = scratch.join("corrupted");
    let _ = std::fs::remove_dir_all(&bad);
    corrupt_copy(&first, &bad);
    let out = Command::new(&python)
        .arg(root.join("scripts/check_warc.py"))
        .arg(&bad)
        .arg(&jsonl)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "check_warc.py accepted a corrupted payload"
    );
    assert!(stderr.contains("digest"), "{stderr}");
}

#[test]
fn crawl_exports_to_warc_that_warcio_reads_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let map = site_map(dir, WEB);
    let web = TestWeb::start(dir, WEB);
    let config = write_config(dir, &web.addr, 0.02, "");
    let crawl = dir.join("crawl");
    inject_seeds(dir, &crawl, &config, &map.seeds);
    round(&crawl, &config).expect("round 1");
    let segment = round(&crawl, &config).expect("round 2");
    let name = Path::new(&segment)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let content: Vec<ContentRecord> =
        trawl::store::parquet::read_dataset(&Path::new(&segment).join("content")).unwrap();
    assert!(
        content.len() >= 5,
        "the crawl fetched pages ({})",
        content.len()
    );

    // Default: the newest segment, into <crawl>/warc, one file.
    let files = warc(&crawl, &config, &[]);
    assert_eq!(files.len(), 1);
    assert_eq!(
        files[0],
        crawl
            .join("warc")
            .join(format!("trawl-{name}-00000.warc.gz"))
    );
    check_structure(&files, &content);
    check_with_warcio(&crawl.join("warc"), &content, dir);

    // Small files: rotation, one pair at least per file; a re-run replaces the files.
    let out = dir.join("small");
    let out_s = out.to_str().unwrap();
    let args = [
        segment.as_str(),
        "--out",
        out_s,
        "--max-file-bytes",
        "6000",
        "--prefix",
        "t",
    ];
    let first = warc(&crawl, &config, &args);
    assert!(
        first.len() > 1,
        "rotation at 6000 bytes gave {} files",
        first.len()
    );
    check_structure(&first, &content);
    check_with_warcio(&out, &content, dir);
    let again = warc(
        &crawl,
        &config,
        &[segment.as_str(), "--out", out_s, "--prefix", "t"],
    );
    assert_eq!(again.len(), 1, "re-run with the default size limit");
    let left: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        left.len(),
        1,
        "earlier files and temporaries removed: {left:?}"
    );
    check_structure(&again, &content);
    drop(web);
}

#[test]
fn warc_on_a_segment_without_content_says_what_to_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = write_config(dir, "127.0.0.1:9", 0.0, "");
    let crawl = dir.join("crawl");
    let seeds = dir.join("seeds.txt");
    std::fs::write(&seeds, "http://a.web.test/\n").unwrap();
    run_ok("inject", &crawl, &config, &[seeds.to_str().unwrap()]);
    let segment = run_ok("generate", &crawl, &config, &[]).trim().to_string();
    let out = Command::new(common::bin("warc"))
        .arg("--crawl-dir")
        .arg(&crawl)
        .arg("--config")
        .arg(&config)
        .arg(&segment)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("content") && err.contains("fetch"), "{err}");
    assert!(
        !crawl.join("warc").exists() || std::fs::read_dir(crawl.join("warc")).unwrap().count() == 0
    );
}
