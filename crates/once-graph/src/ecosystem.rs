//! The ecosystems discovery reads and the kinds of dependency their manifests state.
//!
//! A leaf: the model, the manifests and every discoverer name these, so this module must never
//! depend on any of them.

/// An ecosystem whose manifests discovery reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Ecosystem {
    /// Cargo workspaces and packages.
    Cargo,
    /// npm, pnpm, yarn and bun workspaces and packages.
    JavaScript,
    /// `pyproject.toml` projects and uv workspaces.
    Python,
    /// Go modules and `go.work` workspaces.
    Go,
    /// The repository as a whole: the root target, whose capabilities are the root
    /// `package.json`'s scripts, a Cargo workspace's workspace-wide commands and the recipes of
    /// a `justfile` or a `Makefile`.
    Workspace,
}

impl Ecosystem {
    /// Every ecosystem, in the order discovery runs them.
    pub const ALL: [Ecosystem; 5] = [
        Ecosystem::Cargo,
        Ecosystem::JavaScript,
        Ecosystem::Python,
        Ecosystem::Go,
        Ecosystem::Workspace,
    ];

    /// The name a manifest and the JSON answers use.
    pub fn name(self) -> &'static str {
        match self {
            Ecosystem::Cargo => "cargo",
            Ecosystem::JavaScript => "javascript",
            Ecosystem::Python => "python",
            Ecosystem::Go => "go",
            Ecosystem::Workspace => "workspace",
        }
    }

    /// The capabilities of each dependency that a package's `capability` waits for, unless an
    /// overlay's `needs` says otherwise: never the dependencies' tests, so one failing test
    /// never skips another package's. A JavaScript package needs its dependencies built (their
    /// `build` script writes what it imports), except to format or clean its own files. Cargo,
    /// uv and Go build a path dependency themselves as part of the dependent's command (`cargo
    /// test -p x` compiles `y`), so their packages wait for nothing.
    pub fn needs(self, capability: &str) -> &'static [&'static str] {
        match self {
            Ecosystem::JavaScript if matches!(capability, "fmt" | "format" | "clean") => &[],
            Ecosystem::JavaScript => &["build"],
            Ecosystem::Cargo | Ecosystem::Python | Ecosystem::Go => &[],
            // The root target has no edges.
            Ecosystem::Workspace => &[],
        }
    }
}

/// What a dependency edge is for, as the ecosystem's manifest says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EdgeKind {
    /// Needed to build and run (`dependencies`, `require`).
    Normal,
    /// Needed only by tests, examples and tooling (`dev-dependencies`, `devDependencies`).
    Dev,
    /// Needed by the build script (`build-dependencies`).
    Build,
    /// Optional or peer dependencies (`optionalDependencies`, `peerDependencies`).
    Optional,
}

impl EdgeKind {
    /// The name the JSON answers use.
    pub fn name(self) -> &'static str {
        match self {
            EdgeKind::Normal => "normal",
            EdgeKind::Dev => "dev",
            EdgeKind::Build => "build",
            EdgeKind::Optional => "optional",
        }
    }
}
