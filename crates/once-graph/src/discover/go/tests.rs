use std::collections::BTreeMap;
use std::path::Path;

use super::discover;
use crate::discover::name_at;
use crate::discover::scratch::Scratch;
use crate::discover::{EdgeKind, Inferred, Reader};

fn run(root: &Path) -> (Vec<Inferred>, Reader) {
    let mut reader = Reader::new(root);
    let found = discover(&mut reader);
    (found, reader)
}

/// `name path -> edge, edge` per target, for whole-answer comparisons.
fn summary(found: &[Inferred]) -> Vec<String> {
    found
        .iter()
        .map(|t| {
            let mut edges: Vec<&str> = t.edges.iter().map(|e| name_at(found, &e.folder)).collect();
            edges.sort_unstable();
            format!("{} {} -> {}", t.name, t.path, edges.join(", "))
        })
        .collect()
}

fn codes(reader: &Reader) -> Vec<&'static str> {
    reader.diagnostics.iter().map(|d| d.code).collect()
}

#[test]
fn opentelemetry_go_matches_its_go_mod_requirements() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/discover/go-opentelemetry-go");
    let started = std::time::Instant::now();
    let (found, reader) = run(&root);
    let took = started.elapsed();
    eprintln!("opentelemetry-go: {} modules in {took:?}", found.len());
    assert!(reader.diagnostics.is_empty(), "{:?}", reader.diagnostics);
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("expected.json")).unwrap())
            .unwrap();
    let by_module: BTreeMap<&str, &Inferred> = found
        .iter()
        .map(|t| (t.fields["module"].as_str().unwrap(), t))
        .collect();
    let mut want = Vec::new();
    for t in expected["targets"].as_array().unwrap() {
        let mut edges: Vec<String> = t["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| by_module[e["to"].as_str().unwrap()].name.clone())
            .collect();
        edges.sort();
        let name = &by_module[t["module"].as_str().unwrap()].name;
        want.push(format!(
            "{name} {} -> {}",
            t["path"].as_str().unwrap(),
            edges.join(", ")
        ));
    }
    want.sort();
    assert_eq!(summary(&found), want);
    assert_eq!(found.len(), 28);
    // Names: the last element, more of the path only where two modules would share one.
    let names: Vec<&str> = found.iter().map(|t| t.name.as_str()).collect();
    for name in [
        "otel",
        "otlptracegrpc",
        "opencensus-test",
        "telemetry-test",
        "otel-log",
        "sdk-log",
        "otel-log-logtest",
        "sdk-log-logtest",
        "otel-metric",
        "sdk-metric",
        "x",
    ] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
    assert!(
        found
            .iter()
            .all(|t| t.edges.iter().all(|e| e.kind == EdgeKind::Normal))
    );
    // Each target points at its module line.
    let grpc = found.iter().find(|t| t.name == "otlptracegrpc").unwrap();
    let text = reader.text(grpc.file);
    assert!(
        text[grpc.offset..]
            .starts_with("go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc")
    );
    assert_eq!(
        reader.rel(grpc.file),
        "exporters/otlp/otlptrace/otlptracegrpc/go.mod"
    );
}

#[test]
fn go_work_uses_its_folders_and_its_replaces_win() {
    let ws = Scratch::new(&[
        (
            "go.work",
            "go 1.22\n\nuse ./app\nuse (\n\t./lib // the library\n\t\"./fork\"\n\t./missing\n\t../outside\n)\n\
             replace example.com/up => ./fork\n",
        ),
        (
            "app/go.mod",
            "module example.com/app\n\nrequire (\n\texample.com/lib v0.0.0\n\texample.com/up v1.0.0\n\
             \texample.com/gone v1.0.0\n)\nreplace example.com/up => ../lib\n",
        ),
        ("lib/go.mod", "module example.com/lib\n"),
        ("fork/go.mod", "module example.com/fork\n"),
        // Not used by go.work: not a module of this workspace.
        ("tools/go.mod", "module example.com/tools\n"),
        ("go.mod", "module example.com/root\n"),
    ]);
    let (found, reader) = run(&ws.0);
    assert_eq!(
        summary(&found),
        ["app app -> fork, lib", "fork fork -> ", "lib lib -> "]
    );
    assert_eq!(codes(&reader), ["outside-workspace", "missing-module"]);
    let missing = &reader.diagnostics[1];
    assert_eq!((missing.file.as_str(), missing.line), ("go.work", 7));
    assert!(missing.message.contains("`missing`"), "{}", missing.message);
}

#[test]
fn without_go_work_every_go_mod_outside_testdata_and_vendor() {
    let ws = Scratch::new(&[
        (
            "go.mod",
            "module example.com/m\n\nrequire example.com/m/sub v1.0.0\nrequire example.com/m/far v1.0.0\n\
             replace example.com/m/far => example.com/other v1.0.0\n\
             // Replaced but not required: changes nothing in the build.\nreplace example.com/m/deep => ./a/b/deep\n",
        ),
        (
            "sub/go.mod",
            "module example.com/m/sub\nrequire example.com/m v1.0.0\n",
        ),
        ("far/go.mod", "module example.com/m/far\n"),
        ("a/b/deep/go.mod", "module example.com/m/deep/v2\n"),
        ("testdata/x/go.mod", "module example.com/m/testdata/x\n"),
        ("vendor/example.com/v/go.mod", "module example.com/v\n"),
        (".hidden/go.mod", "module example.com/hidden\n"),
        ("broken/go.mod", "go 1.22\n"),
    ]);
    let (found, reader) = run(&ws.0);
    assert_eq!(
        summary(&found),
        [
            "deep-v2 a/b/deep -> ",
            "far far -> ",
            "m . -> ",
            "sub sub -> "
        ]
    );
    assert_eq!(codes(&reader), ["no-module-path"]);
    assert!(found.iter().all(|t| t.kind == "go-module"));
    assert_eq!(found[2].fields["module"], "example.com/m");
}

#[test]
fn modules_of_one_path_get_distinct_names_and_a_warning() {
    let ws = Scratch::new(&[
        (
            "go.work",
            "go 1.22\nuse (\n\t./a\n\t./b\n\t./c\n\t./d\n\t./e\n)\n",
        ),
        ("a/go.mod", "module example.com/same\n"),
        ("b/go.mod", "module example.com/same\n"),
        ("c/go.mod", "module example.com/same-2\n"),
        ("d/go.mod", "module example.com/x/v3\n"),
        ("e/go.mod", "module example.com/y/x/v3\n"),
    ]);
    let (found, reader) = run(&ws.0);
    let names: Vec<(&str, &str)> = found
        .iter()
        .map(|t| (t.name.as_str(), t.path.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("example.com-x-v3", "d"),
            ("same", "a"),
            ("same-2", "c"),
            ("same-3", "b"),
            ("y-x-v3", "e")
        ]
    );
    assert_eq!(codes(&reader), ["duplicate-module"]);
}

#[test]
fn no_go_command_may_download_a_toolchain() {
    let ws = Scratch::new(&[(
        "go.mod",
        "module example.com/m\n\ngo 1.99\ntoolchain go1.99.1\n",
    )]);
    let (found, _) = run(&ws.0);
    let caps = found[0].capabilities.as_ref().unwrap();
    let names: Vec<&str> = caps.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["build", "check", "fmt", "lint", "test"]);
    for c in caps {
        let go = c.command.split_whitespace().any(|w| w == "go");
        assert!(
            !go || c.command.starts_with("GOTOOLCHAIN=local go "),
            "{}",
            c.command
        );
    }
}

#[test]
fn a_thousand_modules_are_discovered_in_milliseconds() {
    let mut files = vec![("go.work".to_string(), String::from("go 1.22\nuse (\n"))];
    for i in 0..1000 {
        files[0].1.push_str(&format!("\t./mods/m{i}\n"));
        let mut text = format!("module example.com/mods/m{i}\n\nrequire (\n");
        for d in [i / 2, i / 3, i / 5] {
            if d != i {
                text.push_str(&format!("\texample.com/mods/m{d} v0.0.0\n"));
            }
        }
        text.push_str("\tgithub.com/some/dep v1.0.0\n)\n");
        // Without `go.work` only a local replace builds a sibling from its folder.
        for d in [i / 2, i / 3, i / 5] {
            if d != i {
                text.push_str(&format!("replace example.com/mods/m{d} => ../m{d}\n"));
            }
        }
        files.push((format!("mods/m{i}/go.mod"), text));
    }
    files[0].1.push_str(")\n");
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let ws = Scratch::new(&refs);
    // The fastest of a few runs: the machine is shared, and the figure is discovery's own.
    let fastest = |root: &Path| {
        (0..5)
            .map(|_| {
                let started = std::time::Instant::now();
                run(root);
                started.elapsed()
            })
            .min()
            .unwrap()
    };
    let took = fastest(&ws.0);
    let (found, reader) = run(&ws.0);
    eprintln!("go: 1,000 modules (go.work) discovered in {took:?}");
    // For scale: what reading the same manifests through a reader costs, parsing nothing.
    let reads = fastest_reads(&ws.0, &files[1..]);
    eprintln!("go: reading the 1,000 go.mod alone takes {reads:?}");
    assert_eq!(found.len(), 1000);
    assert!(reader.diagnostics.is_empty());
    let edges: usize = (0..1000usize)
        .map(|i| {
            let mut d: Vec<usize> = [i / 2, i / 3, i / 5]
                .into_iter()
                .filter(|&d| d != i)
                .collect();
            d.sort();
            d.dedup();
            d.len()
        })
        .sum();
    assert_eq!(found.iter().map(|t| t.edges.len()).sum::<usize>(), edges);
    // Without go.work, below a root module: the bounded walk finds the same modules, and the root.
    std::fs::remove_file(ws.0.join("go.work")).unwrap();
    std::fs::write(ws.0.join("go.mod"), "module example.com/root\n").unwrap();
    let walk = fastest(&ws.0);
    let (walked, _) = run(&ws.0);
    eprintln!("go: 1,000 modules (walk) discovered in {walk:?}");
    let walked: Vec<Inferred> = walked.into_iter().filter(|t| t.path != ".").collect();
    assert_eq!(summary(&walked), summary(&found));
    // Generous: the point is the printed figure; a loaded machine must not fail it.
    assert!(took.as_secs() < 5);
}

/// The fastest of five passes reading `files` through a fresh reader.
fn fastest_reads(root: &Path, files: &[(String, String)]) -> std::time::Duration {
    (0..5)
        .map(|_| {
            let started = std::time::Instant::now();
            let mut reader = Reader::new(root);
            for (rel, _) in files {
                reader.read(rel);
            }
            started.elapsed()
        })
        .min()
        .unwrap()
}

#[test]
fn a_tree_without_a_root_module_or_go_work_is_not_walked() {
    let ws = Scratch::new(&[("tools/gen/go.mod", "module example.com/gen\n")]);
    let (found, reader) = run(&ws.0);
    assert!(found.is_empty());
    assert!(reader.listings.is_empty(), "the tree was walked");
}

#[test]
fn a_require_without_a_local_replace_is_no_edge_even_to_a_module_of_the_tree() {
    // dagger/dagger's shape: the root module requires `sdk/go`'s module from the proxy, with no
    // `replace`: Go builds the root with the published version, never the folder.
    let ws = Scratch::new(&[
        (
            "go.mod",
            "module example.com/m\n\nrequire (\n\texample.com/m/sdk v0.9.0\n\texample.com/m/local v0.0.0\n)\n\
             replace example.com/m/local => ./local\n",
        ),
        ("sdk/go.mod", "module example.com/m/sdk\n"),
        (
            "local/go.mod",
            "module example.com/m/local\nrequire example.com/m/sdk v0.9.0\n",
        ),
    ]);
    let (found, reader) = run(&ws.0);
    assert_eq!(
        summary(&found),
        ["local local -> ", "m . -> local", "sdk sdk -> "]
    );
    assert!(reader.diagnostics.is_empty(), "{:?}", reader.diagnostics);
}

#[test]
fn in_a_go_work_a_require_of_a_used_module_is_an_edge() {
    // `go.work` makes every `use`d module a main module: a require of one builds the folder.
    let ws = Scratch::new(&[
        ("go.work", "go 1.22\nuse (\n\t./app\n\t./lib\n)\n"),
        (
            "app/go.mod",
            "module example.com/app\nrequire example.com/lib v1.0.0\n",
        ),
        ("lib/go.mod", "module example.com/lib\n"),
    ]);
    let (found, _) = run(&ws.0);
    assert_eq!(summary(&found), ["app app -> lib", "lib lib -> "]);
}
