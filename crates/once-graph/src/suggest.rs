//! "Did you mean …?" suggestions: a nearest-match picker over `strsim`'s optimal-string-alignment
//! distance (restricted Damerau–Levenshtein, in chars), where an adjacent transposition costs 1 and
//! so the commonest typo (`comamnd`) is one edit away.
//!
//! Only ever called on the error path (an unknown key, target, kind…), so it may
//! allocate freely; it must never be called for every key of a valid manifest.

/// Candidates close to `word`: distance ≤ 2, or one is a prefix of the other
/// (at least 3 chars), best first, at most `max`; ties broken by name so the
/// answer is deterministic.
pub fn near<'a, I>(word: &str, candidates: I, max: usize) -> Vec<String>
where
    I: IntoIterator<Item = &'a str>,
{
    let lower = word.to_ascii_lowercase();
    let length = word.chars().count();
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter_map(|c| {
            // Lengths that differ by more than 2 already put the distance over 2: skipping
            // them keeps a long word against many names linear instead of quadratic.
            let d = if length.abs_diff(c.chars().count()) > 2 {
                usize::MAX
            } else {
                strsim::osa_distance(&lower, &c.to_ascii_lowercase())
            };
            let prefix = length >= 3 && (c.starts_with(word) || word.starts_with(c));
            if d <= 2 && d < c.chars().count().max(1) {
                Some((d, c))
            } else if prefix {
                Some((3, c))
            } else {
                None
            }
        })
        .collect();
    scored.sort_unstable();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(max)
        .map(|(_, c)| c.to_string())
        .collect()
}

/// The single best candidate, for `help: did you mean …?`.
pub fn best<'a, I>(word: &str, candidates: I) -> Option<String>
where
    I: IntoIterator<Item = &'a str>,
{
    near(word, candidates, 1).into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        // The metric the thresholds in `near` were chosen for: chars, transpositions cost 1.
        use strsim::osa_distance as distance;
        assert_eq!(distance("", ""), 0);
        assert_eq!(distance("abc", ""), 3);
        assert_eq!(distance("comand", "command"), 1);
        assert_eq!(distance("comamnd", "command"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("héllo", "hello"), 1);
    }

    #[test]
    fn nearest() {
        let c = ["command", "description", "deps", "deadline"];
        assert_eq!(best("comand", c), Some("command".into()));
        assert_eq!(best("comamnd", c), Some("command".into()));
        assert_eq!(best("DEADLNIE", c), Some("deadline".into()));
        assert_eq!(best("dep", c), Some("deps".into()));
        assert_eq!(best("zzzzzz", c), None);
        assert_eq!(
            near("web", ["webb", "web2", "api"], 5),
            vec!["web2", "webb"]
        );
    }
}
