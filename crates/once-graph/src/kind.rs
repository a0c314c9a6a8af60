//! The built-in target kinds, as data.
//!
//! The same tables drive manifest validation (which keys a target may have,
//! what each capability runs) and the published JSON Schemas, so the two can
//! never disagree. This module must never contain validation logic of its own:
//! it only describes.

use std::sync::{Arc, OnceLock};

use serde::Serialize;

use crate::model::DEFAULT_DEADLINE;
use crate::model::{Capability, Origin, Param, ParamType};
use crate::template::Template;

/// The type of a kind's field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FieldType {
    /// A string.
    String,
    /// `true` or `false`.
    Boolean,
    /// A 64-bit signed integer.
    Integer,
    /// A list of strings.
    StringList,
}

impl FieldType {
    /// Human name used in diagnostics ("expected …").
    pub fn describe(self) -> &'static str {
        match self {
            FieldType::String => "a string",
            FieldType::Boolean => "a boolean",
            FieldType::Integer => "an integer",
            FieldType::StringList => "a list of strings",
        }
    }
}

/// The default of a field when the manifest does not set it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FieldDefault {
    /// No default (the field is absent unless set).
    None,
    /// The target's own name (e.g. a cargo package named like the target).
    TargetName,
    /// A fixed value.
    Value(serde_json::Value),
}

/// A typed field that targets of a kind may (or must) set.
#[derive(Debug, Clone, Serialize)]
pub struct FieldSpec {
    /// Key in the target table.
    pub name: String,
    /// Value type.
    pub ty: FieldType,
    /// Whether the manifest must set it.
    pub required: bool,
    /// Value used when absent.
    pub default: FieldDefault,
    /// What it means.
    pub description: String,
    /// For a list field: the flag its items follow in a command. `{features}` with flag
    /// `--features` renders as `--features=a,b`, and as nothing at all for an empty list, so a
    /// command names it unconditionally. Without a flag a list renders comma-separated.
    pub flag: Option<String>,
}

impl Kind {
    /// Fills the fields `fields` lacks with their defaults for a target named `target`; returns
    /// the required fields that have none, for the caller to report.
    pub(crate) fn fill_defaults(
        &self,
        target: &str,
        fields: &mut std::collections::BTreeMap<String, serde_json::Value>,
    ) -> Vec<&FieldSpec> {
        let mut missing = Vec::new();
        for spec in &self.fields {
            if fields.contains_key(&spec.name) {
                continue;
            }
            match &spec.default {
                FieldDefault::TargetName => {
                    fields.insert(
                        spec.name.clone(),
                        serde_json::Value::String(target.to_string()),
                    );
                }
                FieldDefault::Value(v) => {
                    fields.insert(spec.name.clone(), v.clone());
                }
                FieldDefault::None if spec.required => missing.push(spec),
                FieldDefault::None => {}
            }
        }
        missing
    }
}

/// A capability every target of a kind gets unless the manifest overrides it.
#[derive(Debug, Clone, Serialize)]
pub struct CapabilitySpec {
    /// Capability name (`build`, `test`, …).
    pub name: String,
    /// What it does.
    pub description: String,
    /// Command template (see the manifest docs for `{placeholders}`).
    pub command: String,
    /// Typed parameters.
    pub params: Vec<Param>,
    /// Input globs relative to the target folder; `!` excludes.
    pub inputs: Vec<String>,
    /// Output globs relative to the target folder.
    pub outputs: Vec<String>,
}

/// A target kind: a schema of fields plus default capabilities.
#[derive(Debug, Clone, Serialize)]
pub struct Kind {
    /// Name used in `kind = "…"`.
    pub name: String,
    /// What targets of this kind are.
    pub description: String,
    /// Extra typed keys of the target table.
    pub fields: Vec<FieldSpec>,
    /// Default capabilities, sorted by name.
    pub capabilities: Vec<CapabilitySpec>,
    /// `capabilities` as resolved capabilities (default deadline), built once:
    /// every target of the kind shares their texts instead of copying them.
    #[serde(skip)]
    pub(crate) defaults: Vec<Capability>,
}

impl Kind {
    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&FieldSpec> {
        self.fields.iter().find(|f| f.name == name)
    }
    /// The default capability named `name`.
    pub fn capability(&self, name: &str) -> Option<&CapabilitySpec> {
        self.capabilities.iter().find(|c| c.name == name)
    }
}

/// All built-in kinds, sorted by name.
pub fn builtin_kinds() -> &'static [Kind] {
    static KINDS: OnceLock<Vec<Kind>> = OnceLock::new();
    KINDS.get_or_init(build_kinds)
}

/// The built-in kind named `name`.
pub fn find_kind(name: &str) -> Option<&'static Kind> {
    builtin_kinds().iter().find(|k| k.name == name)
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| (*x).to_string()).collect()
}

fn cap(
    name: &str,
    description: &str,
    command: &str,
    inputs: &[&str],
    outputs: &[&str],
) -> CapabilitySpec {
    CapabilitySpec {
        name: name.into(),
        description: description.into(),
        command: command.into(),
        params: Vec::new(),
        inputs: s(inputs),
        outputs: s(outputs),
    }
}

/// The script each `npm-package` default capability runs: the one rule that names them, read by
/// the kind's commands here and by the trimming of a declared package's defaults to the scripts
/// its `package.json` has (`discover::javascript::scripts`).
pub(crate) const NPM_SCRIPTS: &[(&str, &str)] = &[
    ("build", "build"),
    ("check", "typecheck"),
    ("fmt", "format"),
    ("lint", "lint"),
    ("test", "test"),
];

/// The script the `npm-package` default capability `capability` runs.
pub(crate) fn npm_script(capability: &str) -> Option<&'static str> {
    NPM_SCRIPTS
        .iter()
        .find(|(cap, _)| *cap == capability)
        .map(|(_, script)| *script)
}

/// The `npm-package` default `capability`: `npm run SCRIPT` (`npm test` for the `test` script).
fn npm_script_cap(capability: &str, inputs: &[&str], outputs: &[&str]) -> CapabilitySpec {
    let script = npm_script(capability).unwrap_or(capability);
    let command = if script == "test" {
        "npm test".to_string()
    } else {
        format!("npm run {script}")
    };
    cap(
        capability,
        &format!("Run the `{script}` script"),
        &command,
        inputs,
        outputs,
    )
}

fn package_field(what: &str) -> FieldSpec {
    FieldSpec {
        name: "package".into(),
        ty: FieldType::String,
        required: false,
        default: FieldDefault::TargetName,
        description: format!("{what}; defaults to the target name"),
        flag: None,
    }
}

fn sorted(mut caps: Vec<CapabilitySpec>) -> Vec<CapabilitySpec> {
    caps.sort_by(|a, b| a.name.cmp(&b.name));
    caps
}

fn build_kinds() -> Vec<Kind> {
    // Everything that can change a tool's answer: the whole folder (tests and their data
    // included) minus what tools write there, plus the workspace files beside the manifest that
    // the tool reads too (`//` names a path from the workspace root). A capability's outputs,
    // and those of its target's other capabilities, are subtracted when a key is computed.
    const CARGO_IN: &[&str] = &[
        "**",
        "!target/**",
        "//Cargo.toml",
        "//Cargo.lock",
        "//rust-toolchain",
        "//rust-toolchain.toml",
        "//.cargo/config",
        "//.cargo/config.toml",
    ];
    const NPM_IN: &[&str] = &[
        "**",
        "!**/node_modules/**",
        "!dist/**",
        "//package.json",
        "//package-lock.json",
        "//npm-shrinkwrap.json",
        "//pnpm-lock.yaml",
        "//pnpm-workspace.yaml",
        "//yarn.lock",
        "//bun.lock",
        "//bun.lockb",
        "//tsconfig*.json",
        "//.npmrc",
    ];
    const PY_IN: &[&str] = &[
        "**",
        "!**/__pycache__/**",
        "!**/*.pyc",
        "!.venv/**",
        "!venv/**",
        "!.pytest_cache/**",
        "!.mypy_cache/**",
        "!.ruff_cache/**",
        "!.tox/**",
        "!.nox/**",
        "!**/*.egg-info/**",
        "!build/**",
        "!dist/**",
        "//pyproject.toml",
        "//uv.lock",
        "//requirements*.txt",
    ];
    const GO_IN: &[&str] = &["**", "//go.work", "//go.work.sum"];

    let mut cargo_build = cap(
        "build",
        "Compile the package",
        "cargo build -p {package} {features} {release}",
        CARGO_IN,
        &[],
    );
    cargo_build.params.push(Param {
        name: "release".into(),
        ty: ParamType::Boolean,
        default: Some(serde_json::Value::Bool(false)),
        description: Some("Build with optimizations".into()),
        flag: Some("--release".into()),
    });
    let mut cargo_test = cap(
        "test",
        "Run the package's tests",
        "cargo test -p {package} {features} {filter}",
        CARGO_IN,
        &[],
    );
    cargo_test.params.push(Param {
        name: "filter".into(),
        ty: ParamType::String,
        // Not given, the placeholder is left out: `cargo test ''` (any filter, even an empty
        // one) makes cargo skip every doc-test, which the package's own `cargo test` runs.
        default: Some(serde_json::Value::Null),
        description: Some(
            "Only run tests whose name contains this (not given: every test, doc-tests included)"
                .into(),
        ),
        flag: None,
    });

    let mut kinds = vec![
        Kind {
            name: "cargo-package".into(),
            description: "A Rust package built with cargo".into(),
            fields: vec![
                package_field("Cargo package name (`-p`)"),
                FieldSpec {
                    name: "features".into(),
                    ty: FieldType::StringList,
                    required: false,
                    default: FieldDefault::Value(serde_json::Value::Array(Vec::new())),
                    description: "Cargo features to enable: passed as `--features` to build, \
                                  test, check and lint"
                        .into(),
                    flag: Some("--features".into()),
                },
            ],
            defaults: Vec::new(),
            capabilities: sorted(vec![
                cargo_build,
                cargo_test,
                cap(
                    "check",
                    "Type-check the package",
                    "cargo check -p {package} {features}",
                    CARGO_IN,
                    &[],
                ),
                cap(
                    "lint",
                    "Lint with clippy, warnings are errors",
                    "cargo clippy -p {package} {features} -- -D warnings",
                    CARGO_IN,
                    &[],
                ),
                cap(
                    "fmt",
                    "Format the sources",
                    "cargo fmt -p {package}",
                    CARGO_IN,
                    &[],
                ),
            ]),
        },
        Kind {
            name: "command".into(),
            description: "Arbitrary commands; every capability is declared in the manifest".into(),
            fields: Vec::new(),
            capabilities: Vec::new(),
            defaults: Vec::new(),
        },
        Kind {
            name: "go-module".into(),
            description: "A Go module".into(),
            fields: vec![FieldSpec {
                name: "module".into(),
                ty: FieldType::String,
                required: false,
                default: FieldDefault::TargetName,
                description: "Go module path; defaults to the target name".into(),
                flag: None,
            }],
            defaults: Vec::new(),
            capabilities: sorted(vec![
                cap(
                    "build",
                    "Compile all packages",
                    "go build ./...",
                    GO_IN,
                    &[],
                ),
                cap("test", "Run all tests", "go test ./...", GO_IN, &[]),
                cap("check", "Vet all packages", "go vet ./...", GO_IN, &[]),
                cap("fmt", "Format the sources", "gofmt -w .", GO_IN, &[]),
                cap("lint", "Vet all packages", "go vet ./...", GO_IN, &[]),
            ]),
        },
        Kind {
            name: "npm-package".into(),
            description: "A JavaScript/TypeScript package driven by npm scripts".into(),
            fields: vec![package_field("npm package name")],
            defaults: Vec::new(),
            capabilities: sorted(vec![
                npm_script_cap("build", NPM_IN, &["dist/**"]),
                npm_script_cap("test", NPM_IN, &[]),
                npm_script_cap("lint", NPM_IN, &[]),
                npm_script_cap("check", NPM_IN, &[]),
                npm_script_cap("fmt", NPM_IN, &[]),
            ]),
        },
        Kind {
            name: "python-project".into(),
            description: "A Python project (pytest, ruff, mypy, build)".into(),
            fields: vec![package_field("Python distribution name")],
            defaults: Vec::new(),
            capabilities: sorted(vec![
                cap("test", "Run pytest", "python3 -m pytest", PY_IN, &[]),
                cap("lint", "Lint with ruff", "ruff check .", PY_IN, &[]),
                cap("fmt", "Format with ruff", "ruff format .", PY_IN, &[]),
                cap(
                    "check",
                    "Type-check with mypy",
                    "python3 -m mypy .",
                    PY_IN,
                    &[],
                ),
                cap(
                    "build",
                    "Build sdist and wheel",
                    "python3 -m build",
                    PY_IN,
                    &["dist/**"],
                ),
            ]),
        },
        Kind {
            name: "workspace".into(),
            description: "The repository as a whole: the root target, whose capabilities are \
                          the commands run from its root (root scripts, workspace-wide commands, \
                          recipes), all inferred"
                .into(),
            fields: Vec::new(),
            capabilities: Vec::new(),
            defaults: Vec::new(),
        },
    ];
    for k in &mut kinds {
        k.defaults = k
            .capabilities
            .iter()
            .map(|c| Capability {
                name: Arc::from(c.name.as_str()),
                description: Some(Arc::from(c.description.as_str())),
                command: Arc::from(c.command.as_str()),
                template: Arc::new(
                    Template::parse(&c.command).unwrap_or_else(|e| Template::broken(&e)),
                ),
                params: Arc::from(c.params.as_slice()),
                inputs: Arc::from(c.inputs.as_slice()),
                outputs: Arc::from(c.outputs.as_slice()),
                env: Default::default(),
                deadline: DEFAULT_DEADLINE,
                pass_env: Arc::new([]),
                env_file: None,
                cache: true,
                persistent: false,
                placement: crate::model::Placement::default(),
                retries: 0,
                mutex: None,
                needs: None,
                stands_for: None,
                batch: None,
                origin: Origin::Kind,
            })
            .collect();
    }
    kinds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_sorted_and_complete() {
        let names: Vec<&str> = builtin_kinds().iter().map(|k| k.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "cargo-package",
                "command",
                "go-module",
                "npm-package",
                "python-project",
                "workspace"
            ]
        );
        let cargo = find_kind("cargo-package").expect("cargo");
        assert_eq!(
            cargo.capability("lint").map(|c| c.command.as_str()),
            Some("cargo clippy -p {package} {features} -- -D warnings")
        );
        assert!(find_kind("nope").is_none());
    }

    #[test]
    fn every_default_command_quotes_its_placeholders() {
        for kind in builtin_kinds() {
            for cap in &kind.defaults {
                assert_eq!(*cap.template, Template::parse(&cap.command).unwrap());
                for slot in cap.template.slots() {
                    assert!(slot.context.is_ok(), "{}:{} {slot:?}", kind.name, cap.name);
                }
            }
        }
    }
}
