//! A uv workspace's workspace-wide commands, for the root target: the tools a virtual root
//! (`[tool.uv.workspace]` without a `[project]`, as livekit-agents has) configures, run once
//! for every member (`uv run --all-packages …`), since there is no root project to run them in.
//!
//! Only with a `uv.lock` (`--locked` needs one) and evidence at the root itself, by the same
//! rules as a project's ([`tools`](super::tools)): it must never offer a root command because a
//! member configures a tool, since pytest run from the root reads the root's configuration, not
//! the member's. A root that is a project has these already as its own capabilities, run where
//! its CI runs them (pydantic-ai's `uv run pytest` is its root project's pytest), so it gets
//! none here: the same suite must not run twice. And none stands for the members' capability
//! of its name (`stands_for`), unlike Cargo's: `cargo test --workspace` is exactly every
//! crate's `cargo test`, but what pytest collects from the root is the root's configuration's
//! to say, so leaving out a member's own tests in its favour could skip them.

use super::pyproject;
use super::tools::{self, Runner, Scope};
use crate::discover::{Ecosystem, Inferred, InferredCapability, Reader};

/// The order of the root's commands: Cargo's (`test`, `check`, `lint`, `fmt`).
const ORDER: [&str; 4] = ["test", "check", "lint", "fmt"];

/// What every workspace-wide command reads: the whole repository (the members, and the tests,
/// `conftest.py` and configuration at the root that pytest collects from), less what Python
/// and its tools write while they run, or nothing would ever be cached.
const INPUTS: [&str; 12] = [
    "**",
    "!**/__pycache__/**",
    "!**/*.pyc",
    "!**/.venv/**",
    "!**/.pytest_cache/**",
    "!**/.mypy_cache/**",
    "!**/.ruff_cache/**",
    "!**/.tox/**",
    "!**/.nox/**",
    "!**/*.egg-info/**",
    "!**/dist/**",
    "!**/node_modules/**",
];

/// The root manifest's file and the workspace-wide commands of the uv workspace whose
/// projects are among `found`; `None` unless it has members below the root.
pub(crate) fn workspace_commands(
    reader: &mut Reader,
    found: &[Inferred],
) -> Option<(usize, Vec<InferredCapability>)> {
    let below_root = found
        .iter()
        .any(|t| t.ecosystem == Ecosystem::Python && t.path != ".");
    if !below_root || !reader.exists("uv.lock") {
        return None;
    }
    let file = reader.read("pyproject.toml")?;
    // Discovery parsed it already and warned if it could not: no second warning here.
    let root = pyproject::parse(reader.text(file)).ok()?;
    if root.workspace.is_none() || root.project_offset.is_some() {
        return None;
    }
    let mut commands: Vec<InferredCapability> =
        tools::capabilities(reader, Runner::Uv, ".", Scope::Workspace, &root)
            .into_iter()
            .filter(|c| ORDER.contains(&c.name.as_str()))
            .map(|mut c| {
                c.inputs = Some(INPUTS.map(str::to_string).to_vec());
                c
            })
            .collect();
    commands.sort_by_key(|c| ORDER.iter().position(|n| *n == c.name));
    (!commands.is_empty()).then_some((file, commands))
}
