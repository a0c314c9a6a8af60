//! Which of pytest, unittest, ruff, pyright, mypy and a build a Python project uses, and the
//! command for each.
//!
//! Truthful: a capability is offered only on evidence in the project itself (its
//! `pyproject.toml`, a config file at its root, the tool among its dependencies), never by
//! default, and only concrete files are looked for (no walk of the tree). A type checker needs
//! its configuration, not just its presence among the dependencies: what it checks is what the
//! configuration says, and a guessed path would check something else. With a `uv.lock` at
//! the root, commands go through `uv run --locked --no-python-downloads`: uv then never
//! rewrites the lock, never downloads a Python, and changes nothing but the project's `.venv`.

use super::ini::section_keys;
use super::pyproject::Pyproject;
use crate::discover::{InferredCapability, Reader};

/// How the workspace runs Python.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Runner {
    /// `uv.lock` at the root: through `uv run`.
    Uv,
    /// The `python3` on the `PATH`.
    Python,
}

/// Whose environment a command runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope<'a> {
    /// The project of this name: `uv run --package NAME`.
    Package(&'a str),
    /// Every member at once, from the root: `uv run --all-packages`. It builds nothing.
    Workspace,
}

/// The capabilities of the project in `folder` (`.` for the root), as `scope` runs them.
pub(super) fn capabilities(
    reader: &mut Reader,
    runner: Runner,
    folder: &str,
    scope: Scope<'_>,
    p: &Pyproject,
) -> Vec<InferredCapability> {
    let exists = |reader: &mut Reader, file: &str| reader.exists(&at(folder, file));
    let dep = |tool: &str| p.deps.iter().any(|(d, _)| d == tool);
    let (run, python) = match (runner, scope) {
        (Runner::Uv, Scope::Package(name)) => (
            format!("uv run --package {name} --locked --no-python-downloads "),
            "python",
        ),
        (Runner::Uv, Scope::Workspace) => (
            "uv run --all-packages --locked --no-python-downloads ".to_string(),
            "python",
        ),
        (Runner::Python, _) => (String::new(), "python3"),
    };
    let mut out = Vec::new();
    // Evidence in the manifest first: a config file is looked for only when it decides.
    let pytest = if p.pytest {
        Some("`[tool.pytest]` in `pyproject.toml`")
    } else if dep("pytest") {
        Some("pytest among the dependencies")
    } else if exists(reader, "pytest.ini") {
        Some("`pytest.ini`")
    } else if exists(reader, "conftest.py") {
        Some("`conftest.py`")
    } else if exists(reader, "tests/conftest.py") {
        Some("`tests/conftest.py`")
    } else if ini(reader, folder, "setup.cfg", "tool:pytest").is_some() {
        Some("`[tool:pytest]` in `setup.cfg`")
    } else if ini(reader, folder, "tox.ini", "pytest").is_some() {
        Some("`[pytest]` in `tox.ini`")
    } else {
        None
    };
    if let Some(why) = pytest {
        out.push(cap(
            "test",
            format!("{run}{python} -m pytest"),
            format!("Run the tests with pytest ({why})"),
        ));
    } else if let Some(dir) = ["tests", "test"]
        .into_iter()
        .find(|d| exists(reader, &format!("{d}/__init__.py")))
    {
        // `python -m unittest` discovers `test*.py` in packages below the folder.
        out.push(cap(
            "test",
            format!("{run}{python} -m unittest"),
            format!("Run the tests with unittest (the `{dir}` package)"),
        ));
    }
    let ruff = if p.ruff {
        Some("`[tool.ruff]` in `pyproject.toml`")
    } else if dep("ruff") {
        Some("ruff among the dependencies")
    } else if exists(reader, "ruff.toml") {
        Some("`ruff.toml`")
    } else if exists(reader, ".ruff.toml") {
        Some("`.ruff.toml`")
    } else {
        None
    };
    if let Some(why) = ruff {
        // ruff needs nothing from the project's environment: the environment's own when it
        // is a dependency (its pinned version), else the one on the `PATH`.
        let via = if dep("ruff") { run.as_str() } else { "" };
        out.push(cap(
            "lint",
            format!("{via}ruff check ."),
            format!("Lint with ruff ({why})"),
        ));
        out.push(cap(
            "fmt",
            format!("{via}ruff format ."),
            format!("Format with ruff ({why})"),
        ));
    }
    let mut checks: Vec<(String, &str)> = Vec::new();
    let pyright = if p.pyright {
        Some("`[tool.pyright]` in `pyproject.toml`")
    } else if exists(reader, "pyrightconfig.json") {
        Some("`pyrightconfig.json`")
    } else {
        None
    };
    if let Some(why) = pyright {
        // pyright checks what its configuration includes: no path on the command line.
        checks.push((format!("{run}pyright"), why));
    }
    if let Some((why, files)) = mypy(reader, folder, p) {
        // With `files` configured, a path on the command line would replace it.
        let path = if files { "" } else { " ." };
        checks.push((format!("{run}{python} -m mypy{path}"), why));
    }
    if !checks.is_empty() {
        // One `check` runs every checker the project configures: green means all of them are.
        let (commands, whys): (Vec<String>, Vec<&str>) = checks.into_iter().unzip();
        out.push(cap(
            "check",
            commands.join(" && "),
            format!("Type-check ({})", whys.join(", ")),
        ));
    }
    if p.build_system && scope != Scope::Workspace {
        // `uv build` writes to the workspace root's `dist/` unless told: the kind's output
        // is the project's own `dist/`.
        let command = match runner {
            Runner::Uv => "uv build --no-python-downloads --out-dir dist".to_string(),
            Runner::Python => "python3 -m build".to_string(),
        };
        out.push(cap(
            "build",
            command,
            "Build the sdist and wheel (`[build-system]`)".to_string(),
        ));
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// `file` in the project's folder, relative to the workspace root.
fn at(folder: &str, file: &str) -> String {
    if folder == "." {
        file.to_string()
    } else {
        format!("{folder}/{file}")
    }
}

/// The keys of section `[section]` of the INI file `file` in the project's folder, if any.
fn ini(reader: &mut Reader, folder: &str, file: &str, section: &str) -> Option<Vec<String>> {
    let read = reader.read(&at(folder, file))?;
    section_keys(reader.text(read), section)
}

/// Where the project configures mypy, and whether that configuration names the `files` to
/// check; `None` when it does not.
fn mypy(reader: &mut Reader, folder: &str, p: &Pyproject) -> Option<(&'static str, bool)> {
    if p.mypy {
        return Some(("`[tool.mypy]` in `pyproject.toml`", p.mypy_files));
    }
    // mypy's own order: `mypy.ini`, `.mypy.ini`, then `setup.cfg`.
    for (file, why) in [
        ("mypy.ini", "`mypy.ini`"),
        (".mypy.ini", "`.mypy.ini`"),
        ("setup.cfg", "`[mypy]` in `setup.cfg`"),
    ] {
        if let Some(keys) = ini(reader, folder, file, "mypy") {
            return Some((why, keys.iter().any(|k| k == "files")));
        }
    }
    None
}

fn cap(name: &str, command: String, description: String) -> InferredCapability {
    InferredCapability {
        name: name.to_string(),
        command,
        description,
        persistent: false,
        inputs: None,
        stands_for: None,
        batch: None,
    }
}
