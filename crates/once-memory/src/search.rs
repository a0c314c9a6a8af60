//! Ranked full-text search: a tokenizer and Okapi BM25 over title, tags and body.
//!
//! Fields are weighted by repeating their terms (title ×3, tags ×2, body ×1), the simple form of
//! BM25F: a word in the title says more about an entry than the same word deep in its body.
//! Terms are computed once per entry, when it is indexed; a search only reads the postings of
//! the query's terms from the index. This module must never read files.

use std::collections::HashMap;

use crate::index::Corpus;
use crate::model::Entry;

const TITLE_WEIGHT: u32 = 3;
const TAG_WEIGHT: u32 = 2;
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Lowercased runs of letters and digits; everything else separates words.
pub fn tokenize(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
}

/// An entry's weighted term frequencies, by word, and its weighted length.
pub(crate) fn terms(entry: &Entry) -> (HashMap<String, u32>, u32) {
    let mut counts: HashMap<String, u32> = HashMap::new();
    let mut length = 0;
    let mut add = |text: &str, weight: u32| {
        for word in tokenize(text) {
            *counts.entry(word).or_default() += weight;
            length += weight;
        }
    };
    add(&entry.title, TITLE_WEIGHT);
    for tag in &entry.tags {
        add(tag, TAG_WEIGHT);
    }
    add(&entry.body, 1);
    (counts, length)
}

/// BM25 scores of `candidates` (file numbers of `corpus`, ascending) for `query`; only entries
/// that match at least one query term are returned, best first, ties by file number (files are
/// numbered newest first, so ties go to the newer entry). Only the postings of the query's terms
/// are read.
pub(crate) fn rank(corpus: &Corpus, candidates: &[usize], query: &str) -> Vec<(usize, f64)> {
    let mut query_terms: Vec<usize> = tokenize(query)
        .filter_map(|word| corpus.lookup(&word))
        .collect();
    query_terms.sort_unstable();
    query_terms.dedup();
    if query_terms.is_empty() || candidates.is_empty() {
        return Vec::new();
    }
    // Statistics over the candidates: filters narrow the collection being searched.
    let mut candidate = vec![false; corpus.len()];
    for &i in candidates {
        candidate[i] = true;
    }
    let n = candidates.len() as f64;
    let total_length: f64 = candidates
        .iter()
        .map(|&i| f64::from(corpus.length(i)))
        .sum();
    let average = (total_length / n).max(1.0);
    let mut scores: Vec<f64> = vec![0.0; corpus.len()];
    for term in query_terms {
        let postings: Vec<(usize, u32)> = corpus
            .postings(term)
            .into_iter()
            .filter(|&(i, freq)| candidate[i] && freq > 0)
            .collect();
        let df = postings.len() as f64;
        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        for (i, freq) in postings {
            let norm = K1 * (1.0 - B + B * f64::from(corpus.length(i)) / average);
            let tf = f64::from(freq);
            scores[i] += idf * tf * (K1 + 1.0) / (tf + norm);
        }
    }
    let mut scored: Vec<(usize, f64)> = candidates
        .iter()
        .filter(|&&i| scores[i] > 0.0)
        .map(|&i| (i, scores[i]))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored
}

/// A short extract of `body` around the first query word it contains (or its start).
pub(crate) fn snippet(body: &str, query: Option<&str>) -> String {
    const WIDTH: usize = 160;
    let words: Vec<String> = query.map(|q| tokenize(q).collect()).unwrap_or_default();
    let line = body
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .find(|line| {
            let lower = line.to_lowercase();
            words.iter().any(|w| lower.contains(w.as_str()))
        })
        .or_else(|| body.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or_default();
    if line.chars().count() <= WIDTH {
        return line.to_string();
    }
    let mut cut: String = line.chars().take(WIDTH).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_lowercases_and_splits_on_non_alphanumerics() {
        let words: Vec<String> = tokenize("Don't use `cargo-build`, Ünïcode_42!").collect();
        assert_eq!(
            words,
            ["don", "t", "use", "cargo", "build", "ünïcode", "42"]
        );
    }

    #[test]
    fn snippets_show_the_matching_line() {
        let body = "Intro line.\n\nThe OpenSSL build needs perl.\n";
        assert_eq!(
            snippet(body, Some("openssl")),
            "The OpenSSL build needs perl."
        );
        assert_eq!(snippet(body, None), "Intro line.");
        assert!(snippet(&"x".repeat(500), None).ends_with('…'));
    }
}
