//! A folder glob with `**` is followed 32 folders deep; a package below that bound is not found,
//! and the walk it cut short is a warning at the glob's own line that names the folder where it
//! stopped and says what to do. Every ecosystem's member globs and `once.toml`'s `members` go
//! through the same walker, so each is checked here on the same 40-folder tree.

use crate::util::TempWs;

/// `deep/n/n/…/n` with `depth` folders below `deep`.
fn deep(depth: usize) -> String {
    format!("deep{}", "/n".repeat(depth))
}

/// The tree every case shares: a package at depth 1, at the bound (32) and past it (40), each
/// holding `file` with `text` (its package name put in for `{}`).
fn tree(file: &str, text: &str) -> Vec<(String, String)> {
    [(1, "near"), (32, "edge"), (40, "far")]
        .into_iter()
        .map(|(depth, name)| (format!("{}/{file}", deep(depth)), text.replace("{}", name)))
        .collect()
}

struct Case {
    /// The root's manifest, naming the glob `deep/**` on line 3.
    root: (&'static str, &'static str),
    /// What each member holds.
    member: (&'static str, &'static str),
    /// The column of the glob on its line.
    column: u32,
    /// What to name the deeper folder in.
    help: &'static str,
}

const CASES: &[Case] = &[
    Case {
        root: (
            "pnpm-workspace.yaml",
            "packages:\n  - 'shallow/*'\n  - 'deep/**'\n",
        ),
        member: (
            "package.json",
            r#"{"name": "{}", "scripts": {"test": "true"}}"#,
        ),
        column: 6,
        help: "a glob of its own",
    },
    Case {
        root: (
            "package.json",
            "{\"name\": \"root\", \"private\": true,\n  \"workspaces\": [\"shallow/*\",\n    \"deep/**\"]}\n",
        ),
        member: (
            "package.json",
            r#"{"name": "{}", "scripts": {"test": "true"}}"#,
        ),
        column: 6,
        help: "a glob of its own",
    },
    Case {
        root: (
            "Cargo.toml",
            "[workspace]\nmembers = [\"shallow/*\",\n  \"deep/**\"]\n",
        ),
        member: ("Cargo.toml", "[package]\nname = \"{}\"\n"),
        column: 4,
        help: "a glob of its own",
    },
    Case {
        root: (
            "pyproject.toml",
            "[tool.uv.workspace]\nmembers = [\"shallow/*\",\n  \"deep/**\"]\n",
        ),
        member: ("pyproject.toml", "[project]\nname = \"{}\"\n"),
        column: 4,
        help: "a glob of its own",
    },
    Case {
        root: (
            "once.toml",
            "[workspace]\nmembers = [\"shallow/*\",\n  \"deep/**\"]\n",
        ),
        member: ("once.toml", "[targets.{}]\nkind = \"command\"\n"),
        column: 3,
        help: "a `members` glob of its own",
    },
];

#[test]
fn a_walk_cut_short_by_the_depth_bound_is_a_warning_at_its_glob() {
    let cut = deep(32);
    for case in CASES {
        let mut files = vec![(case.root.0.to_owned(), case.root.1.to_owned())];
        files.extend(tree(case.member.0, case.member.1));
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        let ws = TempWs::new(&refs).load();
        let names: Vec<&str> = ws.targets().iter().map(|t| t.name.as_str()).collect();
        assert!(
            names.contains(&"near") && names.contains(&"edge") && !names.contains(&"far"),
            "{}: {names:?}",
            case.root.0
        );
        let deep_warnings: Vec<String> = ws
            .diagnostics()
            .iter()
            .filter(|d| d.code == "glob-too-deep")
            .map(ToString::to_string)
            .collect();
        let expected = format!(
            "{file}:3:{column}: warning[glob-too-deep]: folder glob `deep/**` is searched only 32 folders \
             deep and stopped at `{cut}`: nothing below it was found\n  help: name the deeper \
             folder in {help}, like `{cut}/**`",
            file = case.root.0,
            column = case.column,
            help = case.help,
        );
        assert_eq!(deep_warnings, [expected], "{}", case.root.0);
    }
}

#[test]
fn a_walk_within_the_bound_says_nothing() {
    let files = tree("package.json", r#"{"name": "{}"}"#);
    let mut refs: Vec<(&str, &str)> = files
        .iter()
        .filter(|(p, _)| !p.starts_with(&deep(40)))
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    refs.push(("pnpm-workspace.yaml", "packages:\n  - 'deep/**'\n"));
    let ws = TempWs::new(&refs).load();
    assert_eq!(ws.targets().len(), 2);
    assert!(
        ws.diagnostics().iter().all(|d| d.code != "glob-too-deep"),
        "{:?}",
        ws.diagnostics()
    );
}

#[test]
fn go_modules_below_the_bound_are_a_warning_at_the_root_go_mod() {
    // Go has no member glob: every folder below a root `go.mod` is walked, from the root.
    let files = [
        ("go.mod".to_owned(), "module example.com/root\n".to_owned()),
        (
            format!("{}/go.mod", deep(39)),
            "module example.com/far\n".to_owned(),
        ),
    ];
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let ws = TempWs::new(&refs).load();
    assert_eq!(ws.targets().len(), 1, "{:?}", ws.targets());
    let cut = deep(31);
    let deep_warnings: Vec<String> = ws
        .diagnostics()
        .iter()
        .filter(|d| d.code == "glob-too-deep")
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        deep_warnings,
        [format!(
            "go.mod:1:1: warning[glob-too-deep]: folder glob `**` is searched only 32 folders \
             deep and stopped at `{cut}`: nothing below it was found\n  help: list the modules \
             below it in a `go.work` `use` block (`use ./{cut}/…`)"
        )]
    );
}
