//! The local test web: a deterministic synthetic web on loopback that everything
//! trawl crawls in tests, demos and benchmarks.
//!
//! [`WebSpec`] -> [`generate`] -> [`Web`] (hosts `site{i}.web.test`, pages, links,
//! robots.txt, redirects, copies, 404s); [`Web::site_map`] gives the exact truth
//! tests compare against ([`SiteMap`], with [`SiteMap::reachable`]); [`server`]
//! serves the web over HTTP/1.1 on a loopback address, routing on the `Host` header
//! (and, with a throw-away CA from [`tls`], HTTPS on the same address), and logs
//! every request as a JSON line. [`statichost`] serves directory trees as more
//! hosts (`testweb serve --static HOST=DIR`: a real site, such as the Rust book the
//! toolchain ships, on loopback).
//!
//! This crate (`trawl-testweb`, a workspace member) depends on trawl, never the
//! reverse (trawl's tests take it as a dev-dependency): the site map is the truth of
//! what a crawl must find, and every link in it is what trawl's own URL policy
//! ([`trawl::urls::UrlPolicy`], default configuration) makes of the page's `href`, so
//! the test web uses that policy instead of a second normalizer that could drift. It
//! also reports errors as [`trawl::Error`] and writes files with
//! [`trawl::store::parquet`]'s atomic helpers.

pub mod documents;
pub mod generate;
pub mod hostile;
pub mod html;
pub mod links;
pub mod log;
pub mod model;
pub mod office;
pub mod rng;
pub mod robots;
pub mod scripted;
pub mod server;
pub mod sitemap;
pub mod spec;
pub mod statichost;
pub mod tls;
pub mod vocab;
pub mod xmlsitemaps;

pub use generate::generate;
pub use log::{LogLine, RequestLog, min_gap_per_host, read_log, requested_urls};
pub use model::{Host, Kind, Resource, Web};
pub use robots::{CRAWLER_AGENT, Robots, RobotsGroup};
pub use server::{RunningServer, Site, serve, serve_with_tls};
pub use sitemap::{HostEntry, SiteMap, UrlEntry};
pub use spec::{DOMAIN, RESOLVE_PATTERN, WebSpec};
pub use statichost::StaticHost;
pub use tls::{TestCa, UNTRUSTED_HOST};
