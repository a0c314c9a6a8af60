use std::path::Path;
use std::time::Instant;

use serde_json::Value;

use super::discover;
use crate::discover::name_at;
use crate::discover::scratch::Scratch;
use crate::discover::{EdgeKind, Inferred, Reader};
use crate::manifest::valid_name;

fn run(root: &Path) -> (Vec<Inferred>, Reader) {
    let mut reader = Reader::new(root);
    let found = discover(&mut reader);
    (found, reader)
}

fn names(found: &[Inferred]) -> Vec<(&str, &str)> {
    found
        .iter()
        .map(|t| (t.name.as_str(), t.path.as_str()))
        .collect()
}

fn target<'a>(found: &'a [Inferred], name: &str) -> &'a Inferred {
    found
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no target `{name}` in {:?}", names(found)))
}

/// `t`'s edges as (target name, kind), sorted by name; `t` is one of `found`.
fn edges<'a>(found: &'a [Inferred], t: &Inferred) -> Vec<(&'a str, EdgeKind)> {
    let mut edges: Vec<(&str, EdgeKind)> = t
        .edges
        .iter()
        .map(|e| (name_at(found, &e.folder), e.kind))
        .collect();
    edges.sort_unstable();
    edges
}

fn caps(t: &Inferred) -> Vec<(&str, &str, bool)> {
    t.capabilities
        .as_ref()
        .expect("scripts are exact capabilities")
        .iter()
        .map(|c| (c.name.as_str(), c.command.as_str(), c.persistent))
        .collect()
}

fn warnings(reader: &Reader) -> Vec<String> {
    reader
        .diagnostics
        .iter()
        .map(|d| format!("{}: {}: {}", d.file, d.code, d.message))
        .collect()
}

#[test]
fn a_single_package_is_a_target_at_the_root() {
    let t = Scratch::new(&[(
        "package.json",
        r#"{"name": "@acme/web", "version": "1.0.0",
            "scripts": {"build": "tsc -b", "test": "vitest run"}}"#,
    )]);
    let (found, reader) = run(&t.0);
    assert_eq!(names(&found), [("acme-web", ".")]);
    let web = &found[0];
    assert_eq!(web.kind, "npm-package");
    assert_eq!(web.fields["package"], "@acme/web");
    assert_eq!(
        caps(web),
        [
            ("build", "npm run build", false),
            ("test", "npm run test", false)
        ]
    );
    assert_eq!(
        web.capabilities.as_ref().unwrap()[0].description,
        "the `build` script: `tsc -b`"
    );
    assert_eq!(reader.rel(web.file), "package.json");
    assert_eq!(
        &reader.text(web.file)[web.offset..web.offset + 6],
        "\"name\""
    );
    assert!(warnings(&reader).is_empty(), "{:?}", warnings(&reader));
    // No package.json at all: nothing, and its absence is recorded.
    let empty = Scratch::new(&[]);
    let (found, reader) = run(&empty.0);
    assert!(found.is_empty());
    assert!(reader.absent.iter().any(|a| a == "package.json"));
}

#[test]
fn npm_workspaces_make_members_targets_and_never_the_root() {
    let t = Scratch::new(&[
        (
            "package.json",
            r#"{"name": "root", "private": true, "workspaces": ["packages/*", "./apps/web/"],
                "scripts": {"build": "turbo run build"},
                "devDependencies": {"a": "*"}}"#,
        ),
        (
            "packages/a/package.json",
            r#"{"author": {"name": "x"}, "name": "a", "version": "1.2.3",
                "dependencies": {"b": "^1.0.0", "left-pad": "^1.3.0", "a": "*"},
                "devDependencies": {"@s/c": "workspace:*"},
                "scripts": {"build": "tsc"}}"#,
        ),
        (
            "packages/b/package.json",
            r#"{"name": "b", "version": "1.0.0",
                "peerDependencies": {"a": "^1"},
                "optionalDependencies": {"cc": "npm:@s/c@^2.0.0"}}"#,
        ),
        (
            "packages/c/package.json",
            r#"{"name": "@s/c", "version": "2.0.0",
                "dependencies": {"anything": "link:../b", "tar": "file:../a"}}"#,
        ),
        (
            "apps/web/package.json",
            r#"{"name": "web", "dependencies": {"a": "workspace:^", "b": "*"},
                "devDependencies": {"a": "*"}, "peerDependencies": {"b": "*"}}"#,
        ),
        ("packages/not-a-package/README.md", "no package.json here"),
    ]);
    let (found, reader) = run(&t.0);
    assert!(warnings(&reader).is_empty(), "{:?}", warnings(&reader));
    assert_eq!(
        names(&found),
        [
            ("a", "packages/a"),
            ("b", "packages/b"),
            ("s-c", "packages/c"),
            ("web", "apps/web")
        ]
    );
    let a = target(&found, "a");
    assert_eq!(
        edges(&found, a),
        [("b", EdgeKind::Normal), ("s-c", EdgeKind::Dev)]
    );
    assert_eq!(&reader.text(a.file)[a.offset..a.offset + 9], "\"name\": \"");
    assert_eq!(reader.rel(a.file), "packages/a/package.json");
    let b = target(&found, "b");
    assert_eq!(
        edges(&found, b),
        [("a", EdgeKind::Optional), ("s-c", EdgeKind::Optional)]
    );
    let c = target(&found, "s-c");
    assert_eq!(
        edges(&found, c),
        [("a", EdgeKind::Normal), ("b", EdgeKind::Normal)]
    );
    // Listed as both a dependency and a dev or peer one: the strongest kind wins.
    let web = target(&found, "web");
    assert_eq!(
        edges(&found, web),
        [("a", EdgeKind::Normal), ("b", EdgeKind::Normal)]
    );
    assert_eq!(caps(web), []);
}

/// A package `a` that peers on `b` and on `c`, and lists `c` as a dev dependency too, in a
/// workspace whose package manager `extra` names.
fn peering_workspace(extra: &[(&'static str, &'static str)]) -> Scratch {
    let mut files = vec![
        (
            "packages/a/package.json",
            r#"{"name": "a", "peerDependencies": {"b": "*", "c": "*"},
                "devDependencies": {"c": "workspace:*"}}"#,
        ),
        ("packages/b/package.json", r#"{"name": "b"}"#),
        ("packages/c/package.json", r#"{"name": "c"}"#),
    ];
    files.extend_from_slice(extra);
    Scratch::new(&files)
}

#[test]
fn pnpm_installs_a_peer_so_it_is_a_normal_edge() {
    // pnpm's `auto-install-peers` (on by default) links a peer that is a member; its lockfile
    // lists it under the importer's `dependencies` (vue's `@vue/compat` peers on `vue`).
    let t = peering_workspace(&[("pnpm-workspace.yaml", "packages:\n  - packages/*\n")]);
    let (found, reader) = run(&t.0);
    assert!(warnings(&reader).is_empty(), "{:?}", warnings(&reader));
    assert_eq!(
        edges(&found, target(&found, "a")),
        [("b", EdgeKind::Normal), ("c", EdgeKind::Dev)]
    );
}

#[test]
fn yarn_never_installs_a_peer_so_it_is_no_edge() {
    // yarn leaves a package's peers to whoever depends on it; its lockfile keeps them apart
    // from the workspace's `dependencies` (babel's `@babel/eslint-plugin` peers on the parser).
    let t = peering_workspace(&[(
        "package.json",
        r#"{"private": true, "packageManager": "yarn@4.9.1", "workspaces": ["packages/*"]}"#,
    )]);
    let (found, reader) = run(&t.0);
    assert!(warnings(&reader).is_empty(), "{:?}", warnings(&reader));
    assert_eq!(edges(&found, target(&found, "a")), [("c", EdgeKind::Dev)]);
}

#[test]
fn yarn_object_workspaces_and_lockfiles_choose_the_package_manager() {
    let files = [
        (
            "package.json",
            r#"{"workspaces": {"packages": ["pkgs/*"], "nohoist": ["**/x"]}}"#,
        ),
        (
            "pkgs/one/package.json",
            r#"{"name": "one", "scripts": {"lint": "eslint ."}}"#,
        ),
    ];
    let cases: [(&[(&str, &str)], &str); 7] = [
        (&[], "npm run lint"),
        (&[("yarn.lock", "")], "yarn run lint"),
        (
            &[("pnpm-lock.yaml", ""), ("yarn.lock", "")],
            "pnpm run lint",
        ),
        (&[("bun.lock", "{}")], "bun run lint"),
        (&[("package-lock.json", "{}")], "npm run lint"),
        (&[("npm-shrinkwrap.json", "{}")], "npm run lint"),
        (
            &[("pnpm-workspace.yaml", "catalog:\n  x: 1\n")],
            "pnpm run lint",
        ),
    ];
    for (extra, command) in cases {
        let t = Scratch::new(&files);
        for (rel, text) in extra {
            t.write(rel, text.as_bytes());
        }
        let (found, reader) = run(&t.0);
        assert_eq!(names(&found), [("one", "pkgs/one")], "{extra:?}");
        assert_eq!(caps(&found[0]), [("lint", command, false)], "{extra:?}");
        assert!(warnings(&reader).is_empty(), "{:?}", warnings(&reader));
    }
    // A binary `bun.lockb` counts, without a warning that it is not text.
    let t = Scratch::new(&files);
    t.write("bun.lockb", [0xff, 0xfe, 0x00, 0x9c]);
    let (found, reader) = run(&t.0);
    assert_eq!(caps(&found[0]), [("lint", "bun run lint", false)]);
    assert!(warnings(&reader).is_empty(), "{:?}", warnings(&reader));
    // A lockfile looked for and absent is recorded, so its appearing reloads the graph.
    let t = Scratch::new(&files);
    let (_, reader) = run(&t.0);
    assert!(reader.absent.iter().any(|a| a == "pnpm-lock.yaml"));
    assert!(reader.absent.iter().any(|a| a == "yarn.lock"));
}

#[test]
fn the_package_manager_field_wins_over_lockfiles() {
    for (field, command) in [
        ("pnpm@9.1.0", "pnpm run build"),
        ("yarn@4.1.0+sha256.abc", "yarn run build"),
        ("bun@1.1.0", "bun run build"),
        ("npm@10.0.0", "npm run build"),
    ] {
        let manifest =
            format!(r#"{{"name": "x", "packageManager": "{field}", "scripts": {{"build": "b"}}}}"#);
        let t = Scratch::new(&[("package.json", &manifest), ("yarn.lock", "")]);
        let (found, _) = run(&t.0);
        assert_eq!(caps(&found[0]), [("build", command, false)], "{field}");
    }
}

#[test]
fn pnpm_workspaces_come_from_pnpm_workspace_yaml() {
    let t = Scratch::new(&[
        (
            "package.json",
            r#"{"name": "mono", "workspaces": ["ignored/*"], "scripts": {"build": "pnpm -r build"}}"#,
        ),
        ("lib/src/__tests__/package.json", r#"{"name": "lib-tests"}"#),
        (
            "lib/src/__tests__/fixture/package.json",
            r#"{"name": "lib-fixture"}"#,
        ),
        (
            "lib/src/__tests__x/package.json",
            r#"{"name": "not-tests"}"#,
        ),
        (
            "pnpm-workspace.yaml",
            "# the workspace\npackages:\n  - 'lib/**/__tests__/**'\n\n  - 'packages/*'   # libraries\n  - \"apps/**\"\n  - docs\n  - '!**/test/**'\n\ncatalog:\n  react: ^18\n",
        ),
        ("pnpm-lock.yaml", "lockfileVersion: '9.0'\n"),
        ("packages/ui/package.json", r#"{"name": "@m/ui"}"#),
        ("packages/ui/test/package.json", r#"{"name": "ui-test"}"#),
        (
            "apps/site/package.json",
            r#"{"name": "site", "dependencies": {"@m/ui": "workspace:*", "docs": "workspace:^"}}"#,
        ),
        ("apps/site/test/package.json", r#"{"name": "site-test"}"#),
        ("apps/site/nested/deep/package.json", r#"{"name": "deep"}"#),
        (
            "docs/package.json",
            r#"{"name": "docs", "scripts": {"dev": "vitepress"}}"#,
        ),
        ("ignored/x/package.json", r#"{"name": "ignored"}"#),
    ]);
    let (found, reader) = run(&t.0);
    assert!(warnings(&reader).is_empty(), "{:?}", warnings(&reader));
    assert_eq!(
        names(&found),
        [
            ("deep", "apps/site/nested/deep"),
            ("docs", "docs"),
            ("lib-fixture", "lib/src/__tests__/fixture"),
            ("lib-tests", "lib/src/__tests__"),
            ("m-ui", "packages/ui"),
            ("site", "apps/site"),
        ]
    );
    assert_eq!(
        edges(&found, target(&found, "site")),
        [("docs", EdgeKind::Normal), ("m-ui", EdgeKind::Normal)]
    );
    assert_eq!(
        caps(target(&found, "docs")),
        [("dev", "pnpm run dev", true)]
    );
    // The flow form.
    let t = Scratch::new(&[
        ("pnpm-workspace.yaml", "packages: ['a/*', \"b\"] # two\n"),
        ("a/one/package.json", r#"{"name": "one"}"#),
        ("b/package.json", r#"{"name": "two"}"#),
    ]);
    let (found, reader) = run(&t.0);
    assert!(warnings(&reader).is_empty(), "{:?}", warnings(&reader));
    assert_eq!(names(&found), [("one", "a/one"), ("two", "b")]);
}

#[test]
fn manifests_that_cannot_be_read_are_warnings_and_the_rest_goes_on() {
    let t = Scratch::new(&[
        ("package.json", r#"{"workspaces": ["p/*"]}"#),
        (
            "p/good/package.json",
            r#"{"name": "good", "dependencies": {"bad": "*"}}"#,
        ),
        ("p/bad/package.json", r#"{"name": "bad", "#),
        ("p/list/package.json", r#"["not", "an", "object"]"#),
        ("p/bom/package.json", "\u{feff}{\"name\": \"bom\"}"),
    ]);
    let (found, reader) = run(&t.0);
    // A byte order mark is no reason to skip a package (npm reads it).
    assert_eq!(names(&found), [("bom", "p/bom"), ("good", "p/good")]);
    assert_eq!(edges(&found, &found[1]), []);
    let bom = &found[0];
    assert_eq!(
        &reader.text(bom.file)[bom.offset..bom.offset + 6],
        "\"name\""
    );
    let w = warnings(&reader);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].starts_with("p/bad/package.json: "), "{w:?}");
    assert!(w[1].starts_with("p/list/package.json: "), "{w:?}");

    // A root that is not JSON: no targets, one warning.
    let t = Scratch::new(&[("package.json", "{ oops")]);
    let (found, reader) = run(&t.0);
    assert!(found.is_empty());
    assert_eq!(warnings(&reader).len(), 1);

    // A `pnpm-workspace.yaml` outside the shape discovery reads: a warning, and no targets
    // rather than the root's recursive scripts as a target.
    for yaml in [
        "packages:\n  - 'unterminated\n",
        "packages:\n  - a: b\n",
        "packages: packages/*\n",
        "packages: ['a', \n",
        "packages:\n  - [x]\n",
    ] {
        let t = Scratch::new(&[
            (
                "package.json",
                r#"{"name": "root", "scripts": {"build": "pnpm -r build"}}"#,
            ),
            ("pnpm-workspace.yaml", yaml),
            ("a/package.json", r#"{"name": "a"}"#),
        ]);
        let (found, reader) = run(&t.0);
        assert!(found.is_empty(), "{yaml:?}: {:?}", names(&found));
        let w = warnings(&reader);
        assert_eq!(w.len(), 1, "{yaml:?}: {w:?}");
        assert!(w[0].starts_with("pnpm-workspace.yaml: "), "{w:?}");
    }

    // `workspaces` of the wrong shape.
    let t = Scratch::new(&[("package.json", r#"{"name": "r", "workspaces": 3}"#)]);
    let (found, reader) = run(&t.0);
    assert!(found.is_empty());
    assert_eq!(warnings(&reader).len(), 1);
}

#[test]
fn scripts_become_exactly_the_capabilities() {
    let long = "x".repeat(200);
    let manifest = format!(
        r#"{{"name": "p", "scripts": {{
            "prebuild": "rimraf dist", "build": "tsc -b", "postbuild": "echo done",
            "test:unit": "vitest run", "test-unit": "jest", "build:types": "tsc -p types",
            "_hidden": "x", "bad name": "x", "ünï": "x",
            "prepare": "husky", "preinstall": "npx only-allow pnpm",
            "dev": "vite", "start": "node server.js", "serve": "x", "watch": "x",
            "preview": "vite preview", "storybook": "storybook dev",
            "docs:dev": "vitepress dev", "css-watch": "x", "api:watch": "x", "build-dev": "x",
            "compile": "tsc --watch", "compile2": "tsc -w -p .", "compile3": "tsc -w",
            "compile4": "tsc --watchAll=false-ish", "pretty": "prettier --write .",
            "long": "{long}", "number": 3
        }}}}"#
    );
    let t = Scratch::new(&[("package.json", &manifest)]);
    let (found, reader) = run(&t.0);
    let p = &found[0];
    let got: Vec<(&str, bool)> = caps(p).iter().map(|c| (c.0, c.2)).collect();
    assert_eq!(
        got,
        [
            ("build", false),
            ("test-unit", false),
            ("build-types", false),
            ("prepare", false),
            ("preinstall", false),
            ("dev", true),
            ("start", true),
            ("serve", true),
            ("watch", true),
            ("preview", true),
            ("storybook", true),
            ("docs-dev", true),
            ("css-watch", true),
            ("api-watch", true),
            ("build-dev", true),
            ("compile", true),
            ("compile2", true),
            ("compile3", true),
            ("compile4", false),
            ("pretty", false),
            ("long", false),
        ]
    );
    let all = p.capabilities.as_ref().unwrap();
    let unit = all.iter().find(|c| c.name == "test-unit").unwrap();
    assert_eq!(unit.command, "npm run test:unit");
    let long_cap = all.iter().find(|c| c.name == "long").unwrap();
    assert!(
        long_cap.description.chars().count() < 100,
        "{}",
        long_cap.description
    );
    assert!(long_cap.description.starts_with("the `long` script: `xxx"));
    for c in all {
        assert!(valid_name(&c.name), "{}", c.name);
    }
    let w = warnings(&reader);
    // `test-unit` collides with `test:unit`; `_hidden`, `bad name` and `ünï` cannot be names;
    // `number` is not a string.
    assert_eq!(w.len(), 5, "{w:?}");
    assert!(w.iter().any(|m| m.contains("`test-unit`")), "{w:?}");
    assert!(w.iter().any(|m| m.contains("`bad name`")), "{w:?}");
}

#[test]
fn nameless_and_same_named_packages_get_distinct_targets() {
    let t = Scratch::new(&[
        ("package.json", r#"{"workspaces": ["a/*", "b/*"]}"#),
        ("a/x/package.json", r#"{"name": "dup", "version": "1.0.0"}"#),
        ("b/y/package.json", r#"{"name": "dup", "version": "2.0.0"}"#),
        (
            "b/z/package.json",
            r#"{"private": true, "dependencies": {"dup": "*"}}"#,
        ),
        (
            "b/w/package.json",
            r#"{"name": "@dup", "dependencies": {"z": "*"}}"#,
        ),
    ]);
    let (found, reader) = run(&t.0);
    assert_eq!(
        names(&found),
        [
            ("b-z", "b/z"),
            ("dup", "a/x"),
            ("dup-2", "b/w"),
            ("dup-3", "b/y"),
        ]
    );
    // The first by path keeps the package name for dependents.
    assert_eq!(
        edges(&found, target(&found, "b-z")),
        [("dup", EdgeKind::Normal)]
    );
    assert!(!target(&found, "b-z").fields.contains_key("package"));
    // A nameless package is named by its folder for targets, never for dependents.
    assert!(target(&found, "dup-2").edges.is_empty());
    assert_eq!(warnings(&reader).len(), 2, "{:?}", warnings(&reader));
    for t in &found {
        assert!(valid_name(&t.name), "{}", t.name);
    }
}

#[test]
fn a_thousand_packages_are_discovered_in_milliseconds() {
    let t = Scratch::new(&[(
        "package.json",
        r#"{"private": true, "workspaces": ["packages/*"]}"#,
    )]);
    for i in 0..1000 {
        let deps: Vec<String> = (1..=3)
            .filter(|d| i >= *d)
            .map(|d| format!(r#""@big/p{}": "workspace:*""#, i - d))
            .collect();
        t.write(
            &format!("packages/p{i}/package.json"),
            format!(
                r#"{{"name": "@big/p{i}", "version": "1.0.0",
                    "scripts": {{"build": "tsc -b", "test": "vitest run", "dev": "vite"}},
                    "dependencies": {{"react": "^18.0.0"{}}}}}"#,
                deps.iter().map(|d| format!(", {d}")).collect::<String>()
            )
            .as_bytes(),
        );
    }
    // The first pass reads cold metadata; later ones show discovery's own cost.
    let mut times = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let _ = run(&t.0);
        times.push(start.elapsed());
    }
    let (found, reader) = run(&t.0);
    eprintln!(
        "discovered {} javascript packages: first {:?}, fastest {:?}",
        found.len(),
        times[0],
        times.iter().min().unwrap()
    );
    assert_eq!(found.len(), 1000);
    assert!(warnings(&reader).is_empty());
    assert_eq!(target(&found, "big-p500").edges.len(), 3);
}

/// The inferred targets and edges of a fixture equal its `expected.json`, edge for edge.
fn check_fixture(dir: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/discover")
        .join(dir);
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("expected.json")).unwrap())
            .unwrap();
    let start = Instant::now();
    let (found, reader) = run(&root);
    eprintln!("{dir}: {} targets in {:?}", found.len(), start.elapsed());
    assert!(warnings(&reader).is_empty(), "{:?}", warnings(&reader));

    let mut want_targets: Vec<(String, String, Option<String>)> = expected["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let s = |k: &str| t[k].as_str().unwrap().to_string();
            let package = t["package"].as_str().map(str::to_string);
            (s("name"), s("path"), package)
        })
        .collect();
    want_targets.sort();
    let got_targets: Vec<(String, String, Option<String>)> = found
        .iter()
        .map(|t| {
            let package = t
                .fields
                .get("package")
                .map(|p| p.as_str().unwrap().to_string());
            (t.name.clone(), t.path.clone(), package)
        })
        .collect();
    assert_eq!(got_targets, want_targets);

    let triple = |e: &Value| {
        let s = |i: usize| e[i].as_str().unwrap().to_string();
        (s(0), s(1), s(2))
    };
    let mut want: Vec<(String, String, String)> = expected["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(triple)
        .collect();
    want.sort();
    let got: Vec<(String, String, String)> = found
        .iter()
        .flat_map(|t| {
            t.edges.iter().map(|e| {
                (
                    t.name.clone(),
                    name_at(&found, &e.folder).to_string(),
                    e.kind.name().to_string(),
                )
            })
        })
        .collect();
    let missing: Vec<_> = want.iter().filter(|e| !got.contains(e)).collect();
    let surplus: Vec<_> = got.iter().filter(|e| !want.contains(e)).collect();
    assert!(
        missing.is_empty() && surplus.is_empty(),
        "missing {missing:?}\nsurplus {surplus:?}"
    );
    assert_eq!(got.len(), want.len());
}

#[test]
fn vite_matches_pnpm_lockfile_importers() {
    check_fixture("javascript-vite");
}

#[test]
fn npm_cli_matches_package_lock_links() {
    check_fixture("javascript-npm-cli");
}

#[test]
fn jest_matches_yarn_lock_workspace_resolutions() {
    check_fixture("javascript-jest");
}

#[test]
fn vue_matches_pnpm_lockfile_importers() {
    check_fixture("javascript-vue");
}

#[test]
fn babel_matches_yarn_lock_workspace_resolutions() {
    check_fixture("javascript-babel");
}

/// A pipe where a manifest should be is no manifest, and opening it must not wait for a writer.
#[cfg(unix)]
#[test]
fn a_pipe_named_like_a_manifest_is_absent_and_never_waited_on() {
    let t = Scratch::new(&[(
        "packages/a/package.json",
        r#"{"name": "a", "scripts": {"build": "true"}}"#,
    )]);
    let made = std::process::Command::new("mkfifo")
        .arg(t.0.join("package.json"))
        .status()
        .unwrap();
    assert!(made.success());
    let root = t.0.clone();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (found, reader) = run(&root);
        let _ = done.send((found.len(), warnings(&reader)));
    });
    let (found, warned) = finished
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("discovery waited on a pipe");
    assert_eq!(found, 0);
    assert!(warned.is_empty(), "{warned:?}");
}
