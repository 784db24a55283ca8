//! trawl's integration tests, one test binary (`cargo test --test it`): each module
//! drives the real `trawl` executable (and its stage links) against the local test web
//! or the real component it names. One binary links the library once, where one per
//! file linked it thirty times.

mod common;

mod architecture;
mod cluster;
mod crawl;
mod crawldb;
mod dedup;
mod disk;
mod documents;
mod faults;
mod fetch;
mod fetch_queues;
mod generations;
mod graph;
mod graph_reference;
mod hostile;
mod https;
mod object_store;
mod parse;
mod parse_corpus;
mod relevance;
mod render;
mod repartition;
mod robustness;
mod round;
mod search;
mod search_web;
mod segments;
mod sitemaps;
mod tasks_crawldb;
mod tasks_hostdb;
mod tasks_index;
mod tasks_segments;
mod tasks_sitewarc;
mod tools;
mod warc;
