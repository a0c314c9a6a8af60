//! Which paths a capability's `inputs` name: the one reading of its globs that the cache key
//! (`once-run`) and the affected query share, so that what a change re-runs and what it re-keys
//! can never disagree.
//!
//! A glob is relative to the target's folder; one starting with `//` is relative to the
//! workspace root; a leading `!` excludes. No glob in the folder means every file of the folder;
//! no `//` glob means no root file. What any capability writes inside the folder is never an
//! input (see [`Written`]). This module only matches text: it must never touch the file system.

use std::collections::BTreeMap;
use std::sync::Arc;

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::error::Error;
use crate::model::Target;

/// Include and exclude globs over `/`-separated relative paths.
#[derive(Debug, Clone)]
pub struct Matcher {
    include: Option<GlobSet>,
    exclude: GlobSet,
    /// Per include glob, its literal leading folders and whether anything follows them.
    bases: Vec<(String, bool)>,
}

impl Matcher {
    /// Whether `relative` is included and not excluded.
    pub fn matches(&self, relative: &str) -> bool {
        self.include
            .as_ref()
            .is_none_or(|include| include.is_match(relative))
            && !self.exclude.is_match(relative)
    }

    /// Whether a path under the folder `dir` (relative, `/`-separated, not empty) could match:
    /// a walk skips a folder no include glob can reach (`src/**` never needs `out/`). Only the
    /// literal folders a glob starts with are read; a `*` may cross `/` in these globs, so
    /// whatever follows them can reach any depth.
    pub fn may_hold(&self, dir: &str) -> bool {
        if self.include.is_none() {
            return true;
        }
        self.bases.iter().any(|(base, wild)| {
            let above_base = base
                .strip_prefix(dir)
                .is_some_and(|rest| rest.starts_with('/'));
            let at_or_below_base = base.is_empty()
                || dir == base
                || dir
                    .strip_prefix(base.as_str())
                    .is_some_and(|rest| rest.starts_with('/'));
            above_base || (*wild && at_or_below_base)
        })
    }
}

/// The literal folders (or file) a glob starts with, and what follows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiteralBase {
    /// `a/b/*.txt` → `a/b`.
    pub base: String,
    /// Something with a wildcard follows the base.
    pub wild: bool,
    /// What follows reaches below the base's own files (more than one part, or `**`).
    pub deep: bool,
}

/// Splits `pattern` at its first part with a wildcard (see [`LiteralBase`]).
pub fn literal_base(pattern: &str) -> LiteralBase {
    let parts: Vec<&str> = pattern.split('/').collect();
    let literal = parts
        .iter()
        .take_while(|part| !part.contains(['*', '?', '[', '{', '\\']))
        .count();
    let rest = &parts[literal..];
    LiteralBase {
        base: parts[..literal].join("/"),
        wild: !rest.is_empty(),
        deep: rest.len() > 1 || rest.iter().any(|part| part.contains("**")),
    }
}

/// The compiled input globs of one capability, minus what is written beside them.
#[derive(Debug, Clone)]
pub struct InputGlobs {
    local: Matcher,
    rooted: Matcher,
}

impl InputGlobs {
    /// Compiles `globs` (a capability's `inputs`) minus `excluded` (output globs relative to
    /// the same folder, which never name root files).
    pub fn new<'a>(
        globs: &[String],
        excluded: impl IntoIterator<Item = &'a String>,
    ) -> Result<InputGlobs, Error> {
        let glob = |text: &str| {
            Glob::new(text).map_err(|error| Error::Glob {
                glob: text.to_owned(),
                message: error.kind().to_string(),
            })
        };
        // (include, the includes' literal bases, exclude), for the folder and for the root.
        let mut sets = [
            (GlobSetBuilder::new(), Vec::new(), GlobSetBuilder::new()),
            (GlobSetBuilder::new(), Vec::new(), GlobSetBuilder::new()),
        ];
        for text in globs {
            let (negated, pattern) = match text.strip_prefix('!') {
                Some(pattern) => (true, pattern),
                None => (false, text.as_str()),
            };
            let (set, pattern) = match pattern.strip_prefix("//") {
                Some(pattern) => (&mut sets[1], pattern),
                None => (&mut sets[0], pattern),
            };
            if negated {
                set.2.add(glob(pattern)?);
            } else {
                set.0.add(glob(pattern)?);
                let base = literal_base(pattern);
                set.1.push((base.base, base.wild));
            }
        }
        let mut excluded_text = Vec::new();
        for text in excluded {
            sets[0].2.add(glob(text)?);
            excluded_text.push(text.as_str());
        }
        let build = |builder: GlobSetBuilder, text: String| {
            builder.build().map_err(|error| Error::Glob {
                glob: text,
                message: error.to_string(),
            })
        };
        let [local, rooted] = sets;
        let local_text = format!("{}; {}", globs.join(", "), excluded_text.join(", "));
        let local = Matcher {
            include: match local.1.len() {
                0 => None,
                _ => Some(build(local.0, local_text.clone())?),
            },
            exclude: build(local.2, local_text)?,
            bases: local.1,
        };
        let rooted = Matcher {
            // Only what a `//` glob names is a root input; none names nothing.
            include: Some(build(rooted.0, globs.join(", "))?),
            exclude: build(rooted.2, globs.join(", "))?,
            bases: rooted.1,
        };
        Ok(InputGlobs { local, rooted })
    }

    /// The matcher of paths relative to the target's folder.
    pub fn local(&self) -> &Matcher {
        &self.local
    }

    /// The matcher of paths relative to the workspace root (the `//` globs).
    pub fn rooted(&self) -> &Matcher {
        &self.rooted
    }
}

/// Whether a path is inside `.git` or `.once`, which are never inputs at any depth.
pub fn is_reserved(relative: &str) -> bool {
    relative
        .split('/')
        .any(|part| part == ".git" || part == ".once")
}

/// `path` relative to the folder `folder` (`.` is the root), when it lies inside it.
pub fn inside<'a>(folder: &str, path: &'a str) -> Option<&'a str> {
    if folder == "." || folder.is_empty() {
        return Some(path);
    }
    path.strip_prefix(folder)?.strip_prefix('/')
}

/// The declared outputs of every target with any: what a folder's other capabilities, and the
/// targets inside it, write there. None of it is ever an input: a key would otherwise depend on
/// which action ran first.
#[derive(Debug, Clone)]
pub struct Written {
    outputs: Vec<Outputs>,
    /// Positions in `outputs` by folder (the root spelled `""`): a query reads the folder's own
    /// entries and the range of those below it, not every target (a plan asks for every step).
    by_folder: BTreeMap<String, Vec<usize>>,
}

/// A target's index, folder and `(capability, glob)` outputs.
type Outputs = (usize, String, Vec<(usize, String)>);

/// The root folder is spelled `.` in a target's path.
fn root(path: &str) -> &str {
    if path == "." { "" } else { path }
}

impl Written {
    /// The outputs of `targets`, indexed like them.
    pub fn new(targets: &[Target]) -> Written {
        let outputs: Vec<Outputs> = targets
            .iter()
            .enumerate()
            .filter(|(_, t)| t.capabilities.iter().any(|c| !c.outputs.is_empty()))
            .map(|(i, t)| {
                let globs = t
                    .capabilities
                    .iter()
                    .enumerate()
                    .flat_map(|(c, cap)| cap.outputs.iter().map(move |o| (c, o.clone())))
                    .collect();
                (i, t.path.clone(), globs)
            })
            .collect();
        let mut by_folder: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (at, (_, folder, _)) in outputs.iter().enumerate() {
            by_folder
                .entry(root(folder).to_owned())
                .or_default()
                .push(at);
        }
        Written { outputs, by_folder }
    }

    /// What is written inside the folder `path` by any capability other than number `c` of
    /// target `t` (every capability when `c` is `None`): globs relative to `path`, in the order
    /// of the targets. A target whose folder holds another's (a target at the root) must not
    /// hash what that one writes.
    pub fn inside(&self, path: &str, t: usize, c: Option<usize>) -> Arc<[String]> {
        let path = root(path);
        let mut found: Vec<usize> = if path.is_empty() {
            (0..self.outputs.len()).collect()
        } else {
            // `/` sorts just before `0`: the folders below `path` are the keys in between.
            let below = self
                .by_folder
                .range(format!("{path}/")..format!("{path}0"))
                .flat_map(|(_, at)| at.iter().copied());
            self.by_folder
                .get(path)
                .into_iter()
                .flatten()
                .copied()
                .chain(below)
                .collect()
        };
        found.sort_unstable();
        let mut globs = Vec::new();
        for (index, other, outputs) in found.into_iter().map(|at| &self.outputs[at]) {
            let other = root(other);
            let same = *index == t;
            // Compared without allocating: a plan asks this of every step.
            let prefix = if other == path {
                ""
            } else if path.is_empty() {
                other
            } else if other.len() > path.len()
                && other.starts_with(path)
                && other.as_bytes()[path.len()] == b'/'
            {
                &other[path.len() + 1..]
            } else {
                continue;
            };
            for (cap, glob) in outputs {
                if !(same && Some(*cap) == c) {
                    globs.push(if prefix.is_empty() {
                        glob.clone()
                    } else {
                        format!("{prefix}/{glob}")
                    });
                }
            }
        }
        globs.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globs(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn folder_globs_root_globs_and_exclusions() {
        let outputs = globs(&["dist/**"]);
        let inputs = InputGlobs::new(
            &globs(&["src/**", "!src/gen/**", "//Cargo.lock", "!//Cargo.toml"]),
            outputs.iter(),
        )
        .unwrap();
        assert!(inputs.local().matches("src/lib.rs"));
        assert!(!inputs.local().matches("src/gen/x.rs"));
        assert!(!inputs.local().matches("README.md"));
        assert!(inputs.rooted().matches("Cargo.lock"));
        assert!(!inputs.rooted().matches("Cargo.toml"));
        assert!(!inputs.rooted().matches("src/lib.rs"));

        let all = InputGlobs::new(&globs(&["!*.tmp"]), outputs.iter()).unwrap();
        assert!(all.local().matches("README.md"));
        assert!(!all.local().matches("a.tmp"));
        assert!(!all.local().matches("dist/app.js"), "an output is no input");
        assert!(
            !all.rooted().matches("README.md"),
            "no `//` glob names no root file"
        );
        assert!(InputGlobs::new(&globs(&["a/[b"]), []).is_err());
    }

    #[test]
    fn a_walk_skips_only_folders_no_include_glob_can_reach() {
        let none: [&String; 0] = [];
        let local = |list: &[&str]| InputGlobs::new(&globs(list), none).unwrap().local().clone();
        let src = local(&["src/**", "!src/gen/**", "docs/api/*.md", "Cargo.toml"]);
        for dir in ["src", "src/a/b", "docs", "docs/api", "docs/api/deeper"] {
            assert!(src.may_hold(dir), "{dir}");
        }
        for dir in ["out", "srcs", "docs/guide", "target/src"] {
            assert!(!src.may_hold(dir), "{dir}");
        }
        // `*` crosses `/` in these globs: a glob that starts with one reaches every folder.
        let top = local(&["*.txt"]);
        assert!(top.may_hold("a/b") && top.matches("a/b.txt"));
        assert!(local(&["**/*.rs"]).may_hold("deep/er"));
        // No include glob means every file of the folder; only exclusions prune nothing.
        assert!(local(&[]).may_hold("out"));
        assert!(local(&["!*.tmp"]).may_hold("out"));
        // A path named in full: its folders are walked, others are not.
        let exact = local(&["conf/app.toml"]);
        assert!(exact.may_hold("conf") && !exact.may_hold("conf/app.toml/x"));
        assert!(!exact.may_hold("other"));
        // Root globs, by root-relative folder.
        let rooted = InputGlobs::new(&globs(&["//proto/**"]), none).unwrap();
        assert!(rooted.rooted().may_hold("proto/v1") && !rooted.rooted().may_hold("web"));
    }

    /// A folder sees what every target in it or below it writes (and nothing of a sibling whose
    /// name merely starts the same), in the order of the targets (by name), minus the asking
    /// capability.
    #[test]
    fn what_is_written_inside_a_folder_comes_from_it_and_the_folders_below() {
        let dir = std::env::temp_dir().join(format!("once-written-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for folder in ["web/app", "web2", "web-a", "web.x"] {
            std::fs::create_dir_all(dir.join(folder)).unwrap();
        }
        let target = |name: &str, path: &str, out: &str| {
            format!(
                "[targets.{name}]\nkind = \"command\"\npath = \"{path}\"\n\
                 [targets.{name}.capabilities.build]\ncommand = \"true\"\noutputs = [\"{out}\"]\n"
            )
        };
        let manifest = [
            target("top", ".", "dist/**"),
            target("web", "web", "build/**"),
            target("app", "web/app", "out/**"),
            target("web2", "web2", "w2/**"),
            target("weba", "web-a", "wa/**"),
            target("webx", "web.x", "wx/**"),
        ]
        .concat();
        std::fs::write(dir.join("once.toml"), manifest).unwrap();
        let ws = crate::workspace::Workspace::load(&dir).unwrap();
        let written = Written::new(&ws.targets);
        let index = |name: &str| ws.targets.iter().position(|t| t.name == name).unwrap();
        let inside = |path: &str, t: &str, own: bool| -> Vec<String> {
            written
                .inside(path, index(t), own.then_some(0))
                .iter()
                .cloned()
                .collect()
        };
        assert_eq!(inside("web", "web", true), ["app/out/**"]);
        assert_eq!(inside("web", "web", false), ["app/out/**", "build/**"]);
        assert_eq!(inside("web/app", "app", true), Vec::<String>::new());
        assert_eq!(inside("web2", "web2", false), ["w2/**"]);
        let mut at_root = inside(".", "top", true);
        at_root.sort();
        assert_eq!(
            at_root,
            [
                "web-a/wa/**",
                "web.x/wx/**",
                "web/app/out/**",
                "web/build/**",
                "web2/w2/**"
            ]
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn paths_inside_folders() {
        assert_eq!(inside(".", "a/b"), Some("a/b"));
        assert_eq!(inside("a", "a/b"), Some("b"));
        assert_eq!(inside("a", "ab/c"), None);
        assert_eq!(inside("a", "a"), None);
        assert!(is_reserved("x/.git/config"));
        assert!(!is_reserved("x/.gitignore"));
    }
}
