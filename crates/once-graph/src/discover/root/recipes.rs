//! A `justfile`'s recipes and a `Makefile`'s targets, as root capabilities (`just NAME`,
//! `make NAME`).
//!
//! Both are read by a line scanner that only looks at lines starting in the first column, and
//! only keeps what it is sure of: a `just` recipe that needs an argument, is `[private]` (or
//! starts with `_`) or asks to `[confirm]`, and a `make` rule whose target is a file (a `.` or
//! `/` in it), a pattern (`%`), a special target (`.PHONY`) or built from a variable (`$`) is
//! no capability. It must never run `just` or `make` to ask: that would run the repository's
//! code on load.

use std::collections::{BTreeMap, BTreeSet};

use crate::discover::{InferredCapability, Reader};
use crate::model::valid_name;

/// Names of the files each tool reads first, in its own order.
const JUSTFILES: [&str; 3] = ["justfile", "Justfile", ".justfile"];
const MAKEFILES: [&str; 3] = ["GNUmakefile", "makefile", "Makefile"];

/// Recipe and target names that start a server or a watcher.
const PERSISTENT_NAMES: [&str; 5] = ["dev", "serve", "start", "watch", "preview"];

/// The root `justfile`'s recipes: the file read and the capabilities.
pub(super) fn justfile(reader: &mut Reader) -> Option<(usize, Vec<InferredCapability>)> {
    let file = JUSTFILES.iter().find_map(|name| reader.read(name))?;
    let rel = reader.rel(file).to_string();
    let recipes = just_recipes(reader.text(file));
    Some((file, capabilities("just", &rel, recipes)))
}

/// The root `Makefile`'s targets: the file read and the capabilities.
pub(super) fn makefile(reader: &mut Reader) -> Option<(usize, Vec<InferredCapability>)> {
    let file = MAKEFILES.iter().find_map(|name| reader.read(name))?;
    let rel = reader.rel(file).to_string();
    let targets = make_targets(reader.text(file));
    Some((file, capabilities("make", &rel, targets)))
}

/// A recipe or target: its name, what it runs first, and its own lines.
#[derive(Debug, Default, PartialEq, Eq)]
struct Recipe {
    name: String,
    deps: Vec<String>,
    body: String,
}

/// The capabilities of `recipes`, run by `tool`: a recipe is persistent when its name or body
/// says it serves or watches, or when it runs a persistent recipe first.
fn capabilities(tool: &str, rel: &str, recipes: Vec<Recipe>) -> Vec<InferredCapability> {
    // Persistence flows from a recipe to every recipe that runs it first: one walk over who
    // depends on whom, linear in the file however its rules are ordered.
    let mut dependents: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for recipe in &recipes {
        for dep in &recipe.deps {
            dependents
                .entry(dep.as_str())
                .or_default()
                .push(recipe.name.as_str());
        }
    }
    let mut persistent: BTreeSet<&str> = BTreeSet::new();
    let mut queue: Vec<&str> = recipes
        .iter()
        .filter(|r| serves(&r.name, &r.body))
        .map(|r| r.name.as_str())
        .collect();
    while let Some(name) = queue.pop() {
        if persistent.insert(name) {
            queue.extend(dependents.get(name).into_iter().flatten().copied());
        }
    }
    let mut seen = BTreeSet::new();
    recipes
        .iter()
        .filter(|r| valid_name(&r.name) && seen.insert(r.name.clone()))
        .map(|r| InferredCapability {
            name: r.name.clone(),
            command: format!("{tool} {}", r.name),
            description: format!("the `{}` {} of `{rel}`", r.name, kind_of(tool)),
            persistent: persistent.contains(r.name.as_str()),
            inputs: None,
            stands_for: None,
            batch: None,
        })
        .collect()
}

fn kind_of(tool: &str) -> &'static str {
    if tool == "just" { "recipe" } else { "target" }
}

/// A server or watcher, by name or by a `watch` in its lines (`cargo watch`, `--watch`).
fn serves(name: &str, body: &str) -> bool {
    PERSISTENT_NAMES.contains(&name)
        || body
            .split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"'))
            .any(|word| matches!(word, "watch" | "--watch" | "-w"))
}

/// The recipes of a justfile that run with no argument and are meant to be run by hand.
fn just_recipes(text: &str) -> Vec<Recipe> {
    let mut out: Vec<Recipe> = Vec::new();
    let mut attributes: Vec<String> = Vec::new();
    // The recipe whose body lines follow, if it is kept.
    let mut open: Option<usize> = None;
    for line in text.lines() {
        if line.starts_with([' ', '\t']) {
            if let Some(i) = open {
                out[i].body.push_str(line.trim());
                out[i].body.push('\n');
            }
            continue;
        }
        let trimmed = line.trim_end();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        open = None;
        if let Some(inner) = trimmed.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            attributes.extend(inner.split(',').map(|a| a.trim().to_string()));
            continue;
        }
        let attrs = std::mem::take(&mut attributes);
        let Some(recipe) = just_header(trimmed) else {
            continue;
        };
        let hidden = attrs.iter().any(|a| {
            let name = a.split([':', '(']).next().unwrap_or_default().trim();
            matches!(name, "private" | "confirm")
        });
        if hidden || recipe.name.starts_with('_') {
            continue;
        }
        out.push(recipe);
        open = Some(out.len() - 1);
    }
    out
}

/// A recipe header `name PARAM='default' +REST: dep (dep 'arg')`, or `None` for anything else
/// (an assignment, an alias, a setting, an import, a recipe that needs an argument).
fn just_header(line: &str) -> Option<Recipe> {
    let line = line.strip_prefix('@').unwrap_or(line);
    let name_end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-')))
        .unwrap_or(line.len());
    let name = &line[..name_end];
    if name.is_empty() || matches!(name, "alias" | "set" | "export" | "import" | "mod") {
        return None;
    }
    let colon = colon_outside_quotes(line)?;
    // `:=` is an assignment.
    if line[colon + 1..].starts_with('=') {
        return None;
    }
    let params = &line[name_end..colon];
    if params.contains(":=") || !params.trim().is_empty() && !all_have_defaults(params) {
        return None;
    }
    let deps = line[colon + 1..]
        .split_whitespace()
        .map(|w| w.trim_start_matches('(').trim_start_matches('@'))
        .take_while(|w| !w.starts_with("&&"))
        .filter(|w| {
            w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        })
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    Some(Recipe {
        name: name.to_string(),
        deps,
        body: String::new(),
    })
}

/// Whether every parameter of a recipe has a default or may be empty (`*rest`).
fn all_have_defaults(params: &str) -> bool {
    split_words(params)
        .iter()
        .all(|p| p.starts_with('*') || p.contains('='))
}

/// Words separated by spaces outside quotes and backquotes.
fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                word.push(c);
            }
            (Some(_), c) => word.push(c),
            (None, '\'' | '"' | '`') => {
                quote = Some(c);
                word.push(c);
            }
            (None, c) if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            (None, c) => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// The first `:` outside quotes and backquotes.
fn colon_outside_quotes(line: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"' | '`') => quote = Some(c),
            (None, ':') => return Some(i),
            _ => {}
        }
    }
    None
}

/// The targets of a Makefile's rules that name no file: `build:`, `test: lint test-only`.
fn make_targets(text: &str) -> Vec<Recipe> {
    let mut out: Vec<Recipe> = Vec::new();
    let mut bodies: BTreeMap<usize, String> = BTreeMap::new();
    let mut open: Vec<usize> = Vec::new();
    let mut continued = false;
    for line in text.lines() {
        // A line ending in `\` goes on: its next line is never a rule of its own.
        let was_continued = std::mem::replace(&mut continued, line.ends_with('\\'));
        if was_continued {
            continue;
        }
        if line.starts_with('\t') {
            for &i in &open {
                let body = bodies.entry(i).or_default();
                body.push_str(line.trim());
                body.push('\n');
            }
            continue;
        }
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        open.clear();
        let Some(colon) = line.find(':') else {
            continue;
        };
        let (targets, rest) = (&line[..colon], &line[colon..]);
        let rest = rest.trim_start_matches(':');
        // `:=`, `::=`, `?=`, `+=`, `=` before the colon: an assignment, not a rule.
        if rest.starts_with('=') || targets.contains('=') {
            continue;
        }
        let deps: Vec<String> = rest
            .split(';')
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        for target in targets.split_whitespace() {
            let named = target
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'));
            if !named || target.starts_with('-') {
                continue;
            }
            out.push(Recipe {
                name: target.to_string(),
                deps: deps.clone(),
                body: String::new(),
            });
            open.push(out.len() - 1);
        }
    }
    for (i, body) in bodies {
        out[i].body = body;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn persistence_reaches_the_end_of_a_long_chain_written_in_reverse() {
        // `r0` runs `r1` first, which runs `r2`, … and the last one serves: a hostile file can
        // write a chain as long as it likes, in the order that is worst for a pass-by-pass walk.
        const LONG: usize = 5_000;
        let recipes: Vec<Recipe> = (0..=LONG)
            .map(|n| Recipe {
                name: format!("r{n}"),
                deps: if n < LONG {
                    vec![format!("r{}", n + 1)]
                } else {
                    Vec::new()
                },
                body: if n == LONG {
                    "cargo watch".into()
                } else {
                    String::new()
                },
            })
            .collect();
        let caps = capabilities("make", "Makefile", recipes);
        assert_eq!(caps.len(), LONG + 1);
        assert!(
            caps.iter().all(|c| c.persistent),
            "every recipe runs the server first"
        );
    }

    fn names(recipes: &[Recipe]) -> Vec<&str> {
        recipes.iter().map(|r| r.name.as_str()).collect()
    }

    #[test]
    fn just_keeps_recipes_that_run_without_arguments() {
        let text = "alias t := test\nlog := \"warn\"\nexport X := log\nset shell := [\"bash\"]\n\n\
                    [group: 'test']\ntest: (watch 'ltest')\n\nwatch +args='lcheck':\n  cargo watch -x '{{ args }}'\n\n\
                    filter PATTERN:\n  cargo test {{ PATTERN }}\n\n[private]\nhidden:\n  true\n\n\
                    _helper:\n  true\n\n[confirm]\npublish:\n  cargo publish\n\n\
                    done BRANCH=`git rev-parse --abbrev-ref HEAD`:\n  echo {{BRANCH}}\n\n@quiet *args:\n  true\n";
        let recipes = just_recipes(text);
        assert_eq!(names(&recipes), ["test", "watch", "done", "quiet"]);
        assert_eq!(recipes[0].deps, ["watch"]);
        let caps = capabilities("just", "justfile", recipes);
        assert!(
            caps.iter()
                .all(|c| c.persistent == matches!(c.name.as_str(), "test" | "watch"))
        );
    }

    #[test]
    fn make_keeps_targets_that_name_no_file() {
        let text = "CC := gcc\nSOURCES = a b\n.PHONY: build test\n\nMakefile.js: x.ts\n\tnode x\n\n\
                    build:\n\t$(CC) x\n\ntest: lint test-only\n\nlint test-only:\n\teslint .\n\n\
                    %.o: %.c\n\tcc $<\n\nlib/index.js: src\n\tcp\n\ndev:\n\tvite\n\n\
                    FLAGS = -a \\\n  -b: c\n\nrun: CFLAGS = -O2\n";
        let recipes = make_targets(text);
        assert_eq!(
            names(&recipes),
            ["build", "test", "lint", "test-only", "dev", "run"]
        );
        assert_eq!(recipes[1].deps, ["lint", "test-only"]);
        assert_eq!(recipes[2].body, "eslint .\n");
        let caps = capabilities("make", "Makefile", recipes);
        let persistent: Vec<&str> = caps
            .iter()
            .filter(|c| c.persistent)
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(persistent, ["dev"]);
        assert_eq!(caps[0].command, "make build");
    }
}
