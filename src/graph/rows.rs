//! Row types of the datasets written beside `pagerank/`: HITS scores
//! (`pagerank/hits/`) and HostRank (`pagerank/hosts/`), and `pagerank/_meta.json`.

use std::sync::{Arc, OnceLock};

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use serde::{Deserialize, Serialize};

use crate::store::parquet::Record;

/// One row of `pagerank/hits/`: a page's HITS scores (each vector sums to 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HitsRecord {
    /// The page.
    pub url: String,
    /// Hub score: how good the pages it links to are as authorities.
    pub hub: f64,
    /// Authority score: how good the hubs linking to it are.
    pub authority: f64,
}

impl Record for HitsRecord {
    fn schema() -> SchemaRef {
        static S: OnceLock<SchemaRef> = OnceLock::new();
        S.get_or_init(|| {
            Arc::new(Schema::new(vec![
                Field::new("url", DataType::Utf8, false),
                Field::new("hub", DataType::Float64, false),
                Field::new("authority", DataType::Float64, false),
            ]))
        })
        .clone()
    }
}

/// One row of `pagerank/hosts/`: PageRank of the host graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostRankRecord {
    /// The host.
    pub host: String,
    /// Its HostRank (scores sum to 1).
    pub score: f64,
    /// Distinct other hosts linking to it.
    pub in_degree: i64,
    /// Distinct other hosts it links to.
    pub out_degree: i64,
}

impl Record for HostRankRecord {
    fn schema() -> SchemaRef {
        static S: OnceLock<SchemaRef> = OnceLock::new();
        S.get_or_init(|| {
            Arc::new(Schema::new(vec![
                Field::new("host", DataType::Utf8, false),
                Field::new("score", DataType::Float64, false),
                Field::new("in_degree", DataType::Int64, false),
                Field::new("out_degree", DataType::Int64, false),
            ]))
        })
        .clone()
    }
}

/// `pagerank/_meta.json`: how the scores were computed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PageRankMeta {
    /// `crawl` or `linkdb`.
    pub source: String,
    /// Damping factor.
    pub damping: f64,
    /// `uniform` or `seeds`.
    pub teleport: String,
    /// Pages (nodes).
    pub nodes: u64,
    /// Distinct links (edges), self-links included.
    pub edges: u64,
    /// Iterations run.
    pub iterations: usize,
    /// L1 change of the last iteration.
    pub delta: f64,
    /// Partitions (part files), by host (or registrable domain: `partition_key`) like
    /// the crawldb.
    pub partitions: usize,
    /// What the partitions group URLs by (the crawl's `partition_key`); `host` in
    /// `pagerank/` written before the key existed.
    #[serde(default)]
    pub partition_key: crate::store::partition::PartitionKey,
    /// Whether `hits/` was written.
    pub hits: bool,
    /// Whether `hosts/` was written.
    pub hostrank: bool,
    /// Whether links within a host were left out of the graph.
    #[serde(default)]
    pub ignore_internal: bool,
    /// Whether a site's template links were left out of the graph.
    #[serde(default)]
    pub ignore_template: bool,
    /// The factor from a page's PageRank (`score` here, summing to 1) to its crawldb
    /// score: the number of nodes, so crawldb scores average 1.0 over the graph.
    #[serde(default)]
    pub crawldb_scale: f64,
    /// When it was written (ms UTC).
    pub written_time: i64,
}
