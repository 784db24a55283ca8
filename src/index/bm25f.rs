//! BM25F: one BM25 over several fields scored as if they were one (the weighted
//! term frequencies and lengths of the fields are summed before BM25's saturation),
//! as Lucene's `CombinedFieldQuery` does.
//!
//! For a term `t`, fields `f` with weights `w_f`, a document `d`:
//!
//! ```text
//! tf(d)   = Σ_f w_f · tf_f(t, d)
//! len(d)  = Σ_f w_f · len_f(d)           (tantivy's field norms)
//! avglen  = Σ_f w_f · avglen_f
//! idf     = ln(1 + (N - df + 0.5) / (df + 0.5)),  df = max_f df_f(t)
//! score   = idf · (k1 + 1) · tf / (tf + k1 · (1 - b + b · len / avglen))
//! ```
//!
//! With every weight 1 this is BM25 over the fields' concatenation (the document
//! frequency is the largest field's, as in Lucene: the union is not stored). Unlike
//! a sum of per-field BM25 scores, a term repeated in several fields saturates once,
//! and a short field does not earn a field-length bonus of its own.

use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::{Postings, SegmentPostings};
use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED, Term};

/// BM25's term-frequency saturation.
const K1: f32 = 1.2;
/// BM25's length normalisation.
const B: f32 = 0.75;

/// One query term searched in several fields as one (see the module doc).
#[derive(Debug, Clone)]
pub struct CombinedTermQuery {
    /// The term in each field, with the field's weight (> 0).
    terms: Vec<(Term, f32)>,
}

impl CombinedTermQuery {
    /// The term `text` (already analyzed) in `fields`; fields with a weight of 0 or
    /// less are left out.
    pub fn new(text: &str, fields: &[(Field, f32)]) -> CombinedTermQuery {
        CombinedTermQuery {
            terms: fields
                .iter()
                .filter(|(_, w)| *w > 0.0)
                .map(|(f, w)| (Term::from_field_text(*f, text), *w))
                .collect(),
        }
    }

    /// The searched fields' terms and weights.
    pub fn terms(&self) -> &[(Term, f32)] {
        &self.terms
    }
}

impl Query for CombinedTermQuery {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let stats = match scoring {
            EnableScoring::Enabled {
                statistics_provider,
                ..
            } => {
                let n = statistics_provider.total_num_docs()?.max(1);
                let mut df = 0u64;
                let mut avglen = 0f32;
                for (term, w) in &self.terms {
                    df = df.max(statistics_provider.doc_freq(term)?);
                    let tokens = statistics_provider.total_num_tokens(term.field())?;
                    avglen += w * tokens as f32 / n as f32;
                }
                let idf = (1.0 + (n as f32 - df as f32 + 0.5) / (df as f32 + 0.5)).ln();
                Some(Stats {
                    idf,
                    avglen: avglen.max(f32::EPSILON),
                })
            }
            EnableScoring::Disabled { .. } => None,
        };
        Ok(Box::new(CombinedWeight {
            terms: self.terms.clone(),
            stats,
        }))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        for (t, _) in &self.terms {
            visitor(t, false);
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Stats {
    idf: f32,
    avglen: f32,
}

struct CombinedWeight {
    terms: Vec<(Term, f32)>,
    stats: Option<Stats>,
}

impl CombinedWeight {
    fn combined_scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Combined> {
        let mut parts = Vec::with_capacity(self.terms.len());
        let mut norms = Vec::with_capacity(self.terms.len());
        for (term, w) in &self.terms {
            if self.stats.is_some() {
                norms.push((reader.get_fieldnorms_reader(term.field())?, *w));
            }
            let option = if self.stats.is_some() {
                IndexRecordOption::WithFreqs
            } else {
                IndexRecordOption::Basic
            };
            if let Some(p) = reader
                .inverted_index(term.field())?
                .read_postings(term, option)?
            {
                parts.push((p, *w));
            }
        }
        Ok(Combined::new(parts, norms, self.stats, boost))
    }
}

impl Weight for CombinedWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(Box::new(self.combined_scorer(reader, boost)?))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut s = self.combined_scorer(reader, 1.0)?;
        if s.seek(doc) != doc {
            return Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )));
        }
        let mut e = Explanation::new("BM25F", s.score());
        for (t, w) in &self.terms {
            e.add_context(format!("{t:?} weight {w}"));
        }
        Ok(e)
    }
}

/// The union of a term's postings in the fields, scored by BM25F.
struct Combined {
    parts: Vec<(SegmentPostings, f32)>,
    norms: Vec<(FieldNormReader, f32)>,
    stats: Option<Stats>,
    boost: Score,
    doc: DocId,
}

impl Combined {
    fn new(
        parts: Vec<(SegmentPostings, f32)>,
        norms: Vec<(FieldNormReader, f32)>,
        stats: Option<Stats>,
        boost: Score,
    ) -> Combined {
        let doc = parts
            .iter()
            .map(|(p, _)| p.doc())
            .min()
            .unwrap_or(TERMINATED);
        Combined {
            parts,
            norms,
            stats,
            boost,
            doc,
        }
    }

    fn min_doc(&self) -> DocId {
        self.parts
            .iter()
            .map(|(p, _)| p.doc())
            .min()
            .unwrap_or(TERMINATED)
    }
}

impl DocSet for Combined {
    fn advance(&mut self) -> DocId {
        let at = self.doc;
        if at == TERMINATED {
            return at;
        }
        for (p, _) in &mut self.parts {
            if p.doc() == at {
                p.advance();
            }
        }
        self.doc = self.min_doc();
        self.doc
    }

    fn seek(&mut self, target: DocId) -> DocId {
        if self.doc >= target {
            return self.doc;
        }
        for (p, _) in &mut self.parts {
            if p.doc() < target {
                p.seek(target);
            }
        }
        self.doc = self.min_doc();
        self.doc
    }

    fn doc(&self) -> DocId {
        self.doc
    }

    fn size_hint(&self) -> u32 {
        self.parts
            .iter()
            .map(|(p, _)| p.size_hint())
            .max()
            .unwrap_or(0)
    }
}

impl Scorer for Combined {
    fn score(&mut self) -> Score {
        let Some(st) = self.stats else {
            return 1.0;
        };
        let doc = self.doc;
        let tf: f32 = self
            .parts
            .iter()
            .filter(|(p, _)| p.doc() == doc)
            .map(|(p, w)| w * p.term_freq() as f32)
            .sum();
        let len: f32 = self
            .norms
            .iter()
            .map(|(n, w)| w * n.fieldnorm(doc) as f32)
            .sum();
        let norm = K1 * (1.0 - B + B * len / st.avglen);
        self.boost * st.idf * (K1 + 1.0) * tf / (tf + norm)
    }
}

#[cfg(test)]
mod tests {
    use tantivy::collector::TopDocs;
    use tantivy::schema::{STORED, SchemaBuilder, TEXT};
    use tantivy::{Index, TantivyDocument};

    use super::*;

    /// With one field and weight 1, BM25F is tantivy's BM25; with two fields holding
    /// a text split in two, it is BM25 over the whole text.
    #[test]
    fn bm25f_is_bm25_over_the_concatenation() -> tantivy::Result<()> {
        let mut b = SchemaBuilder::new();
        let whole = b.add_text_field("whole", TEXT | STORED);
        let head = b.add_text_field("head", TEXT);
        let tail = b.add_text_field("tail", TEXT);
        let index = Index::create_in_ram(b.build());
        let mut w = index.writer_with_num_threads(1, 20_000_000)?;
        let texts = [
            ("crawl the web", "and crawl it again"),
            ("search", "the index of the crawl"),
            ("nothing", "here at all"),
            ("crawl crawl crawl", "crawl"),
        ];
        for (h, t) in texts {
            let mut d = TantivyDocument::default();
            d.add_text(whole, format!("{h} {t}"));
            d.add_text(head, h);
            d.add_text(tail, t);
            w.add_document(d)?;
        }
        w.commit()?;
        let searcher = index.reader()?.searcher();
        let bm25 = tantivy::query::TermQuery::new(
            Term::from_field_text(whole, "crawl"),
            IndexRecordOption::WithFreqs,
        );
        let want = searcher.search(&bm25, &TopDocs::with_limit(10).order_by_score())?;
        let got = searcher.search(
            &CombinedTermQuery::new("crawl", &[(head, 1.0), (tail, 1.0)]),
            &TopDocs::with_limit(10).order_by_score(),
        )?;
        assert_eq!(want.len(), 3);
        assert_eq!(
            want.iter().map(|x| x.1).collect::<Vec<_>>(),
            got.iter().map(|x| x.1).collect::<Vec<_>>()
        );
        for (a, b) in want.iter().zip(&got) {
            // tantivy's field norms are quantized per field, so the sums differ a little.
            assert!((a.0 - b.0).abs() < 0.05 * a.0, "{a:?} vs {b:?}");
        }
        let single = searcher.search(
            &CombinedTermQuery::new("crawl", &[(whole, 1.0)]),
            &TopDocs::with_limit(10).order_by_score(),
        )?;
        for (a, b) in want.iter().zip(&single) {
            assert!((a.0 - b.0).abs() < 1e-4, "{a:?} vs {b:?}");
        }
        // A weight of 0 leaves the field out.
        let head_only = searcher.search(
            &CombinedTermQuery::new("crawl", &[(head, 1.0), (tail, 0.0)]),
            &TopDocs::with_limit(10).order_by_score(),
        )?;
        assert_eq!(head_only.len(), 2);
        Ok(())
    }
}
