//! Talking to web servers politely: the one owner of "how an HTTP request is made".
//!
//! - [`browser`]: headless Chromium over the DevTools protocol (`[fetch.render]`);
//! - [`client`]: the HTTP client (`reqwest` configured from `[fetch]`: timeouts, TLS,
//!   size caps, the User-Agent), [`resolve`]: name lookups (`fetch.resolve`, counted);
//! - [`robots`]: robots.txt (parsing, fetching, the segment's `robots` record) and
//!   [`robots_cache`]: robots.txt kept across runs (`robots_cache.json`);
//! - [`hostpattern`]: per-host settings by pattern (`fetch.delays`, `fetch.resolve`);
//! - [`politeness`]: the per-host delay and the distance kept to the last run's end
//!   (`fetch.last_end`);
//! - [`outcome`]: how a request's failure is named (the reason taxonomy);
//! - [`runtime`]: the async runtime and the bounded task pool requests run on.
//!
//! The `fetch` stage and the `sitemap` stage both use this module; it imports neither.

pub mod browser;
pub mod client;
pub(crate) mod hostpattern;
pub mod outcome;
pub mod politeness;
pub mod resolve;
pub mod robots;
pub mod robots_cache;
pub mod runtime;
