//! moto's S3 server on loopback for the object-store tests (`moto_server` from
//! the project venv: `make venv`), with a fresh bucket.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The bucket every test crawl directory lives in.
pub const BUCKET: &str = "trawl-test";

/// A running moto S3 server on loopback, killed on drop.
pub struct Moto {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `moto_server` executable: `TRAWL_MOTO_SERVER`, else the project venv's.
fn moto_bin() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("TRAWL_MOTO_SERVER").map(PathBuf::from),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/moto_server")),
    ];
    candidates.into_iter().flatten().find(|p| p.is_file())
}

/// One HTTP/1.1 request to moto (no signature: moto does not check it), returning
/// the status code.
fn http(endpoint: &str, method: &str, path: &str) -> std::io::Result<u16> {
    let addr = endpoint.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut resp = String::new();
    s.read_to_string(&mut resp)?;
    Ok(resp
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0))
}

/// Starts moto on a free loopback port with a fresh bucket; `None` (and a message)
/// when it cannot.
pub fn start_moto() -> Option<Moto> {
    let Some(bin) = moto_bin() else {
        super::missing(
            "the S3 server (moto)",
            "moto_server not found (make test installs moto[server] into .venv; or set TRAWL_MOTO_SERVER)",
        );
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .ok()?;
    let child = Command::new(&bin)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let child = match child {
        Ok(c) => c,
        Err(e) => {
            super::missing(
                "the S3 server (moto)",
                &format!("cannot start {}: {e}", bin.display()),
            );
            return None;
        }
    };
    let moto = Moto {
        child,
        endpoint: format!("http://127.0.0.1:{port}"),
    };
    let started = Instant::now();
    loop {
        if let Ok(code) = http(&moto.endpoint, "PUT", &format!("/{BUCKET}")) {
            assert!(code == 200, "moto: creating the bucket answered {code}");
            super::ran_with("the S3 server (moto)");
            return Some(moto);
        }
        if started.elapsed() > Duration::from_secs(30) {
            super::missing(
                "the S3 server (moto)",
                &format!("moto_server did not answer on {}", moto.endpoint),
            );
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The environment every stage of these tests gets: moto's endpoint and dummy
/// credentials, a work dir of its own.
pub fn s3_env(cmd: &mut Command, moto: &Moto, work: &Path) {
    cmd.env("AWS_ENDPOINT_URL", &moto.endpoint)
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ALLOW_HTTP", "true")
        .env("TRAWL_WORK_DIR", work)
        .env_remove("TRAWL_TEST_PAUSE_SEGTOOLS");
}

/// The crawl at `uri` pulled whole into a scratch mirror (by `readdb --stats`),
/// handed to `read`; the mirror is removed afterwards.
pub fn s3_pull<T>(
    moto: &Moto,
    scratch: &Path,
    uri: &str,
    config: &Path,
    read: impl FnOnce(&Path) -> T,
) -> T {
    let work = scratch.join(format!("reader-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let mut cmd = super::stage_command(super::bin("readdb"), Path::new(uri), config, &["--stats"]);
    s3_env(&mut cmd, moto, &work);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "readdb --stats on {uri}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trawl::store::object::CrawlUri::Object(o) =
        trawl::store::object::CrawlUri::parse(Path::new(uri)).unwrap()
    else {
        panic!("{uri} is not an object-store uri")
    };
    let mirror = trawl::store::object::Mirror::dir_for(&o, Some(&work)).join("crawl");
    let got = read(&mirror);
    std::fs::remove_dir_all(&work).unwrap();
    got
}

/// The crawldb at `uri` ([`s3_pull`]).
pub fn s3_crawldb(
    moto: &Moto,
    scratch: &Path,
    uri: &str,
    config: &Path,
) -> BTreeMap<String, trawl::CrawlDatum> {
    s3_pull(moto, scratch, uri, config, super::crawldb)
}
