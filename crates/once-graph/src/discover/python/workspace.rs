//! A uv workspace's workspace-wide commands, for the root target: the tools the root
//! configures, run once for every member (`uv run --all-packages …`), as contributors run
//! `uv run pytest` from the root (pydantic-ai's CI does).
//!
//! Only with a root `[tool.uv.workspace]`, a `uv.lock` (`--locked` needs one) and evidence at
//! the root itself, by the same rules as a project's ([`tools`](super::tools)): it must never
//! offer a root command because a member configures a tool, since pytest run from the root
//! reads the root's configuration, not the member's.

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
    root.workspace.as_ref()?;
    let mut commands: Vec<InferredCapability> =
        tools::capabilities(reader, Runner::Uv, ".", Scope::Workspace, &root)
            .into_iter()
            .filter(|c| ORDER.contains(&c.name.as_str()))
            .map(|mut c| {
                c.inputs = Some(INPUTS.map(str::to_string).to_vec());
                // `--all test` runs this once instead of each member's; `--affected test`
                // the affected members' own.
                c.stands_for = Some(Ecosystem::Python);
                c
            })
            .collect();
    commands.sort_by_key(|c| ORDER.iter().position(|n| *n == c.name));
    (!commands.is_empty()).then_some((file, commands))
}
