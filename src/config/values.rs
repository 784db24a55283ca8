//! The keys with a closed set of values, as typed enums.
//!
//! Each enum is written once, by `config_enum!`: its variants and their spellings in
//! the file. The same spellings give serde's names, [`as_str`](UrlScope::as_str),
//! `Display` and the `NAMES` the validation rules accept (see `rules.rs`), so the file,
//! the messages and the code cannot drift apart.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Declares a configuration enum: `Variant = "spelling"`, the default marked
/// `#[default]`. Gives serde's names, `NAMES`, `as_str` and `Display`.
macro_rules! config_enum {
    (
        $(#[$meta:meta])*
        $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $spelling:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $spelling)] $variant, )+
        }

        impl $name {
            /// Every value as the file spells it, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($spelling),+];

            /// The value as the file spells it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $spelling, )+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

config_enum! {
    /// `urls.scope`: which hosts inject, parse and updatedb keep URLs of.
    UrlScope {
        /// Every host.
        #[default]
        Any = "any",
        /// Only the seeds' hosts.
        Host = "host",
        /// The seeds' registrable domains.
        Domain = "domain",
    }
}

config_enum! {
    /// `generate.count_mode`: what `generate.max_per_host` counts.
    CountMode {
        /// URLs per host name.
        #[default]
        Host = "host",
        /// URLs per registrable domain (public suffix list).
        Domain = "domain",
    }
}

config_enum! {
    /// `fetch.queue_mode`: what one politeness queue is.
    QueueMode {
        /// One queue per host name.
        #[default]
        Host = "host",
        /// One queue per registrable domain (public suffix list).
        Domain = "domain",
        /// One queue per resolved IP address.
        Ip = "ip",
    }
}

config_enum! {
    /// `crawl.partition_key`: what a crawl's partitions group URLs by (Nutch's
    /// `partition.url.mode`); fixed when the crawldb is created.
    PartitionKey {
        /// By host name.
        #[default]
        Host = "host",
        /// By registrable domain (public suffix list); an IP-literal host, or a host
        /// without a registrable domain, is its own key.
        Domain = "domain",
    }
}

config_enum! {
    /// `updatedb.schedule`: which fetch schedule updatedb applies.
    Schedule {
        /// Fixed interval.
        #[default]
        Default = "default",
        /// Adaptive interval.
        Adaptive = "adaptive",
    }
}

config_enum! {
    /// `pagerank.source`: where the link graph comes from.
    GraphSource {
        /// Every segment's outlinks (all links).
        #[default]
        Crawl = "crawl",
        /// The linkdb.
        Linkdb = "linkdb",
    }
}

config_enum! {
    /// `pagerank.teleport`: where a random jump lands.
    Teleport {
        /// On every page.
        #[default]
        Uniform = "uniform",
        /// On the depth-0 crawldb URLs and the seed hosts' home pages in the graph.
        Seeds = "seeds",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// serde reads and writes exactly the spellings of `NAMES`, `as_str` and `Display`.
    fn spelled_alike<T>(all: &[T])
    where
        T: Copy + fmt::Display + PartialEq + fmt::Debug + Serialize + for<'a> Deserialize<'a>,
    {
        #[derive(Serialize, Deserialize)]
        struct One<T> {
            v: T,
        }
        let names: Vec<String> = all.iter().map(T::to_string).collect();
        for (v, name) in all.iter().zip(&names) {
            let text = toml::to_string(&One { v: *v }).unwrap();
            assert_eq!(text.trim(), format!("v = \"{name}\""));
            let back: One<T> = toml::from_str(&text).unwrap();
            assert_eq!(back.v, *v);
        }
        assert!(toml::from_str::<One<T>>("v = \"nope\"").is_err());
    }

    #[test]
    fn every_enum_spells_its_values_alike() {
        use GraphSource as G;
        spelled_alike(&[UrlScope::Any, UrlScope::Host, UrlScope::Domain]);
        assert_eq!(UrlScope::NAMES, ["any", "host", "domain"]);
        spelled_alike(&[CountMode::Host, CountMode::Domain]);
        assert_eq!(CountMode::NAMES, ["host", "domain"]);
        spelled_alike(&[QueueMode::Host, QueueMode::Domain, QueueMode::Ip]);
        assert_eq!(QueueMode::NAMES, ["host", "domain", "ip"]);
        spelled_alike(&[PartitionKey::Host, PartitionKey::Domain]);
        assert_eq!(PartitionKey::NAMES, ["host", "domain"]);
        spelled_alike(&[Schedule::Default, Schedule::Adaptive]);
        assert_eq!(Schedule::NAMES, ["default", "adaptive"]);
        spelled_alike(&[G::Crawl, G::Linkdb]);
        assert_eq!(G::NAMES, ["crawl", "linkdb"]);
        spelled_alike(&[Teleport::Uniform, Teleport::Seeds]);
        assert_eq!(Teleport::NAMES, ["uniform", "seeds"]);
    }
}
