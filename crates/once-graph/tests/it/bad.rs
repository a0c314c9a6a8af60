//! Bad manifests: every problem reported, located, with its code.

use crate::util::TempWs;

/// (name, root manifest, extra files, expected `file:line:col code` list, message substring)
type Case = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static [&'static str],
    &'static str,
);

const CASES: &[Case] = &[
    (
        "syntax",
        "[targets.a]\nkind = \"command\n",
        &[],
        &["once.toml:2:16 toml-syntax"],
        "invalid TOML",
    ),
    (
        "unknown-top-key",
        "[target.a]\nkind = \"command\"\n",
        &[],
        &["once.toml:1:2 unknown-key"],
        "did you mean `targets`",
    ),
    (
        "unknown-cap-key",
        "[targets.docs]\nkind = \"command\"\n[targets.docs.capabilities.build]\ncomand = \"x\"\n",
        &[],
        &[
            "once.toml:3:28 missing-command",
            "once.toml:4:1 unknown-key",
        ],
        "unknown key `comand` in capability `build` of target `docs`",
    ),
    (
        "wrong-type-tags",
        "[targets.a]\nkind = \"go-module\"\ntags = \"x\"\n",
        &[],
        &["once.toml:3:8 wrong-type"],
        "must be a list of strings",
    ),
    (
        "missing-kind",
        "[targets.a]\npath = \".\"\n",
        &[],
        &["once.toml:1:10 missing-kind"],
        "has no `kind`",
    ),
    (
        "unknown-kind",
        "[targets.a]\nkind = \"cargo-pakage\"\n",
        &[],
        &["once.toml:2:8 unknown-kind"],
        "did you mean `cargo-package`",
    ),
    (
        "missing-command",
        "[targets.a]\nkind = \"command\"\n[targets.a.capabilities.run]\ndescription = \"x\"\n",
        &[],
        &["once.toml:3:25 missing-command"],
        "has no `command`",
    ),
    (
        "unknown-target",
        "[targets.web]\nkind = \"npm-package\"\ndeps = [\"cor\"]\n[targets.core]\nkind = \"go-module\"\n",
        &[],
        &["once.toml:3:9 unknown-target"],
        "did you mean `core`",
    ),
    (
        "unknown-capability",
        "[targets.a]\nkind = \"go-module\"\n[targets.a.capabilities.build]\ndeps = [\"b:tst\"]\n[targets.b]\nkind = \"go-module\"\n",
        &[],
        &["once.toml:4:9 unknown-capability"],
        "did you mean `b:test`",
    ),
    (
        "cycle",
        "[targets.a]\nkind = \"go-module\"\ndeps = [\"b\"]\n[targets.b]\nkind = \"go-module\"\ndeps = [\"a\"]\n",
        &[],
        // Once per target cycle, not once per shared capability.
        &["once.toml:6:9 dependency-cycle"],
        "dependency cycle: a → b → a (target-level `deps`; it holds for capabilities build, check, fmt, lint, test)",
    ),
    (
        "capability-cycle",
        "[targets.a]\nkind = \"go-module\"\n[targets.a.capabilities.build]\ndeps = [\"b:test\"]\n[targets.b]\nkind = \"go-module\"\n[targets.b.capabilities.test]\ndeps = [\"a:build\"]\n",
        &[],
        &["once.toml:8:9 dependency-cycle"],
        "dependency cycle: a:build → b:test → a:build",
    ),
    (
        "duplicate",
        "[workspace]\nmembers = [\"m\"]\n[targets.a]\nkind = \"go-module\"\n",
        &[("m/once.toml", "\n[targets.a]\nkind = \"go-module\"\n")],
        &["m/once.toml:2:10 duplicate-target"],
        "already declared at once.toml:3",
    ),
    (
        "bad-glob",
        "[targets.a]\nkind = \"command\"\n[targets.a.capabilities.b]\ncommand = \"x\"\ninputs = [\"src/[a\"]\n",
        &[],
        &["once.toml:5:11 bad-glob"],
        "invalid glob `src/[a`",
    ),
    (
        "glob-parent",
        "[targets.a]\nkind = \"command\"\n[targets.a.capabilities.b]\ncommand = \"x\"\noutputs = [\"out/**\", \"../../.git/**\"]\ninputs = [\"!src/../../x\"]\n",
        &[],
        &["once.toml:5:22 glob-escapes", "once.toml:6:11 glob-escapes"],
        "glob `../../.git/**` in `outputs` of capability `b` of target `a` leaves the target's folder",
    ),
    (
        "glob-absolute",
        "[targets.a]\nkind = \"command\"\n[targets.a.capabilities.b]\ncommand = \"x\"\noutputs = [\"/etc/**\"]\n",
        &[],
        &["once.toml:5:12 glob-escapes"],
        "glob `/etc/**`",
    ),
    (
        "glob-root-escapes",
        "[targets.a]\nkind = \"command\"\n[targets.a.capabilities.b]\ncommand = \"x\"\ninputs = [\"//Cargo.lock\", \"//../x\", \"!///etc\"]\n",
        &[],
        &["once.toml:5:27 glob-escapes", "once.toml:5:37 glob-escapes"],
        "glob `//../x` in `inputs` of capability `b` of target `a` leaves the target's folder",
    ),
    (
        "glob-root-output",
        "[targets.a]\nkind = \"command\"\n[targets.a.capabilities.b]\ncommand = \"x\"\ninputs = [\"//out\"]\noutputs = [\"//out\"]\n",
        &[],
        &["once.toml:6:12 glob-escapes"],
        "glob `//out` in `outputs`",
    ),
    (
        "bad-duration",
        "[targets.a]\nkind = \"go-module\"\n[targets.a.capabilities.test]\ndeadline = \"5 minutes\"\n",
        &[],
        &["once.toml:4:12 bad-duration"],
        "invalid `deadline`",
    ),
    (
        "bad-default",
        "[targets.a]\nkind = \"command\"\n[targets.a.capabilities.b]\ncommand = \"x {n}\"\n[targets.a.capabilities.b.params.n]\ntype = \"integer\"\ndefault = \"x\"\n",
        &[],
        &["once.toml:7:11 bad-default"],
        "does not match its type `integer`",
    ),
    (
        "enum-no-values",
        "[targets.a]\nkind = \"command\"\n[targets.a.capabilities.b]\ncommand = \"x\"\n[targets.a.capabilities.b.params.l]\ntype = \"enum\"\n",
        &[],
        &["once.toml:6:8 bad-enum"],
        "has no `values`",
    ),
    (
        "enum-default-not-value",
        "[targets.a]\nkind = \"command\"\n[targets.a.capabilities.b]\ncommand = \"x\"\n[targets.a.capabilities.b.params.l]\ntype = \"enum\"\nvalues = [\"fast\"]\ndefault = \"slow\"\n",
        &[],
        &["once.toml:8:11 bad-enum"],
        "not among its values",
    ),
    (
        "flag-not-boolean",
        "[targets.a]\nkind = \"command\"\n[targets.a.capabilities.b]\ncommand = \"x\"\n[targets.a.capabilities.b.params.l]\ntype = \"string\"\nflag = \"--l\"\n",
        &[],
        &["once.toml:7:1 flag-not-boolean"],
        "only allowed on boolean",
    ),
    (
        "unknown-placeholder",
        "[targets.a]\nkind = \"command\"\n[targets.a.capabilities.b]\ncommand = \"echo {targt}\"\n",
        &[],
        &["once.toml:4:17 unknown-placeholder"],
        "did you mean `{target}`",
    ),
    (
        "unsafe-placeholder",
        "[targets.a]\nkind = \"command\"\n[targets.a.capabilities.b]\ncommand = \"echo \\\"`cat {f}`\\\"\"\n[targets.a.capabilities.b.params.f]\ntype = \"string\"\n",
        &[],
        &["once.toml:4:24 unsafe-placeholder"],
        "placeholder `{f}` in `command` of capability `b` of target `a` sits inside backquotes",
    ),
    (
        "unsafe-placeholder-heredoc",
        "[targets.a]\nkind = \"command\"\n[targets.a.capabilities.b]\ncommand = \"\"\"\ncat <<EOF\n{target}\nEOF\"\"\"\n",
        &[],
        &["once.toml:6:1 unsafe-placeholder"],
        "help: pass the value as an argument",
    ),
    (
        "invalid-name",
        "[targets.\"a b\"]\nkind = \"command\"\n",
        &[],
        &["once.toml:1:10 invalid-name"],
        "invalid target name `a b`",
    ),
    (
        "path-escapes",
        "[targets.a]\nkind = \"command\"\npath = \"../x\"\n",
        &[],
        &["once.toml:3:8 path-escapes-workspace"],
        "escapes",
    ),
    (
        "absolute-path",
        "[targets.a]\nkind = \"command\"\npath = \"/etc\"\n",
        &[],
        &["once.toml:3:8 absolute-path"],
        "absolute",
    ),
    (
        "member-nothing",
        "[workspace]\nmembers = [\"nope/*\"]\n",
        &[],
        &["once.toml:2:12 member-matches-nothing"],
        "matches no folder",
    ),
    (
        "workspace-in-member",
        "[workspace]\nmembers = [\"m\"]\n",
        &[("m/once.toml", "[workspace]\nname = \"x\"\n")],
        &["m/once.toml:1:2 workspace-in-member"],
        "only allowed in the root",
    ),
    (
        "cache-in-member",
        "[workspace]\nmembers = [\"m\"]\n",
        &[(
            "m/once.toml",
            "[cache]\nremote = \"grpc://127.0.0.1:50051\"\n",
        )],
        &["m/once.toml:1:2 cache-in-member"],
        "a `[cache]` table is only allowed in the root once.toml",
    ),
    (
        "cache-bad-scheme",
        "[cache]\nremote = \"https://cache.example.com\"\n",
        &[],
        &["once.toml:2:10 bad-remote-url"],
        "help: write `grpc://host:port` (plaintext) or `grpcs://host[:port]` (TLS)",
    ),
    (
        "cache-url-without-host",
        "[cache]\nremote = \"grpcs://\"\n",
        &[],
        &["once.toml:2:10 bad-remote-url"],
        "found: `grpcs://`",
    ),
    (
        "cache-bad-timeout",
        "[cache]\ntimeout = \"0s\"\n",
        &[],
        &["once.toml:2:11 bad-duration"],
        "invalid `cache.timeout`: zero duration",
    ),
    (
        "cache-timeout-without-unit",
        "[cache]\ntimeout = \"10\"\n",
        &[],
        &["once.toml:2:11 bad-duration"],
        "has no unit",
    ),
    (
        "cache-headers",
        "[cache]\nheaders = { Authorization = \"Bearer s3cret\" }\n",
        &[],
        &["once.toml:2:1 credentials-in-manifest"],
        "ONCE_REMOTE_HEADERS",
    ),
    (
        "cache-unknown-key",
        "[cache]\nuplaod = false\n",
        &[],
        &["once.toml:2:1 unknown-key"],
        "did you mean `upload`",
    ),
    (
        "cache-misspelt-table",
        "[cach]\nupload = false\n",
        &[],
        &["once.toml:1:2 unknown-key"],
        "did you mean `cache`",
    ),
    (
        "cache-wrong-types",
        "[cache]\nupload = \"no\"\ninstance = 3\n",
        &[],
        &["once.toml:2:10 wrong-type", "once.toml:3:12 wrong-type"],
        "`cache.upload` must be a boolean",
    ),
    (
        "unknown-param-type",
        "[targets.a]\nkind = \"command\"\n[targets.a.capabilities.b]\ncommand = \"x\"\n[targets.a.capabilities.b.params.l]\ntype = \"bool\"\n",
        &[],
        &["once.toml:6:8 unknown-param-type"],
        "did you mean `boolean`",
    ),
    (
        "unknown-field",
        "[targets.a]\nkind = \"cargo-package\"\npackag = \"x\"\n",
        &[],
        &["once.toml:3:1 unknown-key"],
        "did you mean `package`",
    ),
    (
        "wrong-field-type",
        "[targets.a]\nkind = \"cargo-package\"\nfeatures = [1]\n",
        &[],
        &["once.toml:3:13 wrong-type"],
        "must be a string",
    ),
    (
        "bad-workspace-deadline",
        "[workspace]\ndefault-deadline = \"0s\"\n",
        &[],
        &["once.toml:2:20 bad-duration"],
        "zero duration",
    ),
    (
        "bad-env-mode",
        "[workspace]\nenv-mode = \"strikt\"\n",
        &[],
        &["once.toml:2:12 unknown-env-mode"],
        "did you mean `strict`",
    ),
    (
        "bad-pass-env",
        "[workspace]\npass-env = [\"CI\", \"A-B\"]\n[targets.a]\nkind = \"command\"\n[targets.a.capabilities.b]\ncommand = \"x\"\npass-env = [\"\"]\n",
        &[],
        &["once.toml:2:19 bad-env-glob", "once.toml:7:13 bad-env-glob"],
        "invalid variable glob `A-B` in `workspace.pass-env`",
    ),
    (
        "persistent-with-deadline",
        "[targets.a]\nkind = \"command\"\n[targets.a.capabilities.dev]\ncommand = \"x\"\npersistent = true\ndeadline = \"5m\"\ncache = true\n",
        &[],
        &[
            "once.toml:6:1 persistent-with-deadline",
            "once.toml:7:1 persistent-cached",
        ],
        "capability `dev` of target `a` is persistent and has a `deadline`",
    ),
    (
        "depends-on-persistent",
        "[targets.api]\nkind = \"command\"\n[targets.api.capabilities.serve]\ncommand = \"x\"\npersistent = true\n[targets.web]\nkind = \"command\"\ndeps = [\"api\"]\n[targets.web.capabilities.serve]\ncommand = \"y\"\n[targets.web.capabilities.e2e]\ncommand = \"z\"\ndeps = [\"api:serve\"]\n",
        &[],
        &[
            "once.toml:8:9 depends-on-persistent",
            "once.toml:13:9 depends-on-persistent",
        ],
        "target `web` depends on `api:serve`, which is persistent and never ends",
    ),
    (
        "wrong-type-cache",
        "[targets.a]\nkind = \"command\"\n[targets.a.capabilities.b]\ncommand = \"x\"\ncache = \"no\"\n",
        &[],
        &["once.toml:5:9 wrong-type"],
        "must be a boolean",
    ),
    (
        "many-at-once",
        "[workspace]\nnme = \"x\"\n[targets.a]\nkind = \"command\"\ntags = 3\n[targets.a.capabilities.b]\ncommand = \"x\"\ndeadline = \"1y\"\ndeps = [\"zzz\"]\n[targets.b]\nkind = \"nope\"\n[targets.c]\n",
        &[],
        &[
            "once.toml:2:1 unknown-key",
            "once.toml:5:8 wrong-type",
            "once.toml:8:12 bad-duration",
            "once.toml:9:9 unknown-target",
            "once.toml:11:8 unknown-kind",
            "once.toml:12:10 missing-kind",
        ],
        "unknown unit `y`",
    ),
    (
        "evaluator-unknown-language",
        "[targets.a]\nkind = \"command\"\n[targets.a.evaluator]\nlanguage = \"pyton\"\n",
        &[],
        &["once.toml:4:12 unknown-language"],
        "did you mean `python`",
    ),
    (
        "evaluator-missing-language",
        "[targets.a]\nkind = \"command\"\n[targets.a.evaluator]\ncommand = \"python3.12\"\n",
        &[],
        &["once.toml:3:1 missing-language"],
        "has no `language`",
    ),
    (
        "evaluator-key-of-another-language",
        "[targets.a]\nkind = \"command\"\nevaluator = { language = \"nrepl\", command = \"bb\" }\n",
        &[],
        &["once.toml:3:35 evaluator-key"],
        "`command` does not apply to the nrepl evaluator",
    ),
    (
        "evaluator-port-file-escapes",
        "[targets.a]\nkind = \"command\"\n[targets.a.evaluator]\nlanguage = \"nrepl\"\nport-file = \"../../.nrepl-port\"\n",
        &[],
        &["once.toml:5:13 absolute-path"],
        "leaves the workspace",
    ),
    (
        "evaluator-unknown-key",
        "[targets.a]\nkind = \"command\"\n[targets.a.evaluator]\nlanguage = \"node\"\nport = 3\n",
        &[],
        &["once.toml:5:1 unknown-key"],
        "in the evaluator of target `a`",
    ),
];

#[test]
fn bad_manifests_report_every_problem() {
    let mut failures = Vec::new();
    for (name, manifest, extra, expected, substring) in CASES {
        let mut files = vec![("once.toml", *manifest)];
        files.extend(extra.iter().copied());
        let tmp = TempWs::new(&files);
        let ws = tmp.load();
        let got: Vec<String> = ws
            .diagnostics()
            .iter()
            .map(|d| format!("{}:{}:{} {}", d.file, d.line, d.column, d.code))
            .collect();
        let all_text: String = ws.diagnostics().iter().map(|d| format!("{d}\n")).collect();
        if got != *expected || !all_text.contains(substring) {
            failures.push(format!("case `{name}`:\n  expected {expected:?} containing {substring:?}\n  got {got:?}\n{all_text}"));
        }
        let warnings_only = ws
            .diagnostics()
            .iter()
            .all(|d| d.severity == once_graph::Severity::Warning);
        assert_eq!(ws.has_errors(), !warnings_only, "{name}");
    }
    assert!(CASES.len() >= 22);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn not_utf8_and_too_large() {
    let tmp = TempWs::new(&[]);
    tmp.write_bytes("once.toml", b"[targets.a]\nkind = \"x\xff\"\n");
    let ws = tmp.load();
    let d: Vec<String> = ws
        .diagnostics()
        .iter()
        .map(|d| format!("{}:{}:{} {}", d.file, d.line, d.column, d.code))
        .collect();
    assert_eq!(d, ["once.toml:2:10 not-utf8"]);

    let big = "#".repeat(16 * 1024 * 1024 + 10);
    tmp.write("once.toml", &big);
    let ws = tmp.load();
    assert_eq!(ws.diagnostics().len(), 1);
    assert_eq!(ws.diagnostics()[0].code, "file-too-large");
}

#[test]
fn io_errors_and_discover() {
    let tmp = TempWs::new(&[("once.toml", ""), ("a/b/x.txt", "")]);
    let found = once_graph::Workspace::discover(
        &tmp.path().join("a/b"),
        &once_graph::SafeDirectories::default(),
    )
    .unwrap();
    assert_eq!(found, std::fs::canonicalize(tmp.path()).unwrap());
    // Without once.toml a folder is what its ecosystems' manifests describe: here, nothing.
    let empty = TempWs::new(&[("x.txt", "")]);
    let ws = once_graph::Workspace::load(empty.path()).unwrap();
    assert!(ws.targets().is_empty());
    assert!(ws.diagnostics().is_empty());
    assert!(matches!(
        once_graph::Workspace::load(&tmp.path().join("a/b/x.txt")),
        Err(once_graph::Error::NotADirectory { .. })
    ));
}
