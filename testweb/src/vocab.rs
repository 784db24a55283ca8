//! The fixed vocabulary pages are written in, and the text helpers built on it.

use super::rng::{Rng, Zipf};

/// The words page text is drawn from (lower-case ASCII, no markup characters).
pub const WORDS: &[&str] = &[
    "river", "stone", "garden", "winter", "copper", "signal", "harbor", "lantern", "meadow",
    "engine", "forest", "marble", "orbit", "pepper", "quiet", "rocket", "saddle", "timber",
    "velvet", "willow", "amber", "basket", "candle", "desert", "ember", "falcon", "glacier",
    "hollow", "island", "jungle", "kettle", "ladder", "mirror", "needle", "oyster", "pebble",
    "quarry", "ribbon", "silver", "thunder", "umbrella", "valley", "walnut", "yonder", "zephyr",
    "anchor", "bridge", "canyon", "dolphin", "echo", "feather", "granite", "horizon", "ivory",
    "jasmine", "kernel", "lemon", "mountain", "nectar", "olive", "prairie", "quill", "raven",
    "summit", "tulip", "urchin", "violet", "wander", "yarrow", "zenith", "archive", "beacon",
    "cobalt", "dune", "estuary", "fjord", "grove", "heron", "inlet", "juniper", "kelp", "lagoon",
    "mesa", "nimbus", "obsidian", "pine", "quartz", "reef", "sparrow", "tundra", "upland",
    "vortex", "wharf", "crawler", "index", "segment", "fetch", "parse", "rank", "link", "anchor",
    "page", "host", "query", "crystal", "ocean", "planet", "comet", "meteor", "nebula", "galaxy",
    "cloud", "storm", "breeze", "shadow", "light", "spark", "flame", "frost",
];

/// Draws `n` words with a Zipf-skewed frequency (a few words are common, like real text).
pub fn words(rng: &mut Rng, zipf: &Zipf, n: usize) -> Vec<&'static str> {
    (0..n).map(|_| WORDS[zipf.sample(rng)]).collect()
}

/// A capitalized phrase of `n` words.
pub fn phrase(rng: &mut Rng, zipf: &Zipf, n: usize) -> String {
    let w = words(rng, zipf, n);
    let mut s = w.join(" ");
    if let Some(first) = s.get(..1) {
        let up = first.to_ascii_uppercase();
        s.replace_range(..1, &up);
    }
    s
}

/// The Zipf distribution over the vocabulary used for text.
pub fn text_zipf() -> Zipf {
    Zipf::new(WORDS.len(), 0.9)
}
