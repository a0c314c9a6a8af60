//! "Did you mean …?" suggestions: a nearest-match picker over `strsim`'s optimal-string-alignment
//! distance (restricted Damerau–Levenshtein, in chars), where an adjacent transposition costs 1 and
//! so the commonest typo (`comamnd`) is one edit away.
//!
//! Only ever called on the error path (an unknown key, target, kind…), so it may
//! allocate freely; it must never be called for every key of a valid manifest.
//!
//! A target is also known by its folder and its package's name, so [`targets`] matches those
//! too: `packages/runtime-core` and `@vue/runtime-core` mean the target `vue-runtime-core`, and
//! `runtime-core` is the end of that name after a separator.

use crate::model::Target;

/// How many targets an error suggests.
pub const TARGETS_SUGGESTED: usize = 3;

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

/// What a target is known by: its name, its folder and the package it builds, if any.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Known<'a> {
    pub name: &'a str,
    pub folder: &'a str,
    pub package: Option<&'a str>,
}

/// What separates the words of a name, a folder or a package (`vue-runtime-core`,
/// `packages/runtime-core`, `@vue/runtime-core`).
fn is_separator(c: char) -> bool {
    matches!(c, '-' | '_' | '/' | '.' | '@' | ':')
}

/// Whether `long` ends with `short` right after a separator (`vue-runtime-core`, `runtime-core`).
fn ends_at_separator(long: &str, short: &str) -> bool {
    long.len() > short.len()
        && long.ends_with(short)
        && long[..long.len() - short.len()]
            .chars()
            .next_back()
            .is_some_and(is_separator)
}

/// How well `word` names `known`, lower is better; `None` when it does not.
fn target_score(word: &str, known: Known<'_>) -> Option<u8> {
    let name = known.name.to_ascii_lowercase();
    let folder = known.folder.to_ascii_lowercase();
    let package = known.package.map(str::to_ascii_lowercase);
    // The last word of a folder or a package: `runtime-core` of `packages/runtime-core`.
    let last = |text: &str| text.rsplit('/').next().unwrap_or(text).to_owned();
    let typo = |a: &str, b: &str| {
        a.chars().count().abs_diff(b.chars().count()) <= 2 && strsim::osa_distance(a, b) <= 2
    };
    let length = word.chars().count();
    if (folder == word && folder != ".") || package.as_deref() == Some(word) {
        return Some(0);
    }
    let distance = if length.abs_diff(name.chars().count()) > 2 {
        usize::MAX
    } else {
        strsim::osa_distance(word, &name)
    };
    if distance == 1 {
        return Some(1);
    }
    let ends = ends_at_separator(&name, word) || (length >= 3 && ends_at_separator(word, &name));
    let by_last = (folder != "." && last(&folder) == word)
        || package.as_deref().is_some_and(|p| last(p) == word);
    if ends || by_last {
        return Some(2);
    }
    // Two edits away, but never a word of two letters or fewer replaced whole.
    if distance == 2 && name.chars().count() > 2 {
        return Some(3);
    }
    if length >= 3 {
        let typo_of_folder = folder != "." && typo(word, &folder);
        let typo_of_package = package.as_deref().is_some_and(|p| typo(word, p));
        if typo_of_folder || typo_of_package {
            return Some(3);
        }
        if name.starts_with(word) || word.starts_with(&name) {
            return Some(4);
        }
    }
    if length >= 4 && (name.contains(word) || folder.contains(word)) {
        return Some(5);
    }
    None
}

/// The targets `word` could mean, best first, at most `max`: by name (a typo, a prefix, the
/// end of the name after a separator, a part of it), by folder (`packages/runtime-core`, also
/// written `./packages/runtime-core/`) and by package name (`@vue/runtime-core`).
pub(crate) fn near_known<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = Known<'a>>,
    max: usize,
) -> Vec<String> {
    let word = word.trim();
    let word = word.strip_prefix("./").unwrap_or(word);
    let word = word.trim_end_matches('/').to_ascii_lowercase();
    if word.is_empty() {
        return Vec::new();
    }
    let mut scored: Vec<(u8, &str)> = candidates
        .into_iter()
        .filter_map(|known| Some((target_score(&word, known)?, known.name)))
        .collect();
    scored.sort_unstable();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(max)
        .map(|(_, name)| name.to_string())
        .collect()
}

/// The targets of `targets` that `word`, which names none, could mean (see [`near_known`]).
pub fn targets(targets: &[Target], word: &str) -> Vec<String> {
    near_known(
        word,
        targets.iter().map(|t| Known {
            name: &t.name,
            folder: &t.path,
            package: t.fields.get("package").and_then(|p| p.as_str()),
        }),
        TARGETS_SUGGESTED,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vue() -> Vec<Known<'static>> {
        let known = |name, folder, package| Known {
            name,
            folder,
            package: Some(package),
        };
        vec![
            Known {
                name: "root",
                folder: ".",
                package: None,
            },
            known("vue-reactivity", "packages/reactivity", "@vue/reactivity"),
            known(
                "vue-runtime-core",
                "packages/runtime-core",
                "@vue/runtime-core",
            ),
            known(
                "vue-runtime-dom",
                "packages/runtime-dom",
                "@vue/runtime-dom",
            ),
            known("vue-shared", "packages/shared", "@vue/shared"),
        ]
    }

    #[test]
    fn a_target_is_found_by_name_folder_and_package() {
        let near = |word| near_known(word, vue(), 3);
        for word in [
            "runtime-core",
            "packages/runtime-core",
            "./packages/runtime-core/",
            "@vue/runtime-core",
            "vue-runtime-cor",
            "vue-rutnime-core",
            "packages/runtime-cor",
            "RUNTIME-CORE",
        ] {
            assert_eq!(
                near(word).first().map(String::as_str),
                Some("vue-runtime-core"),
                "{word}: {:?}",
                near(word)
            );
        }
        assert_eq!(near("runtime"), vec!["vue-runtime-core", "vue-runtime-dom"]);
        assert_eq!(near("shared"), vec!["vue-shared"]);
        // The root's folder `.` is no name for it: a lone `.` or `x` suggests nothing.
        assert!(near(".").is_empty(), "{:?}", near("."));
        assert!(near("x").is_empty(), "{:?}", near("x"));
        assert!(near("zzzzzzzz").is_empty());
        assert!(near("").is_empty());
        assert_eq!(near("rot"), vec!["root"]);
    }

    #[test]
    fn separators_bound_the_end_of_a_name() {
        assert!(ends_at_separator("vue-runtime-core", "runtime-core"));
        assert!(ends_at_separator("@vue/shared", "shared"));
        assert!(!ends_at_separator("vue-runtimecore", "core"));
        assert!(!ends_at_separator("core", "core"));
    }

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
