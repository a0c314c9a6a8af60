//! What discovery needs from one `pyproject.toml`: the project's name, its dependencies by
//! kind, uv's workspace and sources, and which tools it configures.
//!
//! Pure: it reads text and answers; it must never touch the file system or fail on a
//! dependency string it cannot read (that entry is skipped, as a build tool would complain).

use toml::Spanned;
use toml::de::{DeArray, DeTable, DeValue};

use crate::discover::EdgeKind;

/// One parsed `pyproject.toml`.
#[derive(Debug, Clone, Default)]
pub(super) struct Pyproject {
    /// `[project] name` as written, with the byte offset of its value.
    pub name: Option<(String, usize)>,
    /// Byte offset of the `[project]` table (where a missing name is reported).
    pub project_offset: Option<usize>,
    /// Whether `[project] dynamic` lists `dependencies` or `optional-dependencies`: a build
    /// hook fills them in, and `deps` lacks them.
    pub dynamic_deps: bool,
    /// Every dependency's normalised name, with the kind of list it is in.
    pub deps: Vec<(String, EdgeKind)>,
    /// `[tool.uv.sources]`, keyed by normalised name.
    pub sources: Vec<(String, Source)>,
    /// `[tool.uv.workspace]`: member globs, exclude globs, and the table's offset.
    pub workspace: Option<Workspace>,
    /// `[tool.pytest.ini_options]` or `[tool.pytest]`.
    pub pytest: bool,
    /// `[tool.ruff]`.
    pub ruff: bool,
    /// `[tool.mypy]`.
    pub mypy: bool,
    /// `[tool.mypy] files`: mypy then needs no path on its command line.
    pub mypy_files: bool,
    /// `[tool.pyright]`.
    pub pyright: bool,
    /// `[build-system]`.
    pub build_system: bool,
}

/// `[tool.uv.workspace]`.
#[derive(Debug, Clone, Default)]
pub(super) struct Workspace {
    pub members: Vec<String>,
    pub exclude: Vec<String>,
    pub offset: usize,
}

/// Where a `[tool.uv.sources]` entry takes a dependency from, when it can be a member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Source {
    /// `{ workspace = true }`: the member of that name.
    Workspace,
    /// `{ path = "…" }`: the folder, relative to the file declaring it.
    Path(String),
    /// A git repository, a URL, an index: not the workspace.
    Elsewhere,
}

/// Parses `text`; `Err` holds the offset and message of the first syntax error.
pub(super) fn parse(text: &str) -> Result<Pyproject, (usize, String)> {
    let doc = DeTable::parse(text).map_err(|e| {
        (
            e.span().map_or(0, |s| s.start),
            e.message().trim().to_string(),
        )
    })?;
    let doc = doc.get_ref();
    let mut out = Pyproject::default();
    if let Some(project) = doc.get("project") {
        out.project_offset = Some(project.span().start);
        let project = project.get_ref().as_table();
        if let Some(name) = project.and_then(|p| p.get("name"))
            && let Some(s) = name.get_ref().as_str()
        {
            out.name = Some((s.to_string(), name.span().start));
        }
        out.dynamic_deps = strings(project.and_then(|p| p.get("dynamic")))
            .iter()
            .any(|d| matches!(d.as_str(), "dependencies" | "optional-dependencies"));
        let deps = project.and_then(|p| p.get("dependencies"));
        push_deps(&mut out.deps, deps, EdgeKind::Normal);
        for (_, list) in tables(project.and_then(|p| p.get("optional-dependencies"))) {
            push_deps(&mut out.deps, Some(list), EdgeKind::Optional);
        }
    }
    for (_, list) in tables(doc.get("dependency-groups")) {
        push_deps(&mut out.deps, Some(list), EdgeKind::Dev);
    }
    let tool = table(doc.get("tool"));
    let uv = table(tool.and_then(|t| t.get("uv")));
    push_deps(
        &mut out.deps,
        uv.and_then(|u| u.get("dev-dependencies")),
        EdgeKind::Dev,
    );
    for (key, value) in tables(uv.and_then(|u| u.get("sources"))) {
        let entries: Vec<&DeTable<'_>> = match value.get_ref() {
            DeValue::Table(t) => vec![t],
            DeValue::Array(a) => a.iter().filter_map(|v| v.get_ref().as_table()).collect(),
            _ => Vec::new(),
        };
        for entry in entries {
            let path = entry.get("path").and_then(|p| p.get_ref().as_str());
            let source = if entry.get("workspace").and_then(|w| w.get_ref().as_bool()) == Some(true)
            {
                Source::Workspace
            } else if let Some(path) = path {
                Source::Path(path.to_string())
            } else {
                Source::Elsewhere
            };
            out.sources.push((normalize(key), source));
        }
    }
    if let Some(ws) = uv.and_then(|u| u.get("workspace")) {
        let t = ws.get_ref().as_table();
        out.workspace = Some(Workspace {
            members: strings(t.and_then(|t| t.get("members"))),
            exclude: strings(t.and_then(|t| t.get("exclude"))),
            offset: ws.span().start,
        });
    }
    let has = |name: &str| tool.is_some_and(|t| t.get(name).is_some());
    let pytest = table(tool.and_then(|t| t.get("pytest")));
    // pytest 9 reads `[tool.pytest]` itself; older ones only `[tool.pytest.ini_options]`.
    out.pytest = pytest.is_some();
    out.ruff = has("ruff");
    out.mypy = has("mypy");
    out.mypy_files =
        table(tool.and_then(|t| t.get("mypy"))).is_some_and(|m| m.get("files").is_some());
    out.pyright = has("pyright");
    out.build_system = doc.get("build-system").is_some();
    Ok(out)
}

fn table<'a, 'i>(v: Option<&'a Spanned<DeValue<'i>>>) -> Option<&'a DeTable<'i>> {
    v.and_then(|v| v.get_ref().as_table())
}

/// The entries of a table value (none when it is absent or not a table).
fn tables<'a, 'i>(
    v: Option<&'a Spanned<DeValue<'i>>>,
) -> impl Iterator<Item = (&'a str, &'a Spanned<DeValue<'i>>)> {
    table(v)
        .into_iter()
        .flat_map(|t| t.iter().map(|(k, v)| (k.get_ref().as_ref(), v)))
}

fn array<'a, 'i>(v: Option<&'a Spanned<DeValue<'i>>>) -> Option<&'a DeArray<'i>> {
    v.and_then(|v| v.get_ref().as_array())
}

fn strings(v: Option<&Spanned<DeValue<'_>>>) -> Vec<String> {
    array(v)
        .into_iter()
        .flat_map(|a| a.iter())
        .filter_map(|v| v.get_ref().as_str().map(str::to_string))
        .collect()
}

/// Adds the names of a list of PEP 508 requirements; tables (`{ include-group = … }`) are
/// skipped: the group they include is read on its own.
fn push_deps(
    out: &mut Vec<(String, EdgeKind)>,
    list: Option<&Spanned<DeValue<'_>>>,
    kind: EdgeKind,
) {
    for item in array(list).into_iter().flat_map(|a| a.iter()) {
        if let Some(name) = item.get_ref().as_str().and_then(requirement_name) {
            out.push((name, kind));
        }
    }
}

/// The normalised name of a PEP 508 requirement (`Foo_Bar[x]>=1; python_version<'3.12'` is
/// `foo-bar`); `None` when it does not start with a name.
pub(super) fn requirement_name(req: &str) -> Option<String> {
    let req = req.trim_start();
    let end = req
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(req.len());
    let name = &req[..end];
    valid_name(name).then(|| normalize(name))
}

/// PEP 503 normalisation: lowercase, each run of `-`, `_` and `.` one `-`.
pub(super) fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut sep = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            sep = true;
        } else {
            if sep && !out.is_empty() {
                out.push('-');
            }
            sep = false;
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// A valid distribution name (PEP 508): ASCII letters and digits, with `-`, `_` and `.`
/// inside. It is what lets a name go into a shell command unquoted.
pub(super) fn valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirement_names_per_pep_508() {
        let cases = [
            (
                "livekit-agents[codecs, images]>=1.7.0",
                Some("livekit-agents"),
            ),
            ("Foo_Bar.baz ; python_version < '3.12'", Some("foo-bar-baz")),
            ("  pkg@ file:///x", Some("pkg")),
            ("a>=1", Some("a")),
            ("-x", None),
            ("", None),
            ("[x]", None),
            ("ünï", None),
        ];
        for (req, want) in cases {
            assert_eq!(requirement_name(req).as_deref(), want, "{req}");
        }
        assert_eq!(normalize("A.-_b__C"), "a-b-c");
        assert!(valid_name("a.b-c_d1"));
        assert!(!valid_name("a;rm -rf"));
        assert!(!valid_name("a-"));
    }

    #[test]
    fn reads_every_kind_of_dependency_and_source() {
        let text = r#"
[project]
name = "My_App"
dependencies = ["lib[x]>=1", "requests"]
[project.optional-dependencies]
extra = ["Plugin.One>=2"]
[dependency-groups]
dev = ["pytest>=8", { include-group = "lint" }]
lint = ["ruff"]
[tool.uv]
dev-dependencies = ["mypy"]
[tool.uv.sources]
lib = { workspace = true }
plugin-one = [{ path = "../plugin", marker = "sys_platform == 'linux'" }, { index = "x" }]
requests = { git = "https://example.com/requests" }
[tool.uv.workspace]
members = ["packages/*"]
exclude = ["packages/old"]
[tool.pytest.ini_options]
addopts = "-q"
[build-system]
requires = ["hatchling"]
"#;
        let p = parse(text).unwrap();
        let (name, at) = p.name.clone().unwrap();
        assert_eq!(name, "My_App");
        assert!(text[at..].starts_with("\"My_App\""));
        assert_eq!(
            p.deps,
            [
                ("lib".to_string(), EdgeKind::Normal),
                ("requests".to_string(), EdgeKind::Normal),
                ("plugin-one".to_string(), EdgeKind::Optional),
                ("pytest".to_string(), EdgeKind::Dev),
                ("ruff".to_string(), EdgeKind::Dev),
                ("mypy".to_string(), EdgeKind::Dev),
            ]
        );
        assert_eq!(
            p.sources,
            [
                ("lib".to_string(), Source::Workspace),
                ("plugin-one".to_string(), Source::Path("../plugin".into())),
                ("plugin-one".to_string(), Source::Elsewhere),
                ("requests".to_string(), Source::Elsewhere),
            ]
        );
        let ws = p.workspace.unwrap();
        assert_eq!(
            (ws.members, ws.exclude),
            (
                vec!["packages/*".to_string()],
                vec!["packages/old".to_string()]
            )
        );
        assert!(p.pytest && !p.ruff && !p.mypy && p.build_system);
    }

    #[test]
    fn a_syntax_error_has_an_offset_and_odd_values_are_skipped() {
        let (at, message) = parse("[project]\nname = \n").unwrap_err();
        assert!(at > 0 && !message.is_empty(), "{at} {message}");
        let p = parse("project = 3\ntool = \"x\"\n[dependency-groups]\ndev = 1\n").unwrap();
        assert!(p.name.is_none() && p.deps.is_empty());
    }
}
