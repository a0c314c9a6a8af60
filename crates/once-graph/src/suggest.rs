//! "Did you mean …?" suggestions: an edit distance and a nearest-match picker.
//!
//! Only ever called on the error path (an unknown key, target, kind…), so it may
//! allocate freely; it must never be called for every key of a valid manifest.

/// Optimal-string-alignment (restricted Damerau–Levenshtein) distance between
/// `a` and `b`, counted in chars. Adjacent transpositions cost 1, which catches
/// the commonest typos (`comamnd`).
pub fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let (n, m) = (a.len(), b.len());
    if n == 0 {
        return m;
    }
    if m == 0 {
        return n;
    }
    // Three rolling rows are enough for the transposition rule.
    let mut prev2 = vec![0usize; m + 1];
    let mut prev: Vec<usize> = (0..=m).collect();
    let mut cur = vec![0usize; m + 1];
    for i in 1..=n {
        cur[0] = i;
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(prev2[j - 2] + 1);
            }
            cur[j] = v;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[m]
}

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
                distance(&lower, &c.to_ascii_lowercase())
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
        assert_eq!(best("dep", c), Some("deps".into()));
        assert_eq!(best("zzzzzz", c), None);
        assert_eq!(
            near("web", ["webb", "web2", "api"], 5),
            vec!["web2", "webb"]
        );
    }
}
