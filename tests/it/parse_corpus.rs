//! The parser against the shared corpus of real saved pages: main-text quality
//! versus readability's expected output, and links versus html5lib + ada-url.

use crate::common;
use trawl_bench::corpus::{self, CorpusReport};

fn run() -> Option<(CorpusReport, Vec<corpus::PageScore>)> {
    let Some(dir) = corpus::corpora_dir() else {
        common::missing(
            "the shared corpora",
            "not found at $TRAWL_CORPORA, ../shared/corpora or /work/shared/corpora",
        );
        return None;
    };
    let pages = corpus::load_pages(&dir).unwrap();
    if pages.is_empty() {
        common::missing(
            "the shared corpora",
            &format!("no pages under {}/pages", dir.display()),
        );
        return None;
    }
    common::ran_with("corpora");
    let scores: Vec<_> = pages.iter().map(corpus::evaluate_page).collect();
    Some((corpus::report(&scores), scores))
}

#[test]
fn corpus_main_text_links_and_titles() {
    let Some((r, scores)) = run() else { return };
    let mut worst: Vec<_> = scores.iter().collect();
    worst.sort_by(|a, b| a.prf.2.total_cmp(&b.prf.2));
    for s in worst.iter().take(8) {
        eprintln!(
            "  low main-text F1 {:.3} (P {:.3} R {:.3}) {}",
            s.prf.2, s.prf.0, s.prf.1, s.name
        );
    }
    let mut worst_links: Vec<_> = scores.iter().collect();
    worst_links.sort_by(|a, b| a.link_f1.total_cmp(&b.link_f1));
    for s in worst_links.iter().take(5) {
        eprintln!("  low link F1 {:.3} {}", s.link_f1, s.name);
    }
    eprintln!(
        "corpus: {} pages; main text P {:.3} R {:.3} F1 {:.3}; links F1 {:.3}; titles {:.3}",
        r.pages, r.precision, r.recall, r.f1, r.link_f1, r.title_match
    );
    assert!(
        r.pages >= 100,
        "expected the 114-page corpus, got {}",
        r.pages
    );
    // Measured: main text P 0.985 R 0.941 F1 0.953; links F1 0.999; titles 0.974.
    assert!(
        r.f1 >= 0.92,
        "mean main-text F1 {:.3} fell below 0.92",
        r.f1
    );
    assert!(
        r.link_f1 >= 0.98,
        "mean link F1 {:.3} fell below 0.98",
        r.link_f1
    );
    assert!(
        r.title_match >= 0.95,
        "title agreement {:.3} fell below 0.95",
        r.title_match
    );
}
