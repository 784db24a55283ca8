//! Scoring (OPIC, Nutch's default): a fetched page shares its score among its
//! outlinks (parse computes the shares and stores them on `crawl_parse` link rows);
//! updatedb adds the shares a URL receives to its score. A new URL starts with the
//! sum of the shares of its inlinks in the segment; a known URL keeps its score plus
//! the shares. Applying a segment once only (`applied_segments`) keeps scores from
//! being counted twice. `pagerank` may later replace scores wholesale.

/// Score of a URL first seen through links carrying `contributions`.
pub fn new_url_score(contributions: impl IntoIterator<Item = f64>) -> f64 {
    contributions.into_iter().filter(|c| c.is_finite()).sum()
}

/// Score of a known URL with `old` score after receiving `contributions`.
pub fn known_url_score(old: f64, contributions: impl IntoIterator<Item = f64>) -> f64 {
    old + new_url_score(contributions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opic_accumulates() {
        assert_eq!(new_url_score([0.25, 0.5]), 0.75);
        assert_eq!(new_url_score([]), 0.0);
        assert_eq!(known_url_score(1.0, [0.5, f64::NAN]), 1.5);
    }
}
