//! Throughput of the test web server: requests per second over keep-alive
//! connections on loopback. Prints figures; asserts nothing about speed.
//!
//! `cargo bench -p trawl-testweb --bench testweb_serve` (release) or, quicker,
//! `cargo test --release -p trawl-testweb --bench testweb_serve`. Env: `TESTWEB_BENCH_CONNS` (default 32),
//! `TESTWEB_BENCH_SECS` (default 3).

use std::time::{Duration, Instant};

use testweb::{RunningServer, WebSpec, generate};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One keep-alive connection issuing GETs back to back until `deadline`.
async fn client(addr: std::net::SocketAddr, paths: Vec<String>, deadline: Instant) -> (u64, u64) {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.set_nodelay(true).expect("nodelay");
    let mut buf = vec![0u8; 1 << 16];
    let (mut n, mut bytes) = (0u64, 0u64);
    let mut i = 0;
    while Instant::now() < deadline {
        let req = format!(
            "GET {} HTTP/1.1\r\nHost: site0.web.test\r\n\r\n",
            paths[i % paths.len()]
        );
        i += 1;
        s.write_all(req.as_bytes()).await.expect("write");
        // Read the head, find Content-Length, then the body.
        let mut have = 0;
        let (head_end, len) = loop {
            let r = s.read(&mut buf[have..]).await.expect("read");
            assert!(r > 0, "server closed the connection");
            have += r;
            if let Some(p) = buf[..have].windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..p]).to_ascii_lowercase();
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .and_then(|v| v.trim().parse().ok())
                    .expect("content-length");
                break (p + 4, len);
            }
        };
        let mut got = have - head_end;
        while got < len {
            let r = s.read(&mut buf).await.expect("read body");
            assert!(r > 0);
            got += r;
        }
        n += 1;
        bytes += len as u64;
    }
    (n, bytes)
}

fn main() {
    let conns = env_or("TESTWEB_BENCH_CONNS", 32);
    let secs = env_or("TESTWEB_BENCH_SECS", 3);
    let web = generate(&WebSpec::default()).expect("generate");
    let log = std::env::temp_dir().join(format!("testweb-bench-{}.jsonl", std::process::id()));
    let server = RunningServer::start(&web, "127.0.0.1:0".parse().expect("addr"), Some(&log))
        .expect("start server");
    let addr = server.addr();
    let paths: Vec<String> = web.hosts[0]
        .resources
        .values()
        .filter(|r| r.status == 200)
        .map(|r| r.path.clone())
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);
    let (n, bytes) = rt.block_on(async {
        let tasks: Vec<_> = (0..conns)
            .map(|_| tokio::spawn(client(addr, paths.clone(), deadline)))
            .collect();
        let mut total = (0, 0);
        for t in tasks {
            let (n, b) = t.await.expect("client task");
            total.0 += n;
            total.1 += b;
        }
        total
    });
    let elapsed = started.elapsed().as_secs_f64();
    let served = server.stop().expect("stop");
    let logged = std::fs::read_to_string(&log)
        .map(|s| s.lines().count())
        .unwrap_or(0);
    let _ = std::fs::remove_file(&log);
    println!(
        "testweb serve: {n} requests over {conns} keep-alive connections in {elapsed:.2}s = {:.0} req/s, {:.1} MB/s body (server counted {served}, log lines {logged})",
        n as f64 / elapsed,
        bytes as f64 / elapsed / 1e6
    );
}
