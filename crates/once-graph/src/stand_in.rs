//! Workspace-wide capabilities that stand in for every package of one ecosystem: which of the
//! two a selection runs, so the same tests never run twice in one request.
//!
//! The root's `cargo nextest run --workspace` does what each crate's `cargo test` does, at once
//! and faster. Asked for every target's `test` (`--all test`), a run takes the workspace-wide
//! action and leaves out the packages it stands for; asked for what a change affects
//! (`--affected test`), it takes the affected packages and leaves out the workspace-wide action,
//! whose key every member's change moves. It must never leave out an action unless the other
//! side runs in its place: a stand-in is dropped only when a package it stands for is picked,
//! and a package only when its stand-in is.

use crate::ecosystem::Ecosystem;
use crate::model::Target;

/// Which side of a stand-in a selection keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefer {
    /// The workspace-wide action (`--all CAP`).
    WorkspaceWide,
    /// The packages' own actions (`--affected CAP`: only those a change reaches).
    Packages,
}

/// Removes from `picked` (`(target, capability)` indices into `targets`) the actions the other
/// side of a stand-in covers, as `prefer` says.
pub fn settle(targets: &[Target], picked: &mut Vec<(usize, usize)>, prefer: Prefer) {
    let stands_for = |&(t, c): &(usize, usize)| -> Option<(Ecosystem, &str)> {
        let capability = targets.get(t)?.capabilities.get(c)?;
        Some((capability.stands_for?, &*capability.name))
    };
    let is_package_of = |&(t, c): &(usize, usize), (ecosystem, name): (Ecosystem, &str)| {
        targets.get(t).is_some_and(|target| {
            target
                .inference
                .as_ref()
                .is_some_and(|i| i.ecosystem == ecosystem)
                && target
                    .capabilities
                    .get(c)
                    .is_some_and(|cap| &*cap.name == name)
        })
    };
    let stand_ins: Vec<(Ecosystem, &str)> = picked.iter().filter_map(stands_for).collect();
    if stand_ins.is_empty() {
        return;
    }
    match prefer {
        Prefer::WorkspaceWide => picked.retain(|pick| {
            stands_for(pick).is_some() || !stand_ins.iter().any(|s| is_package_of(pick, *s))
        }),
        Prefer::Packages => {
            let covered: Vec<(Ecosystem, &str)> = stand_ins
                .iter()
                .copied()
                .filter(|s| picked.iter().any(|pick| is_package_of(pick, *s)))
                .collect();
            picked.retain(|pick| stands_for(pick).is_none_or(|s| !covered.contains(&s)));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::*;
    use crate::model::{Capability, Inference, Origin};
    use crate::template::Template;

    fn capability(name: &str, stands_for: Option<Ecosystem>) -> Capability {
        Capability {
            name: name.into(),
            description: None,
            command: "true".into(),
            template: Arc::new(Template::parse("true").unwrap()),
            params: Arc::new([]),
            inputs: Arc::new([]),
            outputs: Arc::new([]),
            env: BTreeMap::new(),
            deadline: std::time::Duration::from_secs(1),
            pass_env: Arc::new([]),
            env_file: None,
            cache: true,
            persistent: false,
            placement: crate::model::Placement::default(),
            retries: 0,
            mutex: None,
            needs: None,
            stands_for,
            batch: None,
            origin: Origin::Inferred,
        }
    }

    fn target(name: &str, ecosystem: Ecosystem, caps: Vec<Capability>) -> Target {
        Target {
            name: name.into(),
            kind: "command".into(),
            path: name.into(),
            description: None,
            tags: Vec::new(),
            fields: BTreeMap::new(),
            evaluator: None,
            capabilities: caps.into(),
            inference: Some(Arc::new(Inference {
                ecosystem,
                edges: Vec::new(),
                folder_edges: Vec::new(),
                unordered: Vec::new(),
                source: (0, 0),
                overlay: None,
            })),
            file: 0,
            offset: 0,
        }
    }

    /// a and b are crates, root stands for their `test`, web is an npm package.
    fn targets() -> Vec<Target> {
        vec![
            target("a", Ecosystem::Cargo, vec![capability("test", None)]),
            target("b", Ecosystem::Cargo, vec![capability("test", None)]),
            target(
                "root",
                Ecosystem::Workspace,
                vec![capability("test", Some(Ecosystem::Cargo))],
            ),
            target("web", Ecosystem::JavaScript, vec![capability("test", None)]),
        ]
    }

    #[test]
    fn all_runs_the_workspace_wide_action_in_place_of_the_packages() {
        let targets = targets();
        let mut picked = vec![(0, 0), (1, 0), (2, 0), (3, 0)];
        settle(&targets, &mut picked, Prefer::WorkspaceWide);
        assert_eq!(picked, [(2, 0), (3, 0)]);
    }

    #[test]
    fn affected_runs_the_packages_in_place_of_the_workspace_wide_action() {
        let targets = targets();
        let mut picked = vec![(1, 0), (2, 0), (3, 0)];
        settle(&targets, &mut picked, Prefer::Packages);
        assert_eq!(picked, [(1, 0), (3, 0)]);
    }

    #[test]
    fn a_stand_in_alone_stays_either_way() {
        let targets = targets();
        for prefer in [Prefer::WorkspaceWide, Prefer::Packages] {
            let mut picked = vec![(2, 0), (3, 0)];
            settle(&targets, &mut picked, prefer);
            assert_eq!(picked, [(2, 0), (3, 0)]);
        }
    }
}
