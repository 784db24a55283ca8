//! The one way a row finds its partition: [`Partitioner`], a crawl's partition count
//! and key (`crawl.partitions`, `crawl.partition_key`), both recorded in the
//! crawldb's and every segment's `_meta.json` when they are written.
//!
//! The key is a host (`host`) or the host's registrable domain (`domain`, Nutch's
//! `partition.url.mode = byDomain`): with `domain`, every host of a domain is in one
//! partition, so a fetch task owning that partition owns the domain's politeness
//! queue (`fetch.queue_mode = "domain"`). The partition of a key is the first 8 bytes
//! of its blake3, little-endian, modulo the count: stable across runs and versions.

use serde::{Deserialize, Serialize};

pub use crate::config::PartitionKey;
use crate::error::{Error, Result};

/// A crawl's partitioning: how many partitions, and what they group URLs by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partitioner {
    n: usize,
    key: PartitionKey,
}

impl Partitioner {
    /// `n` partitions (at least 1) keyed by `key`.
    pub fn new(n: usize, key: PartitionKey) -> Self {
        Partitioner { n: n.max(1), key }
    }

    /// `n` partitions keyed by host.
    pub fn by_host(n: usize) -> Self {
        Self::new(n, PartitionKey::Host)
    }

    /// The number of partitions.
    pub fn n(&self) -> usize {
        self.n
    }

    /// What the partitions group URLs by.
    pub fn key(&self) -> PartitionKey {
        self.key
    }

    /// The partition of the rows of `host` (lowercase, as URLs are normalized).
    pub fn of_host(&self, host: &str) -> usize {
        match self.key {
            PartitionKey::Host => hash_mod(host, self.n),
            PartitionKey::Domain => hash_mod(&crate::urls::registrable_domain(host), self.n),
        }
    }

    /// The partition of the rows of `url` (by its host; `""` when it has none).
    pub fn of_url(&self, url: &str) -> usize {
        self.of_host(&crate::urls::host_of(url))
    }
}

impl std::fmt::Display for Partitioner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} partitions by {}", self.n, self.key)
    }
}

/// Refuses a configuration whose `crawl.partition_key` (`wanted`) differs from the
/// crawl's (`crawl`, recorded in the `_meta.json` at `place`).
pub fn check_key(place: &std::path::Path, crawl: PartitionKey, wanted: PartitionKey) -> Result<()> {
    if crawl == wanted {
        return Ok(());
    }
    Err(Error::crawl_dir(
        place,
        format!(
            "the crawl is partitioned by {crawl} (partition_key = \"{crawl}\" in its _meta.json) but the configuration asks for crawl.partition_key = \"{wanted}\": set partition_key = \"{crawl}\" in [crawl], or change the crawl's key with `repartition --partition-key {wanted}`"
        ),
    ))
}

/// The first 8 bytes of blake3 of `key`, modulo `n`.
fn hash_mod(key: &str, n: usize) -> usize {
    bucket_of(key.as_bytes(), n)
}

/// The bucket (of `n`) of a shuffle by content rather than by host (dedup routes a
/// candidate by its signature and its SimHash blocks): the first 8 bytes of blake3
/// of `key`, modulo `n`, the hash rows are partitioned with.
pub fn bucket_of(key: &[u8], n: usize) -> usize {
    let h = blake3::hash(key);
    let mut b = [0u8; 8];
    b.copy_from_slice(&h.as_bytes()[..8]);
    (u64::from_le_bytes(b) % n.max(1) as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_key_is_the_old_function() {
        // The values every crawl written before the key existed was partitioned with.
        let p = Partitioner::by_host(8);
        let h = blake3::hash(b"site0.web.test");
        let mut b = [0u8; 8];
        b.copy_from_slice(&h.as_bytes()[..8]);
        assert_eq!(
            p.of_host("site0.web.test"),
            (u64::from_le_bytes(b) % 8) as usize
        );
        assert_eq!(
            p.of_url("http://site0.web.test/p1.html"),
            p.of_host("site0.web.test")
        );
    }

    #[test]
    fn domain_key_groups_a_domain() {
        let p = Partitioner::new(64, PartitionKey::Domain);
        let d = p.of_host("example.co.uk");
        assert_eq!(p.of_host("www.example.co.uk"), d);
        assert_eq!(p.of_host("a.b.example.co.uk"), d);
        assert_eq!(p.of_url("https://shop.example.co.uk:8443/x"), d);
        assert_eq!(d, Partitioner::by_host(64).of_host("example.co.uk"));
        // An IP literal is its own key (not "0.1").
        assert_eq!(
            p.of_host("127.0.0.1"),
            Partitioner::by_host(64).of_host("127.0.0.1")
        );
        assert_eq!(
            p.of_host("[::1]"),
            Partitioner::by_host(64).of_host("[::1]")
        );
    }

    #[test]
    fn mismatch_names_both_keys() {
        let e = check_key(
            std::path::Path::new("crawl/crawldb"),
            PartitionKey::Host,
            PartitionKey::Domain,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("partitioned by host"), "{e}");
        assert!(e.contains("partition_key = \"domain\""), "{e}");
        assert!(e.contains("repartition --partition-key domain"), "{e}");
        assert!(
            check_key(
                std::path::Path::new("x"),
                PartitionKey::Domain,
                PartitionKey::Domain
            )
            .is_ok()
        );
    }
}
