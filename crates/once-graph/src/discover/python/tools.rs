//! Which of pytest, unittest, ruff, mypy and a build a Python project uses, and the command
//! for each.
//!
//! Truthful: a capability is offered only on evidence in the project itself (its
//! `pyproject.toml`, a config file at its root, the tool among its dependencies), never by
//! default, and only concrete files are looked for (no walk of the tree). With a `uv.lock` at
//! the root, commands go through `uv run --locked --no-python-downloads`: uv then never
//! rewrites the lock, never downloads a Python, and changes nothing but the project's `.venv`.

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

/// The capabilities of the project named `name` in `folder` (`.` for the root).
pub(super) fn capabilities(
    reader: &mut Reader,
    runner: Runner,
    folder: &str,
    name: &str,
    p: &Pyproject,
) -> Vec<InferredCapability> {
    let mut exists = |file: &str| {
        let rel = if folder == "." {
            file.to_string()
        } else {
            format!("{folder}/{file}")
        };
        reader.exists(&rel)
    };
    let dep = |tool: &str| p.deps.iter().any(|(d, _)| d == tool);
    let (run, python) = match runner {
        Runner::Uv => (
            format!("uv run --package {name} --locked --no-python-downloads "),
            "python",
        ),
        Runner::Python => (String::new(), "python3"),
    };
    let mut out = Vec::new();
    // Evidence in the manifest first: a config file is looked for only when it decides.
    let pytest = if p.pytest {
        Some("`[tool.pytest]` in `pyproject.toml`")
    } else if dep("pytest") {
        Some("pytest among the dependencies")
    } else if exists("pytest.ini") {
        Some("`pytest.ini`")
    } else if exists("conftest.py") {
        Some("`conftest.py`")
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
        .find(|d| exists(&format!("{d}/__init__.py")))
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
    } else if exists("ruff.toml") {
        Some("`ruff.toml`")
    } else if exists(".ruff.toml") {
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
    let mypy = if p.mypy {
        Some("`[tool.mypy]` in `pyproject.toml`")
    } else if dep("mypy") {
        Some("mypy among the dependencies")
    } else if exists("mypy.ini") {
        Some("`mypy.ini`")
    } else if exists(".mypy.ini") {
        Some("`.mypy.ini`")
    } else {
        None
    };
    if let Some(why) = mypy {
        out.push(cap(
            "check",
            format!("{run}{python} -m mypy ."),
            format!("Type-check with mypy ({why})"),
        ));
    }
    if p.build_system {
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
