//! The workspace's root target: the commands contributors run from the repository's root, as
//! capabilities of one target at `.` (ecosystem and kind `workspace`: a kind of its own, so a
//! `command` target a `once.toml` declares at the root is never taken for it).
//!
//! Its capabilities come from, in this order (the first keeps a shared name, a later one is
//! `SOURCE-NAME`): the root `package.json`'s scripts when it is a JavaScript workspace's root
//! (turbo's `//#task`), a Cargo workspace's workspace-wide commands ([`cargo_workspace`]), a uv
//! workspace's (`python::workspace_commands`), the
//! `justfile`'s recipes and the `Makefile`'s targets ([`recipes`]). It declares no `inputs`, so
//! its key reads every file of the repository: a root script that runs vitest, jest or eslint
//! across the packages re-runs when any of them changes. There is no root target when nothing
//! says so: a lone package's scripts are its own.
//!
//! Like every discoverer it only reads files, through the [`Reader`]: it never runs `make`,
//! `just` or the package manager to list what they would do, and it never invents a command:
//! each capability runs exactly a script, a recipe or a target the repository has.

mod recipes;

use std::collections::{BTreeMap, HashSet};

use super::{Ecosystem, Inferred, InferredCapability, Reader};

/// A source of root capabilities, for the prefix a taken name gets.
struct Source {
    prefix: &'static str,
    capabilities: Vec<InferredCapability>,
}

/// The root target of a workspace whose other packages are `found`, if anything gives it a
/// capability.
pub(crate) fn discover(reader: &mut Reader, found: &[Inferred]) -> Option<Inferred> {
    let below_root = |ecosystem: Ecosystem| {
        found
            .iter()
            .any(|t| t.ecosystem == ecosystem && t.path != ".")
    };
    let mut sources: Vec<Source> = Vec::new();
    // A JavaScript root with members: its scripts drive them. Without members it is the one
    // package, whose scripts are already its own capabilities.
    let mut file = None;
    if below_root(Ecosystem::JavaScript)
        && let Some((at, scripts)) = super::javascript::root_scripts(reader)
    {
        file = Some(at);
        sources.push(Source {
            prefix: "npm",
            capabilities: scripts,
        });
    }
    if let Some((at, commands)) = super::cargo::workspace_commands(reader, found) {
        file = file.or(Some(at));
        sources.push(Source {
            prefix: "cargo",
            capabilities: commands,
        });
    }
    if let Some((at, commands)) = super::python::workspace_commands(reader, found) {
        file = file.or(Some(at));
        sources.push(Source {
            prefix: "uv",
            capabilities: commands,
        });
    }
    for (prefix, found) in [
        ("just", recipes::justfile(reader)),
        ("make", recipes::makefile(reader)),
    ] {
        if let Some((at, capabilities)) = found {
            file = file.or(Some(at));
            sources.push(Source {
                prefix,
                capabilities,
            });
        }
    }
    let file = file?;
    let capabilities = merge(sources);
    if capabilities.is_empty() {
        return None;
    }
    Some(Inferred {
        name: "root".into(),
        kind: "workspace",
        path: ".".into(),
        fields: BTreeMap::new(),
        capabilities: Some(capabilities),
        edges: Vec::new(),
        file,
        offset: 0,
        ecosystem: Ecosystem::Workspace,
    })
}

/// Every source's capabilities in one list: a name an earlier source holds becomes
/// `PREFIX-NAME` (`make-test` beside the root script `test`), and is left out when that is
/// taken too.
fn merge(sources: Vec<Source>) -> Vec<InferredCapability> {
    let mut taken: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    for source in sources {
        let mine: Vec<String> = source.capabilities.iter().map(|c| c.name.clone()).collect();
        for mut capability in source.capabilities {
            if taken.contains(&capability.name) {
                let renamed = format!("{}-{}", source.prefix, capability.name);
                // Named like one of this source's own: the source's own name wins.
                if taken.contains(&renamed) || mine.contains(&renamed) {
                    continue;
                }
                capability.name = renamed;
            }
            taken.insert(capability.name.clone());
            out.push(capability);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(name: &str, command: &str) -> InferredCapability {
        InferredCapability {
            name: name.into(),
            command: command.into(),
            description: String::new(),
            persistent: false,
            inputs: None,
            stands_for: None,
            batch: None,
        }
    }

    #[test]
    fn a_later_source_yields_a_shared_name() {
        let merged = merge(vec![
            Source {
                prefix: "npm",
                capabilities: vec![cap("test", "yarn run test")],
            },
            Source {
                prefix: "make",
                capabilities: vec![cap("test", "make test"), cap("lint", "make lint")],
            },
        ]);
        let names: Vec<(&str, &str)> = merged
            .iter()
            .map(|c| (c.name.as_str(), c.command.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("test", "yarn run test"),
                ("make-test", "make test"),
                ("lint", "make lint")
            ]
        );
    }
}
