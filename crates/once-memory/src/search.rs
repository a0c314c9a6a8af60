//! Ranked full-text search: a tokenizer and Okapi BM25 over title, tags and body.
//!
//! Fields are weighted by repeating their terms (title ×3, tags ×2, body ×1), the simple form of
//! BM25F: a word in the title says more about an entry than the same word deep in its body.
//! Terms are computed once per entry, when it is indexed; a search only looks up the query's
//! terms. This module must never read files.

use std::collections::HashMap;

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

/// An entry's weighted term frequencies, by term id, sorted by id; and its weighted length.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Terms {
    pub(crate) freqs: Vec<(u32, u32)>,
    pub(crate) length: u32,
}

impl Terms {
    fn freq(&self, term: u32) -> u32 {
        self.freqs
            .binary_search_by_key(&term, |(t, _)| *t)
            .map_or(0, |i| self.freqs[i].1)
    }
}

/// The terms of all indexed entries share one dictionary.
#[derive(Debug, Clone, Default)]
pub(crate) struct Dictionary {
    pub(crate) words: Vec<String>,
    ids: HashMap<String, u32>,
}

impl Dictionary {
    pub(crate) fn from_words(words: Vec<String>) -> Dictionary {
        let ids = words
            .iter()
            .enumerate()
            .map(|(i, w)| (w.clone(), u32::try_from(i).unwrap_or(u32::MAX)))
            .collect();
        Dictionary { words, ids }
    }

    pub(crate) fn lookup(&self, word: &str) -> Option<u32> {
        self.ids.get(word).copied()
    }

    fn intern(&mut self, word: String) -> u32 {
        if let Some(id) = self.ids.get(&word) {
            return *id;
        }
        let id = u32::try_from(self.words.len()).unwrap_or(u32::MAX);
        self.words.push(word.clone());
        self.ids.insert(word, id);
        id
    }

    /// The weighted terms of an entry.
    pub(crate) fn terms(&mut self, entry: &Entry) -> Terms {
        let mut counts: HashMap<u32, u32> = HashMap::new();
        let mut length = 0;
        let mut add = |dictionary: &mut Dictionary, text: &str, weight: u32| {
            for word in tokenize(text) {
                *counts.entry(dictionary.intern(word)).or_default() += weight;
                length += weight;
            }
        };
        add(self, &entry.title, TITLE_WEIGHT);
        for tag in &entry.tags {
            add(self, tag, TAG_WEIGHT);
        }
        add(self, &entry.body, 1);
        let mut freqs: Vec<(u32, u32)> = counts.into_iter().collect();
        freqs.sort_unstable();
        Terms { freqs, length }
    }
}

/// BM25 scores of `candidates` (indexes into `docs`) for `query`; only entries that match at
/// least one query term are returned, best first, ties by position (callers sort candidates
/// newest first, so ties go to the newer entry).
pub(crate) fn rank(
    dictionary: &Dictionary,
    docs: &[&Terms],
    candidates: &[usize],
    query: &str,
) -> Vec<(usize, f64)> {
    let mut query_terms: Vec<u32> = tokenize(query)
        .filter_map(|word| dictionary.lookup(&word))
        .collect();
    query_terms.sort_unstable();
    query_terms.dedup();
    if query_terms.is_empty() || candidates.is_empty() {
        return Vec::new();
    }
    // Statistics over the candidates: filters narrow the collection being searched.
    let n = candidates.len() as f64;
    let total_length: f64 = candidates.iter().map(|&i| f64::from(docs[i].length)).sum();
    let average = (total_length / n).max(1.0);
    let idf: Vec<f64> = query_terms
        .iter()
        .map(|&term| {
            let df = candidates
                .iter()
                .filter(|&&i| docs[i].freq(term) > 0)
                .count() as f64;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        })
        .collect();
    let mut scored: Vec<(usize, f64)> = candidates
        .iter()
        .filter_map(|&i| {
            let doc = docs[i];
            let norm = K1 * (1.0 - B + B * f64::from(doc.length) / average);
            let score: f64 = query_terms
                .iter()
                .zip(&idf)
                .map(|(&term, idf)| {
                    let tf = f64::from(doc.freq(term));
                    idf * tf * (K1 + 1.0) / (tf + norm)
                })
                .sum();
            (score > 0.0).then_some((i, score))
        })
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
