//! Integration tests of the `testweb` binary: the served web must match the site map
//! exactly (pages, links, robots.txt, redirects, 404s), the request log must record
//! every request, and the same generator flags must give the same web.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::header::{CONTENT_LENGTH, CONTENT_TYPE, HOST, LOCATION};
use scraper::{Html, Selector};
use testweb::{SiteMap, WebSpec, generate, read_log};
use trawl::config::UrlConfig;
use trawl::urls::UrlPolicy;
use url::Url;

const BIN: &str = env!("CARGO_BIN_EXE_testweb");

const GEN: [&str; 6] = ["--seed", "7", "--hosts", "4", "--pages", "12"];

/// A running `testweb serve`, killed on drop.
struct Server {
    child: Child,
    addr: String,
    log: PathBuf,
}

impl Server {
    fn start(dir: &Path) -> Server {
        Server::start_with(dir, &[])
    }

    fn start_with(dir: &Path, extra: &[&str]) -> Server {
        let addr_file = dir.join("addr");
        let log = dir.join("requests.jsonl");
        let child = Command::new(BIN)
            .arg("serve")
            .args(GEN)
            .args(extra)
            .arg("--addr-file")
            .arg(&addr_file)
            .arg("--log")
            .arg(&log)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while !addr_file.exists() {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let addr = std::fs::read_to_string(&addr_file)
            .unwrap()
            .trim()
            .to_string();
        Server { child, addr, log }
    }

    /// SIGTERM, then the exit status must be success.
    fn stop(mut self) {
        let st = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(st.success());
        let t0 = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "server exited with {status}");
                return;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "server ignored SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sitemap_via_binary(dir: &Path, name: &str, gen_args: &[&str]) -> (SiteMap, Vec<u8>) {
    let out = dir.join(name);
    let st = Command::new(BIN)
        .arg("sitemap")
        .args(gen_args)
        .arg("--out")
        .arg(&out)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    (SiteMap::load(&out).unwrap(), std::fs::read(&out).unwrap())
}

fn client() -> reqwest::Client {
    trawl::tls::install_provider();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_gzip()
        .no_proxy()
        .build()
        .unwrap()
}

/// GETs `url` from the server at `addr`, naming the host in the Host header.
async fn get(c: &reqwest::Client, addr: &str, url: &str) -> reqwest::Response {
    let u = Url::parse(url).unwrap();
    let host = u.host_str().unwrap().to_string();
    c.get(format!("http://{addr}{}", u.path()))
        .header(HOST, host)
        .send()
        .await
        .unwrap()
}

/// Links of an HTML page resolved and normalized as a parser must (honouring `<base href>`).
fn parsed_outlinks(page_url: &str, body: &str) -> (Vec<String>, Option<String>) {
    let policy = UrlPolicy::new(&UrlConfig::default(), &[]).unwrap();
    let doc = Html::parse_document(body);
    let doc_url = Url::parse(page_url).unwrap();
    let base = doc
        .select(&Selector::parse("base[href]").unwrap())
        .next()
        .and_then(|b| b.value().attr("href"))
        .map(|h| doc_url.join(h).unwrap())
        .unwrap_or(doc_url);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for a in doc.select(&Selector::parse("a[href]").unwrap()) {
        if let Ok(u) = policy.check_relative(&base, a.value().attr("href").unwrap())
            && seen.insert(u.to_string())
        {
            out.push(u.to_string());
        }
    }
    let title = doc
        .select(&Selector::parse("title").unwrap())
        .next()
        .map(|t| t.text().collect::<String>());
    (out, title)
}

#[test]
fn sitemap_is_deterministic_and_matches_the_library() {
    let dir = tempfile::tempdir().unwrap();
    let (a, a_bytes) = sitemap_via_binary(dir.path(), "a.json", &GEN);
    let (_, b_bytes) = sitemap_via_binary(dir.path(), "b.json", &GEN);
    assert_eq!(a_bytes, b_bytes, "same flags must give the same site map");
    let (c, _) = sitemap_via_binary(
        dir.path(),
        "c.json",
        &["--seed", "8", "--hosts", "4", "--pages", "12"],
    );
    assert_ne!(a.urls, c.urls, "another seed must give another web");
    let spec = WebSpec {
        seed: 7,
        hosts: 4,
        pages_per_host: 12,
        ..WebSpec::default()
    };
    assert_eq!(a, generate(&spec).unwrap().site_map());
    assert_eq!(a.hosts.len(), 4);
    assert!(a.urls.len() > 4 * 12);
}

#[test]
fn seeds_file_lists_the_first_home_pages() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("seeds.txt");
    let st = Command::new(BIN)
        .args(["seeds", "--seed-count", "3"])
        .args(GEN)
        .arg("--out")
        .arg(&out)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "http://site0.web.test/\nhttp://site1.web.test/\nhttp://site2.web.test/\n"
    );
}

#[test]
fn served_web_matches_the_site_map_and_is_logged() {
    let dir = tempfile::tempdir().unwrap();
    let (map, _) = sitemap_via_binary(dir.path(), "map.json", &GEN);
    let server = Server::start(dir.path());
    let addr = server.addr.clone();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut expected_log = Vec::new();
    rt.block_on(async {
        let c = client();
        for (url, e) in &map.urls {
            let resp = get(&c, &addr, url).await;
            assert_eq!(resp.status().as_u16(), e.status, "{url}");
            let h = resp.headers().clone();
            assert_eq!(h[CONTENT_TYPE].to_str().unwrap(), e.content_type, "{url}");
            assert_eq!(
                h[CONTENT_LENGTH].to_str().unwrap(),
                e.body_bytes.to_string()
            );
            assert_eq!(
                h.get(LOCATION).map(|l| l.to_str().unwrap().to_string()),
                e.location,
                "{url}"
            );
            let body = resp.bytes().await.unwrap();
            assert_eq!(blake3::hash(&body).to_hex().to_string(), e.body_blake3);
            if let (Some(loc), Some(target)) = (&e.location, &e.redirect) {
                let resolved = Url::parse(url).unwrap().join(loc).unwrap();
                assert_eq!(resolved.as_str(), target);
            }
            if e.status == 200 {
                let (links, title) = parsed_outlinks(url, std::str::from_utf8(&body).unwrap());
                assert_eq!(links, e.outlinks, "outlinks of {url}");
                assert_eq!(title, e.title, "{url}");
                let html = std::str::from_utf8(&body).unwrap();
                assert_eq!(html.contains("content=\"nofollow\""), e.nofollow, "{url}");
                assert_eq!(html.contains("content=\"noindex\""), e.noindex, "{url}");
            }
            let u = Url::parse(url).unwrap();
            expected_log.push((
                u.host_str().unwrap().to_string(),
                u.path().to_string(),
                e.status,
            ));
        }
        for (host, h) in &map.hosts {
            let resp = get(&c, &addr, &format!("http://{host}/robots.txt")).await;
            assert_eq!(resp.status().as_u16(), h.robots_status, "{host}");
            let text = resp.text().await.unwrap();
            if let Some(t) = &h.robots_txt {
                assert_eq!(&text, t);
                let r = texting_robots::Robot::new("trawl", text.as_bytes()).unwrap();
                for (url, e) in map.urls.iter().filter(|(u, _)| u.contains(host.as_str())) {
                    assert_eq!(r.allowed(url), !e.disallowed, "{url}");
                }
            } else {
                assert!(
                    map.urls
                        .iter()
                        .filter(|(u, _)| u.contains(host.as_str()))
                        .all(|(_, e)| !e.disallowed)
                );
            }
            expected_log.push((host.clone(), "/robots.txt".to_string(), h.robots_status));
        }
        // Unknown host and unknown path: 404; the Host header's port is ignored.
        let r = c
            .get(format!("http://{addr}/"))
            .header(HOST, "nowhere.web.test")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 404);
        expected_log.push(("nowhere.web.test".into(), "/".into(), 404));
        let r = c
            .get(format!("http://{addr}/"))
            .header(HOST, "SITE1.web.test:8080")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        expected_log.push(("site1.web.test".into(), "/".into(), 200));
    });
    let log_path = server.log.clone();
    server.stop();
    let log = read_log(&log_path).unwrap();
    let got: Vec<(String, String, u16)> = log
        .iter()
        .map(|l| (l.host.clone(), l.path.clone(), l.status))
        .collect();
    assert_eq!(got, expected_log);
    assert!(log.windows(2).all(|w| w[0].time_ms <= w[1].time_ms));
    let first = &map.urls[&map.seeds[0]];
    let logged = log
        .iter()
        .find(|l| l.host == "site0.web.test" && l.path == "/")
        .unwrap();
    assert_eq!(logged.bytes, first.body_bytes);
}

#[test]
fn keep_alive_serves_several_requests_on_one_connection() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let mut s = TcpStream::connect(&server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    for path in ["/robots.txt", "/p1.html", "/nope"] {
        write!(s, "GET {path} HTTP/1.1\r\nHost: site0.web.test\r\n\r\n").unwrap();
        // Read the head, then exactly Content-Length body bytes.
        let mut head = Vec::new();
        let mut b = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            s.read_exact(&mut b).unwrap();
            head.push(b[0]);
        }
        let head = String::from_utf8(head).unwrap().to_ascii_lowercase();
        assert!(!head.contains("connection: close"), "{head}");
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let mut body = vec![0u8; len];
        s.read_exact(&mut body).unwrap();
        let want = if path == "/nope" { "404" } else { "200" };
        assert!(head.starts_with(&format!("http/1.1 {want}")), "{head}");
    }
    let log = server.log.clone();
    server.stop();
    assert_eq!(read_log(&log).unwrap().len(), 3);
}

#[test]
fn refuses_non_loopback_addresses() {
    let out = Command::new(BIN)
        .args(["serve", "--addr", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("loopback"));
}

#[test]
fn hostile_hosts_behave_as_the_site_map_says() {
    use testweb::model::Behavior;
    let dir = tempfile::tempdir().unwrap();
    let mut args: Vec<&str> = GEN.to_vec();
    args.push("--hostile");
    let (map, _) = sitemap_via_binary(dir.path(), "map.json", &args);
    let server = Server::start_with(dir.path(), &["--hostile"]);
    let addr = server.addr.clone();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = client();
        // Everything delivered normally matches status, headers and body exactly.
        for (url, e) in map
            .urls
            .iter()
            .filter(|(_, e)| e.behavior == Behavior::Normal)
        {
            let resp = get(&c, &addr, url).await;
            assert_eq!(resp.status().as_u16(), e.status, "{url}");
            for (k, v) in &e.headers {
                assert_eq!(resp.headers()[k.as_str()].to_str().unwrap(), v, "{url} {k}");
            }
            let body = resp.bytes().await.unwrap();
            assert_eq!(
                blake3::hash(&body).to_hex().to_string(),
                e.body_blake3,
                "{url}"
            );
        }
        let h = |p: &str| format!("http://hostile.web.test{p}");
        // The gzip bomb really is one.
        let resp = get(&c, &addr, &h("/bomb.html")).await;
        let compressed = resp.bytes().await.unwrap();
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&compressed[..]), &mut out)
            .unwrap();
        assert_eq!(out.len(), testweb::hostile::BOMB_BYTES);
        assert!(compressed.len() * 100 < out.len());
        // Reset: no response at all.
        let u = Url::parse(&h("/reset")).unwrap();
        let err = c
            .get(format!("http://{addr}{}", u.path()))
            .header(HOST, "hostile.web.test")
            .send()
            .await;
        assert!(err.is_err());
        // Conditional requests.
        let cond = format!("http://{addr}/cond.html");
        let r = c
            .get(&cond)
            .header(HOST, "hostile.web.test")
            .header("if-none-match", testweb::hostile::ETAG)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 304);
        let r = c
            .get(&cond)
            .header(HOST, "hostile.web.test")
            .header("if-modified-since", "Mon, 02 Jan 2023 03:04:05 GMT")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 304);
        let r = c
            .get(&cond)
            .header(HOST, "hostile.web.test")
            .header("if-modified-since", "Sun, 01 Jan 2023 00:00:00 GMT")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        // Endless body: the head and some bytes come, the end never does.
        let mut r = get(&c, &addr, &h("/endless.html")).await;
        assert_eq!(r.status().as_u16(), 200);
        let first = r.chunk().await.unwrap().unwrap();
        assert!(!first.is_empty());
        let more = tokio::time::timeout(Duration::from_millis(700), async {
            let mut n = 0;
            while let Ok(Some(_)) = r.chunk().await {
                n += 1;
            }
            n
        })
        .await;
        assert!(more.is_err(), "the endless body ended");
        // Delay before the head: nothing within 1 s.
        let slow =
            tokio::time::timeout(Duration::from_secs(1), get(&c, &addr, &h("/slow.html"))).await;
        assert!(slow.is_err());
        // robots.txt variants.
        for (host, e) in &map.hosts {
            let r = get(&c, &addr, &format!("http://{host}/robots.txt")).await;
            assert_eq!(r.status().as_u16(), e.robots_status, "{host}");
            if let Some(to) = &e.robots_moved_to {
                assert_eq!(r.headers()[LOCATION].to_str().unwrap(), to);
                let r = get(&c, &addr, &format!("http://{host}{to}")).await;
                assert_eq!(&r.text().await.unwrap(), e.robots_txt.as_ref().unwrap());
            }
        }
    });
    server.stop();
}

#[test]
fn later_generations_are_served_as_their_site_map_says() {
    let dir = tempfile::tempdir().unwrap();
    let mut args: Vec<&str> = GEN.to_vec();
    args.extend(["--generation", "3"]);
    let (map, _) = sitemap_via_binary(dir.path(), "map3.json", &args);
    let (map0, _) = sitemap_via_binary(dir.path(), "map0.json", &GEN);
    assert_ne!(map.urls, map0.urls);
    let server = Server::start_with(dir.path(), &["--generation", "3"]);
    let addr = server.addr.clone();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = client();
        for (url, e) in &map.urls {
            let resp = get(&c, &addr, url).await;
            assert_eq!(resp.status().as_u16(), e.status, "{url}");
            let body = resp.bytes().await.unwrap();
            assert_eq!(
                blake3::hash(&body).to_hex().to_string(),
                e.body_blake3,
                "{url}"
            );
        }
    });
    server.stop();
}

/// `--tls`: the CA is written to `--ca-out` before the address file, every host of the
/// web (regular, hostile, sitemap) answers over HTTPS with a certificate for its own
/// name that verifies against that CA alone, plain HTTP still works on the same address,
/// and the log flags TLS requests and numbers connections.
#[test]
fn tls_serves_every_host_with_a_certificate_for_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let extra = ["--hostile", "--sitemaps"];
    let mut gen_args: Vec<&str> = GEN.to_vec();
    gen_args.extend(extra);
    let (map, _) = sitemap_via_binary(dir.path(), "map.json", &gen_args);
    let ca = dir.path().join("ca.pem");
    let ca_arg = ca.to_str().unwrap().to_string();
    let server = Server::start_with(
        dir.path(),
        &["--hostile", "--sitemaps", "--tls", "--ca-out", &ca_arg],
    );
    let pem = std::fs::read(&ca).expect("--ca-out written before --addr-file");
    let addr: std::net::SocketAddr = server.addr.parse().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let hosts: Vec<&String> = map.hosts.keys().collect();
    assert!(hosts.len() >= 10, "{hosts:?}");
    rt.block_on(async {
        trawl::tls::install_provider();
        let mut b = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_gzip()
            .no_proxy()
            .tls_certs_only([reqwest::Certificate::from_pem(&pem).unwrap()]);
        for h in &hosts {
            b = b.resolve(h, addr);
        }
        let c = b.build().unwrap();
        for h in &hosts {
            let e = &map.urls[&format!("http://{h}/")];
            for scheme in ["https", "http"] {
                let url = format!("{scheme}://{h}:{}/", addr.port());
                let resp = c
                    .get(&url)
                    .send()
                    .await
                    .unwrap_or_else(|e| panic!("{url}: {e:?}"));
                assert_eq!(resp.status().as_u16(), e.status, "{url}");
                let body = resp.bytes().await.unwrap();
                assert_eq!(
                    blake3::hash(&body).to_hex().to_string(),
                    e.body_blake3,
                    "{url}"
                );
            }
        }
    });
    let log_path = server.log.clone();
    server.stop();
    let log = read_log(&log_path).unwrap();
    assert_eq!(log.len(), 2 * hosts.len());
    for h in &hosts {
        let mine: Vec<_> = log.iter().filter(|l| &&l.host == h).collect();
        let tls: Vec<bool> = mine.iter().map(|l| l.tls).collect();
        assert_eq!(tls, [true, false], "{h}");
        assert_ne!(mine[0].conn, mine[1].conn, "{h}: one connection per origin");
    }
    // Connections are numbered from 1, in accept order.
    assert!(log.iter().all(|l| l.conn >= 1));
    // --ca-out without --tls is refused.
    let out = Command::new(BIN)
        .args(["serve", "--ca-out"])
        .arg(dir.path().join("x.pem"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tls"));
}
