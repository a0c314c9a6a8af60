use std::path::Path;

use super::discover;
use crate::discover::name_at;
use crate::discover::scratch::Scratch;
use crate::discover::{Inferred, Reader};

fn run(root: &Path) -> (Vec<Inferred>, Reader) {
    let mut reader = Reader::new(root);
    let found = discover(&mut reader);
    (found, reader)
}

/// `name path -> to (kind), …` per target.
fn summary(found: &[Inferred]) -> Vec<String> {
    found
        .iter()
        .map(|t| {
            let mut edges: Vec<String> = t
                .edges
                .iter()
                .map(|e| format!("{} ({})", name_at(found, &e.folder), e.kind.name()))
                .collect();
            edges.sort();
            format!("{} {} -> {}", t.name, t.path, edges.join(", "))
        })
        .collect()
}

/// `name: command` per capability of the target named `name`.
fn commands(found: &[Inferred], name: &str) -> Vec<String> {
    let t = found.iter().find(|t| t.name == name).unwrap();
    t.capabilities
        .as_ref()
        .unwrap()
        .iter()
        .map(|c| format!("{}: {}", c.name, c.command))
        .collect()
}

fn codes(reader: &Reader) -> Vec<&'static str> {
    reader.diagnostics.iter().map(|d| d.code).collect()
}

/// The summary lines `expected.json` (from `uv-lock-edges.py`) holds for a fixture.
fn expected(root: &Path) -> Vec<String> {
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("expected.json")).unwrap())
            .unwrap();
    expected["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let edges: Vec<String> = t["edges"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    format!(
                        "{} ({})",
                        e["to"].as_str().unwrap(),
                        e["kind"].as_str().unwrap()
                    )
                })
                .collect();
            format!(
                "{} {} -> {}",
                t["name"].as_str().unwrap(),
                t["path"].as_str().unwrap(),
                edges.join(", ")
            )
        })
        .collect()
}

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/discover")
        .join(name)
}

#[test]
fn livekit_agents_matches_its_uv_lock() {
    let root = fixture("python-livekit-agents");
    let started = std::time::Instant::now();
    let (found, reader) = run(&root);
    eprintln!(
        "livekit-agents: {} projects in {:?}",
        found.len(),
        started.elapsed()
    );
    assert!(reader.diagnostics.is_empty(), "{:?}", reader.diagnostics);
    assert_eq!(summary(&found), expected(&root));
    assert_eq!(found.len(), 83);
    // Excluded members and the virtual root are not projects of the workspace.
    assert!(
        !found
            .iter()
            .any(|t| t.path == "." || t.path.ends_with("livekit-durable"))
    );
    let openai = found
        .iter()
        .find(|t| t.name == "livekit-plugins-openai")
        .unwrap();
    assert!(reader.text(openai.file)[openai.offset..].starts_with("\"livekit-plugins-openai\""));
    assert_eq!(openai.fields["package"], "livekit-plugins-openai");
    // Its manifest configures no tool and no test (the root's are not its own); it builds, through
    // uv since the workspace has a lock.
    assert_eq!(
        commands(&found, "livekit-plugins-openai"),
        ["build: uv build --no-python-downloads --out-dir dist"]
    );
}

/// Every member declares its dependencies `dynamic` (a hatch hook fills them in at build
/// time): only `uv.lock` names the edges.
#[test]
fn pydantic_ai_takes_its_dynamic_dependencies_from_uv_lock() {
    let root = fixture("python-pydantic-ai");
    let started = std::time::Instant::now();
    let (found, reader) = run(&root);
    eprintln!(
        "pydantic-ai: {} projects in {:?}",
        found.len(),
        started.elapsed()
    );
    assert!(reader.diagnostics.is_empty(), "{:?}", reader.diagnostics);
    assert_eq!(summary(&found), expected(&root));
    let edges: usize = found.iter().map(|t| t.edges.len()).sum();
    assert_eq!(edges, 9);
}

#[test]
fn a_uv_workspace_runs_everything_through_uv_without_downloading_python() {
    let ws = Scratch::new(&[
        (
            "pyproject.toml",
            "[project]\nname = \"App\"\ndependencies = [\"core\", \"util>=1\"]\n\
             [dependency-groups]\ndev = [\"pytest>=8\", \"ruff\", \"mypy\"]\n\
             [tool.uv.workspace]\nmembers = [\"libs/*\", \".\"]\nexclude = [\"libs/old\"]\n\
             [tool.uv.sources]\ncore = { workspace = true }\nutil = { workspace = true }\n\
             [build-system]\nrequires = [\"hatchling\"]\nbuild-backend = \"hatchling.build\"\n",
        ),
        (
            "uv.lock",
            "version = 1\n[[package]]\nname = \"app\"\nsource = { editable = \".\" }\n\
             dependencies = [{ name = \"core\" }, { name = \"util\" }]\n\
             [[package]]\nname = \"core\"\nsource = { editable = \"libs/core\" }\n\
             [package.optional-dependencies]\nfast = [{ name = \"util\" }]\n\
             [[package]]\nname = \"util\"\nsource = { editable = \"libs/util\" }\n\
             [package.dev-dependencies]\ndev = [{ name = \"core\" }]\n",
        ),
        (
            "libs/core/pyproject.toml",
            "[project]\nname = \"core\"\n[project.optional-dependencies]\nfast = [\"util\"]\n\
             [tool.ruff]\nline-length = 100\n",
        ),
        ("libs/core/tests/__init__.py", ""),
        (
            "libs/util/pyproject.toml",
            "[project]\nname = \"Util\"\n[tool.uv]\ndev-dependencies = [\"core\"]\n",
        ),
        ("libs/util/mypy.ini", "[mypy]\n"),
        ("libs/util/conftest.py", ""),
        ("libs/old/pyproject.toml", "[project]\nname = \"old\"\n"),
    ]);
    let (found, reader) = run(&ws.0);
    assert!(reader.diagnostics.is_empty(), "{:?}", reader.diagnostics);
    assert_eq!(
        summary(&found),
        [
            "App . -> Util (normal), core (normal)",
            "Util libs/util -> core (dev)",
            "core libs/core -> Util (optional)",
        ]
    );
    let uv = "uv run --package";
    let flags = "--locked --no-python-downloads";
    assert_eq!(
        commands(&found, "App"),
        [
            // mypy is a dependency but configured nowhere: what it would check is unknown.
            "build: uv build --no-python-downloads --out-dir dist".to_string(),
            format!("fmt: {uv} App {flags} ruff format ."),
            format!("lint: {uv} App {flags} ruff check ."),
            format!("test: {uv} App {flags} python -m pytest"),
        ]
    );
    // ruff configured but not a dependency: the one on the PATH, outside the environment.
    assert_eq!(
        commands(&found, "core"),
        [
            "fmt: ruff format .".to_string(),
            "lint: ruff check .".to_string(),
            format!("test: {uv} core {flags} python -m unittest"),
        ]
    );
    assert_eq!(
        commands(&found, "Util"),
        [
            format!("check: {uv} Util {flags} python -m mypy ."),
            format!("test: {uv} Util {flags} python -m pytest"),
        ]
    );
}

#[test]
fn sources_path_and_a_members_own_source_wins() {
    let ws = Scratch::new(&[
        (
            "pyproject.toml",
            "[tool.uv.workspace]\nmembers = [\"p/*\"]\n\
             [tool.uv.sources]\nb = { workspace = true }\nc = { workspace = true }\n",
        ),
        (
            "p/a/pyproject.toml",
            "[project]\nname = \"a\"\ndependencies = [\"b\", \"c\", \"d\", \"a[extra]\", \"requests\"]\n\
             [tool.uv.sources]\nc = { git = \"https://example.com/c\" }\nd = { path = \"../d\" }\n",
        ),
        ("p/b/pyproject.toml", "[project]\nname = \"b\"\n"),
        ("p/c/pyproject.toml", "[project]\nname = \"c\"\n"),
        // Named like a member's dependency but not taken from the workspace.
        (
            "p/d/pyproject.toml",
            "[project]\nname = \"d\"\ndependencies = [\"b\"]\n",
        ),
        (
            "p/requests/pyproject.toml",
            "[project]\nname = \"requests\"\n",
        ),
    ]);
    let (found, reader) = run(&ws.0);
    assert!(reader.diagnostics.is_empty(), "{:?}", reader.diagnostics);
    assert_eq!(
        summary(&found),
        [
            "a p/a -> b (normal), d (normal)",
            "b p/b -> ",
            "c p/c -> ",
            "d p/d -> b (normal)",
            "requests p/requests -> ",
        ]
    );
}

#[test]
fn a_single_project_offers_only_the_tools_it_uses() {
    let bare = Scratch::new(&[("pyproject.toml", "[project]\nname = \"bare\"\n")]);
    let (found, _) = run(&bare.0);
    assert_eq!(summary(&found), ["bare . -> "]);
    assert_eq!(commands(&found, "bare"), Vec::<String>::new());

    let tested = Scratch::new(&[
        ("pyproject.toml", "[project]\nname = \"t\"\n"),
        ("test/__init__.py", ""),
        ("ruff.toml", ""),
        ("pytest.ini", "[pytest]\n"),
    ]);
    let (found, _) = run(&tested.0);
    assert_eq!(
        commands(&found, "t"),
        [
            "fmt: ruff format .",
            "lint: ruff check .",
            "test: python3 -m pytest"
        ]
    );
    // The tool config alone, without a project, is no target.
    let tools_only = Scratch::new(&[("pyproject.toml", "[tool.ruff]\nline-length = 90\n")]);
    assert!(run(&tools_only.0).0.is_empty());
}

#[test]
fn broken_members_are_warnings_and_the_rest_goes_on() {
    let ws = Scratch::new(&[
        (
            "pyproject.toml",
            "[project]\nversion = \"1\"\n[tool.uv.workspace]\nmembers = [\"m/*\", \"[\"]\n",
        ),
        ("m/good/pyproject.toml", "[project]\nname = \"good\"\n"),
        ("m/syntax/pyproject.toml", "[project\nname = \"x\"\n"),
        ("m/noname/pyproject.toml", "[tool.ruff]\n"),
        (
            "m/evil/pyproject.toml",
            "[project]\nname = \"x; rm -rf /\"\n",
        ),
        ("m/dup1/pyproject.toml", "[project]\nname = \"Good\"\n"),
    ]);
    let (found, reader) = run(&ws.0);
    // Folder order decides which of two alike names keeps it.
    assert_eq!(summary(&found), ["Good m/dup1 -> ", "good-2 m/good -> "]);
    let mut got = codes(&reader);
    got.sort_unstable();
    assert_eq!(
        got,
        [
            "bad-glob",
            "duplicate-project",
            "invalid-project-name",
            "invalid-pyproject",
            "no-project-name",
            "no-project-name"
        ]
    );
    for d in &reader.diagnostics {
        assert!(!d.message.ends_with('.'), "{}", d.message);
    }
}

#[test]
fn a_thousand_projects_are_discovered_in_milliseconds() {
    let mut files = vec![(
        "pyproject.toml".to_string(),
        "[tool.uv.workspace]\nmembers = [\"packages/*\"]\n[tool.uv.sources]\n".to_string(),
    )];
    // The lock uv would write: every member with its edges, and a registry package each.
    let mut lock = String::from("version = 1\nrevision = 3\n");
    for i in 0..1000 {
        files[0]
            .1
            .push_str(&format!("p{i} = {{ workspace = true }}\n"));
        let deps: Vec<String> = [i / 2, i / 3, i / 5]
            .into_iter()
            .filter(|&d| d != i)
            .map(|d| format!("\"p{d}>=1\", "))
            .collect();
        let locked: Vec<String> = [i / 2, i / 3, i / 5]
            .into_iter()
            .filter(|&d| d != i)
            .map(|d| format!("{{ name = \"p{d}\" }}, "))
            .collect();
        lock.push_str(&format!(
            "\n[[package]]\nname = \"p{i}\"\nsource = {{ editable = \"packages/p{i}\" }}\n\
             dependencies = [{}{{ name = \"requests\" }}]\n\n\
             [package.dev-dependencies]\ndev = [{{ name = \"pytest\" }}]\n\n\
             [package.metadata]\nrequires-dist = [{{ name = \"requests\" }}]\n",
            locked.concat()
        ));
        files.push((
            format!("packages/p{i}/pyproject.toml"),
            format!(
                "[project]\nname = \"p{i}\"\ndependencies = [{}\"requests\"]\n\
                 [dependency-groups]\ndev = [\"pytest\"]\n[build-system]\nrequires = [\"hatchling\"]\n",
                deps.concat()
            ),
        ));
    }
    files.push(("uv.lock".into(), lock));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let ws = Scratch::new(&refs);
    // The fastest of a few runs: the machine is shared, and the figure is discovery's own.
    let took = (0..5)
        .map(|_| {
            let started = std::time::Instant::now();
            run(&ws.0);
            started.elapsed()
        })
        .min()
        .unwrap();
    let (found, reader) = run(&ws.0);
    eprintln!("python: 1,000 projects discovered in {took:?}");
    // For scale: what reading the same manifests through a reader costs, parsing nothing.
    let reads = (0..5)
        .map(|_| {
            let started = std::time::Instant::now();
            let mut reader = Reader::new(&ws.0);
            for (rel, _) in &files {
                reader.read(rel);
            }
            started.elapsed()
        })
        .min()
        .unwrap();
    eprintln!("python: reading the 1,001 pyproject.toml alone takes {reads:?}");
    assert!(reader.diagnostics.is_empty(), "{:?}", reader.diagnostics);
    assert_eq!(found.len(), 1000);
    assert!(
        found
            .iter()
            .all(|t| t.capabilities.as_ref().unwrap().len() == 2)
    );
    // Generous: the point is the printed figure; a loaded machine must not fail it.
    assert!(took.as_secs() < 5);
}

/// A workspace whose `b` fills its dependencies in with a build hook.
const HOOKED: [(&str, &str); 5] = [
    (
        "pyproject.toml",
        "[tool.uv.workspace]\nmembers = [\"p/*\"]\n\
         [tool.uv.sources]\nb = { workspace = true }\nc = { workspace = true }\n",
    ),
    (
        "p/a/pyproject.toml",
        "[project]\nname = \"a\"\ndependencies = [\"b\"]\n",
    ),
    (
        "p/b/pyproject.toml",
        "[project]\nname = \"b\"\ndynamic = [\"version\", \"dependencies\"]\n",
    ),
    ("p/c/pyproject.toml", "[project]\nname = \"c\"\n"),
    ("p/d/pyproject.toml", "[project]\nname = \"d\"\n"),
];

fn hooked(lock: Option<&[u8]>) -> (Vec<String>, Vec<(&'static str, String)>) {
    let ws = Scratch::new(&HOOKED);
    if let Some(lock) = lock {
        ws.write("uv.lock", lock);
    }
    let (found, reader) = run(&ws.0);
    let warnings = reader
        .diagnostics
        .iter()
        .map(|d| (d.code, d.message.clone()))
        .collect();
    (summary(&found), warnings)
}

#[test]
fn a_stale_lock_is_named_and_both_answers_are_kept() {
    // Locked before `a` depended on `b` and before `d` joined: `b -> c` is the hook's.
    let lock = "version = 1\n[[package]]\nname = \"a\"\nsource = { editable = \"p/a\" }\n\
                [[package]]\nname = \"b\"\nsource = { editable = \"p/b\" }\n\
                dependencies = [{ name = \"c\" }]\n\
                [[package]]\nname = \"c\"\nsource = { editable = \"p/c\" }\n";
    let (summary, warnings) = hooked(Some(lock.as_bytes()));
    assert_eq!(
        summary,
        [
            "a p/a -> b (normal)",
            "b p/b -> c (normal)",
            "c p/c -> ",
            "d p/d -> "
        ]
    );
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let (code, message) = &warnings[0];
    assert_eq!(*code, "stale-uv-lock");
    assert!(
        message.contains("of `a`, `d`;") && message.contains("run `uv lock`"),
        "{message}"
    );
}

#[test]
fn a_lock_that_cannot_be_read_is_a_warning_and_the_manifests_answer() {
    let manifests_only = ["a p/a -> b (normal)", "b p/b -> ", "c p/c -> ", "d p/d -> "];
    let broken = hooked(Some(b"version = 1\n[[package]\nname = \"a\"\n"));
    assert_eq!(broken.0, manifests_only);
    assert_eq!(broken.1.len(), 1, "{:?}", broken.1);
    assert_eq!(broken.1[0].0, "invalid-uv-lock");
    assert!(broken.1[0].1.contains("run `uv lock`"), "{:?}", broken.1);
    // Larger than the reader reads: refused unparsed, as any manifest would be.
    let mut huge = b"version = 1\n".to_vec();
    huge.resize(
        usize::try_from(crate::workspace::load::MAX_MANIFEST_BYTES).unwrap() + 2,
        b'\n',
    );
    let huge = hooked(Some(&huge));
    assert_eq!(huge.0, manifests_only);
    let codes: Vec<&str> = huge.1.iter().map(|(c, _)| *c).collect();
    assert_eq!(codes, ["file-too-large"]);
    // No lock at all: the hook's dependencies are unknown, and discovery says so.
    let none = hooked(None);
    assert_eq!(none.0, manifests_only);
    assert_eq!(none.1.len(), 1, "{:?}", none.1);
    assert_eq!(none.1[0].0, "dynamic-dependencies");
    assert!(
        none.1[0].1.contains("`b`") && none.1[0].1.contains("`p/b/pyproject.toml`"),
        "{:?}",
        none.1
    );
}

#[test]
fn the_checkers_and_runner_are_the_ones_the_project_configures() {
    let ws = Scratch::new(&[
        (
            "pyproject.toml",
            "[tool.uv.workspace]\nmembers = [\"p/*\"]\n",
        ),
        (
            "uv.lock",
            "version = 1\n[[package]]\nname = \"both\"\nsource = { editable = \"p/both\" }\n\
                     [[package]]\nname = \"ini\"\nsource = { editable = \"p/ini\" }\n\
                     [[package]]\nname = \"cfg\"\nsource = { editable = \"p/cfg\" }\n\
                     [[package]]\nname = \"guess\"\nsource = { editable = \"p/guess\" }\n\
                     [[package]]\nname = \"rc\"\nsource = { editable = \"p/rc\" }\n",
        ),
        // Both configured, mypy with its own `files`: mypy is run without a path.
        (
            "p/both/pyproject.toml",
            "[project]\nname = \"both\"\n[tool.pyright]\nstrict = [\"src\"]\n\
             [tool.mypy]\nfiles = \"tests/typed.py\"\n",
        ),
        ("p/ini/pyproject.toml", "[project]\nname = \"ini\"\n"),
        ("p/ini/mypy.ini", "[mypy]\nstrict = True\n"),
        ("p/ini/tox.ini", "[tox]\n[pytest]\naddopts = -q\n"),
        ("p/cfg/pyproject.toml", "[project]\nname = \"cfg\"\n"),
        (
            "p/cfg/setup.cfg",
            "[metadata]\nname = cfg\n[mypy]\nfiles = src\n[tool:pytest]\ntestpaths = tests\n",
        ),
        // Only installed, never configured: no checker is guessed.
        (
            "p/guess/pyproject.toml",
            "[project]\nname = \"guess\"\n[dependency-groups]\nlint = [\"mypy\", \"pyright\"]\n",
        ),
        (
            "p/guess/setup.cfg",
            "[metadata]\nname = guess\n[mypyc]\nx = 1\n",
        ),
        ("p/rc/pyproject.toml", "[project]\nname = \"rc\"\n"),
        ("p/rc/pyrightconfig.json", "{}\n"),
        ("p/rc/tests/conftest.py", ""),
    ]);
    let (found, reader) = run(&ws.0);
    assert!(reader.diagnostics.is_empty(), "{:?}", reader.diagnostics);
    let uv = |name: &str| format!("uv run --package {name} --locked --no-python-downloads");
    assert_eq!(
        commands(&found, "both"),
        [format!(
            "check: {0} pyright && {0} python -m mypy",
            uv("both")
        )]
    );
    assert_eq!(
        commands(&found, "ini"),
        [
            format!("check: {} python -m mypy .", uv("ini")),
            format!("test: {} python -m pytest", uv("ini")),
        ]
    );
    assert_eq!(
        commands(&found, "cfg"),
        [
            format!("check: {} python -m mypy", uv("cfg")),
            format!("test: {} python -m pytest", uv("cfg")),
        ]
    );
    assert_eq!(commands(&found, "guess"), Vec::<String>::new());
    assert_eq!(
        commands(&found, "rc"),
        [
            format!("check: {} pyright", uv("rc")),
            format!("test: {} python -m pytest", uv("rc")),
        ]
    );
}

/// `name: command` of the root target discovery gives the workspace at `root`.
fn root_commands(root: &Path) -> Vec<String> {
    let (found, mut reader) = run(root);
    let Some(target) = crate::discover::root::discover(&mut reader, &found) else {
        return Vec::new();
    };
    let capabilities = target.capabilities.unwrap();
    for c in &capabilities {
        // Never in place of a member's own: what the root's pytest collects is its own.
        assert_eq!(c.stands_for, None, "{}", c.name);
        let inputs = c.inputs.as_ref().expect("inputs");
        // Every member's folder and the root's own tests are read; caches never are.
        assert_eq!(inputs[0], "**", "{}", c.name);
        assert!(
            inputs.iter().any(|i| i == "!**/__pycache__/**"),
            "{inputs:?}"
        );
    }
    capabilities
        .iter()
        .map(|c| format!("{}: {}", c.name, c.command))
        .collect()
}

#[test]
fn a_virtual_uv_root_runs_the_tools_it_configures_once_for_every_member() {
    let all = "uv run --all-packages --locked --no-python-downloads";
    // livekit-agents' root: no `[project]`; `[tool.pytest.ini_options]`, `[tool.mypy]` (no
    // `files`), `[tool.ruff]` and ruff in its dev group; its tests in the root's `tests/`. Its
    // lock is not in the fixture.
    let livekit = Scratch::new(&[]);
    copy_tree(&fixture("python-livekit-agents"), &livekit.0);
    livekit.write("uv.lock", "version = 1\nrevision = 3\n");
    assert_eq!(
        root_commands(&livekit.0),
        [
            format!("test: {all} python -m pytest"),
            format!("check: {all} python -m mypy ."),
            format!("lint: {all} ruff check ."),
            format!("fmt: {all} ruff format ."),
        ]
    );
    // pydantic-ai's root is a project: its CI's `uv run pytest` is that project's own `test`.
    let pydantic = fixture("python-pydantic-ai");
    assert_eq!(root_commands(&pydantic), Vec::<String>::new());
    let (found, _) = run(&pydantic);
    assert_eq!(
        commands(&found, "pydantic-ai"),
        [
            "build: uv build --no-python-downloads --out-dir dist".to_string(),
            format!(
                "check: {0} pyright && {0} python -m mypy",
                "uv run --package pydantic-ai --locked --no-python-downloads"
            ),
            "fmt: uv run --package pydantic-ai --locked --no-python-downloads ruff format ."
                .to_string(),
            "lint: uv run --package pydantic-ai --locked --no-python-downloads ruff check ."
                .to_string(),
            "test: uv run --package pydantic-ai --locked --no-python-downloads python -m pytest"
                .to_string(),
        ]
    );
    // Without a lock, or with nothing configured at the root, nothing is guessed.
    std::fs::remove_file(livekit.0.join("uv.lock")).unwrap();
    assert_eq!(root_commands(&livekit.0), Vec::<String>::new());
    let bare = Scratch::new(&[
        (
            "pyproject.toml",
            "[tool.uv.workspace]\nmembers = [\"p/*\"]\n",
        ),
        ("uv.lock", "version = 1\n"),
        (
            "p/a/pyproject.toml",
            "[project]\nname = \"a\"\n[tool.pytest]\n",
        ),
        ("p/b/pyproject.toml", "[project]\nname = \"b\"\n"),
    ]);
    assert_eq!(root_commands(&bare.0), Vec::<String>::new());
}

/// Copies the files below `from` into `to`.
fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
