//! The command line, declared once with clap. Parsing is the first of two stages: this module only
//! says what the person typed; `commands` resolves it against the workspace and does the work.

use std::path::PathBuf;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

const ABOUT: &str = "A self-describing, typed build graph for your workspace, with project memory, \
opened to coding agents over the Model Context Protocol";

const EXAMPLES: &str = "\
Examples:
  once check                              Validate once.toml and report every problem at once
  once query workspace                    Root, manifests, counts and the first page of targets
  once query targets --kind cargo-package List targets, filtered and paged
  once query target web                   One target with its capabilities and parameters
  once query schema cargo-package         JSON Schema of a kind's fields and parameters
  once query graph order web:test         The actions `web:test` needs, in the order they run
  once query affected --capability test   The tests your uncommitted changes make run again
  once -C ~/code/shop mcp                 Serve the graph to a coding agent over stdio
  once serve                              Keep a live session; agents join with `once mcp --attach`

The workspace is the nearest folder, upwards from here but never above the repository's top,
that holds a `once.toml`; else the outermost that holds a `Cargo.toml`, `package.json`,
`pnpm-workspace.yaml`, `pyproject.toml`, `go.work` or `go.mod`. Outside a repository, a folder
another user owns is the workspace only if `ONCE_SAFE_DIRECTORIES` names it. `-C DIR` or
`--workspace DIR` names the workspace instead, before or after the subcommand.";

/// The parsed command line.
#[derive(Debug, Parser)]
#[command(name = "once", version, about = ABOUT, after_help = EXAMPLES)]
#[command(max_term_width = 100)]
pub struct Cli {
    /// Use the workspace in DIR instead of searching upwards from the current folder
    #[arg(short = 'C', long = "workspace", value_name = "DIR", global = true)]
    pub workspace: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate every manifest of the workspace and report all problems at once
    #[command(after_help = "\
Examples:
  once check            Human-readable report, one problem per block, with file:line:column
  once check --json     The same diagnostics as JSON

Exit status: 0 when the manifests are valid (warnings allowed), 2 when any has an error.")]
    Check {
        /// Print the diagnostics as JSON
        #[arg(long)]
        json: bool,
    },

    /// Write a short once.toml that explains how to change what once infers
    #[command(after_help = "\
once needs no once.toml: it infers targets from Cargo.toml, package.json workspaces and
pnpm-workspace.yaml, pyproject.toml and uv workspaces, go.work and go.mod. The file this writes
only adds to that (change an inferred target, declare more, leave some out, turn discovery off).
It is written at the workspace root once finds from here, and never over an existing once.toml.

Examples:
  once init              Write once.toml and say what is inferred
  once init --json       The same, as JSON: path, inferred, ecosystems")]
    Init {
        /// Print what was written as JSON
        #[arg(long)]
        json: bool,
    },

    /// Ask the build graph a question; `--json` prints the value its MCP tool returns
    #[command(
        subcommand,
        after_help = "\
Every subcommand takes `--json`: it prints the JSON value that the MCP tool of the same name
(`once_query_*`) returns. `affected`, `owner`, `hashes` and `key` print text without it; every
other answer is that JSON either way.
Lists are paged: pass an answer's `next_cursor` back with `--cursor`.

Examples:
  once query workspace
  once query targets --tag backend --limit 20
  once query target web
  once query schema cargo-package
  once query graph dependents core --transitive
  once query affected --capability test         What to test after the uncommitted changes
  once query hashes src/lib.rs                  The hashes a change set names its base by

Exit status: 0 with an answer, 1 when there is none (no such target), 2 for an invalid manifest."
    )]
    Query(Query),

    /// Serve the workspace to a coding agent over the Model Context Protocol (stdio)
    #[command(after_help = "\
The server reads newline-delimited JSON-RPC 2.0 on stdin and answers on stdout. Nothing else is
ever written to stdout: logs go to stderr. It stops when stdin closes or on SIGTERM/SIGINT.

Query tools are always available. Tools that change files or run commands exist only when the
person configuring the client grants them here; the workspace cannot grant them itself.

Examples:
  once -C ~/code/shop mcp                         Read-only: query the graph
  once mcp --workspace ~/code/shop --allow-run    Also let the agent run capabilities
  claude mcp add once -- once --workspace \"$PWD\" mcp")]
    Mcp(McpArgs),

    /// Evaluate code in a target's persistent evaluator (Python, Node.js or nREPL)
    #[command(after_help = "\
The target declares its evaluator in once.toml:

  [targets.analysis.evaluator]
  language = \"python\"             # or \"node\", or \"nrepl\" for a server you started
  command = \".venv/bin/python\"    # optional: the interpreter (python3 / node by default)

Past the deadline the code is interrupted (SIGINT, or nREPL `interrupt`); code that will not stop
is killed and the output says that state was lost. Ctrl-C interrupts the evaluation the same way.
When a `once serve --allow-run` session serves the workspace, `once eval` evaluates there: the
evaluator stays warm between commands (and agents), and `--reset` starts it afresh (only when the
session was started with `--allow-eval-reset`). An evaluator runs one evaluation at a time: while
another one (yours or an agent's) is running, `once eval` prints who holds it and exits 1 at once
instead of waiting. Without a session (or with `--local`) the evaluator lives only as long as this
command.

Examples:
  once eval analysis 'import pandas as pd; pd.__version__'
  once eval web -f scratch.js --deadline 5m
  echo '(+ 1 2)' | once eval clj - --json
  once eval --reset analysis

Exit status: 0 when the code ran to the end, 1 otherwise (an exception, a deadline, a crash, a
busy evaluator, empty code).")]
    Eval(EvalArgs),

    /// Keep a live session of the workspace, with its window (a web page), and serve it over MCP on 127.0.0.1
    #[command(after_help = "\
The session loads the graph once and keeps it fresh, holds the runs it starts, and serves one MCP
client at a time on a loopback port the OS picks. Clients reach it through `once mcp --attach`,
which finds it in `$XDG_STATE_HOME/once/mcp/` (else `~/.local/state/once/mcp/`) and presents its
secret token. A ready line `listening on 127.0.0.1:PORT` goes to stderr. It stops on SIGTERM,
SIGINT or SIGHUP, stopping every run it started and removing its entry. Its evaluators are shared
by you (`once eval`) and the agent: the agent's `once_eval_reset` is refused unless you pass
`--allow-eval-reset`.

The same port serves the window: a page where you watch the graph, runs, change sets, memory and
evaluators, and apply or reject change sets. Open it with the one-time link printed on stderr
(`--open` opens it for you; `once sessions --url` prints a new one).

Examples:
  once -C ~/code/shop serve                 Read-only: query the graph
  once serve --allow-run --open             Let the agent run capabilities; watch in your browser
  once serve --allow-run --allow-eval-reset And let it reset the evaluators you share with it
  once serve --status                       The live sessions (same as `once sessions`)
  claude mcp add once -- once mcp --attach \"$PWD\"")]
    Serve(ServeArgs),

    /// Run actions for a remote execution server (REAPI), as one of its workers
    #[command(after_help = "\
The worker joins the server's pool over the Remote Workers API (the bots protocol BuildGrid
speaks), takes one action at a time, and for each: reads the Action, its Command and its input
root from the server's CAS into a fresh scratch folder, runs the command there with once's own
containment (a PID namespace, a subreaper or a process group, as `once run` does), and uploads
the outputs the Command declares, its stdout and its stderr. The server hands the result to the
client that asked and stores it in its action cache.

The command sees the variables its Command sets, on top of the worker's PATH, HOME, locale and
the other basic variables (the `strict` environment of `once run`); the programs it starts must
be on this machine. It can read files outside its input root: the scratch folder is not a
sandbox for files.

The worker offers OSFamily (linux, macos, windows) and ISA (the CPU) as its platform; the server
gives it only actions whose platform matches. It closes its session on every way it stops
(Ctrl-C, SIGTERM, an error), so the server stops handing it work at once, and gives back an
action it had not finished, for another worker; a server unreachable for longer than a session
lives makes it exit with status 1.

Examples:
  once worker --server grpc://127.0.0.1:50051                Join the server's default instance
  once worker --server grpcs://build.example.com --instance main
  once worker --server grpc://10.0.0.5:50051 --scratch /fast/once-worker")]
    Worker(WorkerArgs),

    /// List the live sessions of `once serve`: pid, workspace, port, uptime
    #[command(after_help = "\
Examples:
  once sessions
  once sessions --json")]
    #[command(after_help = "\
Examples:
  once sessions                    Every live session: pid, port, uptime, workspace
  once sessions --url              A new one-time link to the window of this workspace's session
  once -C ~/code/shop sessions --url   ...of that workspace's session")]
    Sessions {
        /// Print JSON
        #[arg(long)]
        json: bool,
        /// Print a new one-time link that opens the session's window (the only session, or the
        /// one of `-C DIR`)
        #[arg(long)]
        url: bool,
    },

    /// Run capabilities: dependencies first, in parallel, each once until its inputs change
    #[command(after_help = "\
Examples:
  once run web:test                       web's tests, after everything they depend on
  once run core web --jobs 4              Several targets (each's `build`, or its only capability)
  once run --all lint --keep-going        Every target's lint; go on past failures
  once run docs:build --param out=site    Set a typed parameter (checked before anything runs)
  once run web:test --force --json        Ignore the cache; print the report as JSON
  once run --tag backend test             `test` of every target tagged `backend`
  once run --name 'api-*' --tag db test   ...of those also named like `api-*`
  once run web:test -- --grep checkout    Append words to web:test's command (quoted, keyed)

An action whose command, parameters, environment, inputs and dependencies are unchanged is not
run again: its result is replayed from `.once/cache/` and its outputs restored. Logs are under
`.once/runs/<id>/`.

Exit status: 0 when every action succeeded, 1 when one failed or timed out, 2 for a bad request
(unknown target or capability, a bad parameter, an invalid manifest), 130 or 143 when
interrupted (every process it started is stopped first).")]
    Run(RunArgs),

    /// The local cache: what it holds, and pruning it to its bound
    #[command(
        subcommand,
        after_help = "\
Results are kept under `.once/cache/` at the workspace root; in a linked git worktree, in the
main worktree's (`[cache] share-worktrees = false` in the root `once.toml` keeps one per
worktree). Past `[cache] max-size` (10GiB by default) a run prunes the least recently used
results until the cache is under 80% of it; nothing a running build uses is removed.

Examples:
  once cache stats                What the cache holds, and its bound
  once cache prune                Prune to the bound now, and drop unreferenced objects
  once cache prune --max-size 1GiB --json"
    )]
    Cache(CacheCommand),

    /// Project memory: notes about the workspace that people and agents share
    #[command(
        subcommand,
        after_help = "\
Entries are Markdown files with TOML front matter under `.once/memory/`, reviewed and shared
through version control like code. `--json` prints the value the MCP tool `once_query_memory`
returns.

Examples:
  once memory add --title 'Release builds vendor OpenSSL' --kind gotcha --path Cargo.toml --body '…'
  once memory search openssl
  once memory show 20250131-093000-4f2a9c1e
  once memory check"
    )]
    Memory(MemoryCommand),

    /// Starters built into once: a `once.toml` plus files for common stacks
    #[command(
        subcommand,
        after_help = "\
Examples:
  once examples list                        Every example, with its stacks
  once examples show polyglot --json        One example's files (paths, sizes, hashes)
  once materialize rust-workspace           Write one into the current workspace"
    )]
    Examples(ExamplesCommand),

    /// Write an example's files into the workspace: all of them, or none if any would conflict
    #[command(after_help = "\
Files already there with the same content count as unchanged, so running it twice is the same as
once. If any destination exists with different content, nothing is written and every conflict is
listed (exit 1). Nothing is ever written outside the workspace, which is `-C DIR`, else the
nearest folder upwards with a `once.toml`, else the current folder.

Examples:
  once materialize rust-workspace                 Into the workspace root
  once materialize node-package --into web        Into the folder `web` (created if missing)
  once materialize polyglot --dry-run --json      Only say what would be written")]
    Materialize(MaterializeArgs),

    /// Print the completion script of a shell: bash, zsh, fish, powershell or elvish
    #[command(after_help = "\
The script completes subcommands, flags and their fixed values. Write it where the shell looks:

  bash        once completions bash > ~/.local/share/bash-completion/completions/once
  zsh         once completions zsh > ~/.zfunc/_once
              (and in ~/.zshrc, before `compinit`: fpath=(~/.zfunc $fpath))
  fish        once completions fish > ~/.config/fish/completions/once.fish
  powershell  once completions powershell >> $PROFILE
  elvish      once completions elvish >> ~/.config/elvish/rc.elv

Open a new shell afterwards. Run it again after upgrading once.")]
    Completions {
        /// The shell to write the script for
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },

    /// Change sets proposed by agents: read them, then apply or reject them
    #[command(
        subcommand,
        after_help = "\
An agent proposes a change set with the MCP tool `once_change_set_propose`, which applies nothing.
It is saved under `.once/changes/ID/` until a person decides. Each replacement or deletion names
the content it was made from (`sha256:<hex>` or `blake3:<hex>`, see `once query hashes`); `apply`
refuses the whole set when any such file changed since.

Examples:
  once changes list                          Every change set, newest first
  once changes show 20250131-093000-4f2a9c1e A unified diff against the files as they are now
  once changes apply 20250131-093000-4f2a9c1e
  once changes reject 20250131-093000-4f2a9c1e --reason 'not this way'"
    )]
    Changes(ChangesCommand),
}

#[derive(Debug, Subcommand)]
pub enum ExamplesCommand {
    /// Every example: name, description, stacks, number of files
    #[command(after_help = "Examples:\n  once examples list\n  once examples list --json")]
    List {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// One example: its description and files
    #[command(after_help = "\
Examples:
  once examples show polyglot
  once examples show node-package --file package.json   Print one file's content")]
    Show {
        /// The example's name
        name: String,
        /// Print this file of the example instead of the list
        #[arg(long, value_name = "PATH", conflicts_with = "json")]
        file: Option<String>,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct MaterializeArgs {
    /// The example's name (`once examples list`)
    pub name: String,
    /// A folder inside the workspace to write into, relative to its root (created if missing)
    #[arg(long, value_name = "DIR")]
    pub into: Option<String>,
    /// Only say what would be written
    #[arg(long)]
    pub dry_run: bool,
    /// Print JSON (the value the MCP tool `once_materialize_example` returns)
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum ChangesCommand {
    /// Every change set, newest first
    #[command(after_help = "\
Examples:
  once changes list
  once changes list --status pending --json")]
    List {
        /// Only change sets with this status: pending, applied, rejected or failed
        #[arg(long)]
        status: Option<String>,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// One change set: title, rationale, and a unified diff against the current files
    #[command(after_help = "\
Examples:
  once changes show 20250131-093000-4f2a9c1e
  once changes show 20250131-093000-4f2a9c1e --json     The stored proposal")]
    Show {
        /// The change set's id
        id: String,
        /// Print the proposal as JSON instead of the diff
        #[arg(long)]
        json: bool,
    },
    /// Apply a change set: every file or none, refused if any file changed since the proposal
    #[command(after_help = "\
Example:
  once changes apply 20250131-093000-4f2a9c1e

Exit status: 0 when applied, 1 when refused (a file moved on, or it was already decided).")]
    Apply {
        /// The change set's id
        id: String,
    },
    /// Reject a change set; it stays on record with the decision
    #[command(
        after_help = "Example:\n  once changes reject 20250131-093000-4f2a9c1e --reason 'use the builder instead'"
    )]
    Reject {
        /// The change set's id
        id: String,
        /// Why, for the record
        #[arg(long)]
        reason: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// What the local cache holds: results, objects, bytes, and its bound
    Stats {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Remove the least recently used results until the cache is under 80% of its bound, and
    /// every object no result names; waits for running builds to let go of the cache
    Prune {
        /// The bound to prune to, like `512MiB` or `1GiB` [default: `[cache] max-size`]
        #[arg(long, value_name = "SIZE", value_parser = parse_size)]
        max_size: Option<u64>,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
}

fn parse_size(text: &str) -> Result<u64, String> {
    once_graph::size::parse_size(text)
}

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Write a new entry; prints its id
    #[command(after_help = "\
Examples:
  once memory add --title 'Use thiserror in libraries' --kind convention --tag errors --body 'anyhow only in the binary'
  once memory add --title 'CI needs perl' --kind gotcha --target core --path build.rs --file notes.md
  git log -1 --format=%B | once memory add --title 'Why we pinned serde' --kind decision --file -")]
    Add(AddArgs),

    /// Change an entry: in $EDITOR on a terminal, else with flags
    #[command(after_help = "\
Examples:
  once memory edit 20250131-093000-4f2a9c1e                      Open it in $EDITOR
  once memory edit 20250131-093000-4f2a9c1e --revision 3 --body 'new text'
  once memory edit 20250131-093000-4f2a9c1e --tag build --tag ci

With `--revision`, the change is refused (exit 1, the current text on stderr) when the entry
changed since you read that revision.")]
    Edit(EditArgs),

    /// One entry with its body and staleness
    #[command(after_help = "Example:\n  once memory show 20250131-093000-4f2a9c1e --json")]
    Show {
        /// The entry's id
        id: String,
        /// Print JSON (the `once_query_memory` value)
        #[arg(long)]
        json: bool,
    },

    /// List entries, newest first, filtered and paged
    #[command(after_help = "\
Examples:
  once memory list --kind decision
  once memory list --target web --json
  once memory list --cursor 1a2b3c4d-20")]
    List(ListArgs),

    /// Ranked full-text search over titles, tags and bodies
    #[command(after_help = "\
Examples:
  once memory search openssl vendored
  once memory search 'release build' --kind gotcha --json")]
    Search {
        /// The words to look for
        #[arg(required = true)]
        words: Vec<String>,
        #[command(flatten)]
        list: ListArgs,
    },

    /// Remove an entry
    #[command(after_help = "Example:\n  once memory forget 20250131-093000-4f2a9c1e --revision 2")]
    Forget {
        /// The entry's id
        id: String,
        /// Refuse unless the entry is still at this revision
        #[arg(long)]
        revision: Option<u64>,
    },

    /// Report stale entries (a linked file changed or vanished, a linked target is gone) and
    /// broken entry files
    #[command(after_help = "\
Examples:
  once memory check
  once memory check --json

Exit status: 0 when every entry is fresh and parses, 1 otherwise.")]
    Check {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// One line that says what the entry is about
    #[arg(long)]
    pub title: String,
    /// decision, convention, gotcha, howto or note
    #[arg(long, default_value = "note")]
    pub kind: String,
    /// A tag (repeat for more)
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// A target the entry is about (repeat for more)
    #[arg(long = "target", value_name = "TARGET")]
    pub targets: Vec<String>,
    /// A file the entry is about, relative to here or to the workspace root (repeat for more)
    #[arg(long = "path", value_name = "PATH")]
    pub paths: Vec<String>,
    /// The body text
    #[arg(long, conflicts_with = "file")]
    pub body: Option<String>,
    /// Read the body from this file (`-` for stdin)
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// Print the new entry as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct EditArgs {
    /// The entry's id
    pub id: String,
    /// Refuse unless the entry is still at this revision
    #[arg(long)]
    pub revision: Option<u64>,
    /// New title
    #[arg(long)]
    pub title: Option<String>,
    /// New kind
    #[arg(long)]
    pub kind: Option<String>,
    /// Replace the tags (repeat for more)
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Option<Vec<String>>,
    /// Replace the linked targets (repeat for more)
    #[arg(long = "target", value_name = "TARGET")]
    pub targets: Option<Vec<String>>,
    /// Replace the linked files, each relative to here or to the workspace root (repeat for more)
    #[arg(long = "path", value_name = "PATH")]
    pub paths: Option<Vec<String>>,
    /// New body
    #[arg(long, conflicts_with = "file")]
    pub body: Option<String>,
    /// Read the new body from this file (`-` for stdin)
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// Open $EDITOR even when stdin is not a terminal
    #[arg(long)]
    pub editor: bool,
    /// Print the entry as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only entries of this kind
    #[arg(long)]
    pub kind: Option<String>,
    /// Only entries with this tag
    #[arg(long)]
    pub tag: Option<String>,
    /// Only entries linked to this target
    #[arg(long)]
    pub target: Option<String>,
    /// Only entries linked to this file (relative to the workspace root)
    #[arg(long)]
    pub path: Option<String>,
    /// Include bodies
    #[arg(long)]
    pub body: bool,
    /// Print JSON (the `once_query_memory` value)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub page: PageArgs,
}

#[derive(Debug, Args)]
pub struct MemoryQueryArgs {
    /// Words to search for (ranked); without any, entries are listed
    pub words: Vec<String>,
    /// One entry by id, with its body
    #[arg(long, conflicts_with = "words")]
    pub id: Option<String>,
    #[command(flatten)]
    pub list: ListArgs,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// `TARGET` or `TARGET:CAPABILITY` (repeat for more); with `--tag` or `--name`, the first is
    /// the capability to run on the targets they select
    #[arg(value_name = "TARGET[:CAPABILITY]")]
    pub actions: Vec<String>,
    /// Also run this capability of every target that has it
    #[arg(long, value_name = "CAPABILITY")]
    pub all: Option<String>,
    /// Select the targets with this tag (repeat: any of them); the capability comes first
    /// among the positional words: `--tag backend test`
    #[arg(long, value_name = "TAG")]
    pub tag: Vec<String>,
    /// Select the targets whose name matches this glob (repeat: any of them); with `--tag`,
    /// only targets that match both
    #[arg(long, value_name = "GLOB")]
    pub name: Vec<String>,
    /// Words appended to the last named action's command, each quoted for the shell; they are
    /// part of its cache key
    #[arg(last = true, value_name = "WORDS")]
    pub args: Vec<String>,
    /// Also run CAP of every target the changes since REF (default `HEAD`; uncommitted and
    /// untracked files count) affect: `--affected test` or `--affected main test`
    #[arg(long, value_name = "[REF] CAP", num_args = 1..=2, conflicts_with = "all")]
    pub affected: Option<Vec<String>>,
    /// A parameter of the named actions, `NAME=VALUE` (repeat for more)
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Replace every action's deadline (`90s`, `5m`, `1h30m`)
    #[arg(long, value_name = "DURATION")]
    pub deadline: Option<String>,
    /// How many actions run at once (default: the number of cores plus two)
    #[arg(long, short = 'j', value_name = "N",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub jobs: Option<usize>,
    /// Run even what the cache could replay
    #[arg(long)]
    pub force: bool,
    /// Before running, print what each action that would run has in its key and what changed
    /// since its last recorded run (on stderr; with `--dry-run --json`, in the JSON instead)
    #[arg(long)]
    pub explain: bool,
    /// Run nothing: print the plan in order and, for each action, whether the cache would
    /// replay it or why it would run (writes nothing, asks no remote cache)
    #[arg(long)]
    pub dry_run: bool,
    /// After a failure, go on with everything that does not depend on it
    #[arg(long)]
    pub keep_going: bool,
    /// Run the actions that can be batched (a Cargo package's `test`) as one command of their
    /// tool when they are ready together (`cargo test -p a -p b`), whatever `once.toml` says
    #[arg(long, overrides_with = "no_batch")]
    pub batch: bool,
    /// Run every action as a process of its own, whatever `once.toml` says
    #[arg(long, overrides_with = "batch")]
    pub no_batch: bool,
    /// Print the report as JSON on stdout (the value the MCP tool `once_run` returns)
    #[arg(long)]
    pub json: bool,
    /// Which actions' output to show on stderr, each line prefixed by its action
    #[arg(long, value_enum, value_name = "MODE", default_value = "new-only")]
    pub output_logs: crate::live::OutputLogs,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// The remote cache and execution engine of one run; each flag wins over its `ONCE_REMOTE_*`
/// variable and the manifest's `[cache]` and `[execution]` tables.
#[derive(Debug, Args)]
#[command(next_help_heading = "Remote cache and execution")]
pub struct RemoteArgs {
    /// Send actions to a REAPI execution engine (BuildGrid, Buildbarn, ...) that runs them on
    /// its workers: `grpc://host:port` or `grpcs://host[:port]`; also the remote cache unless one
    /// is named. Local-only actions (`local = true`, persistent, secrets, `cache = false`,
    /// `mutex`) run here; an engine that is down or refuses means one warning and a local run
    /// [env: ONCE_REMOTE_EXEC; manifest: `[execution] remote`]
    #[arg(long, value_name = "URL")]
    pub remote_exec: Option<String>,
    /// Run every action here, whatever the environment or the manifest say
    #[arg(long, conflicts_with = "remote_exec")]
    pub no_remote_exec: bool,
    /// Remote actions in flight at once; commands run here stay within `--jobs`
    /// [default: 64; env: ONCE_REMOTE_JOBS; manifest: `[execution] jobs`]
    #[arg(long, value_name = "N",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=once_graph::MAX_REMOTE_JOBS))]
    pub remote_jobs: Option<usize>,
    /// A REAPI cache behind the local one: `grpc://host:port`, or `grpcs://host[:port]` for TLS
    /// [env: ONCE_REMOTE_CACHE; manifest: `[cache] remote`]
    #[arg(long, value_name = "URL")]
    pub remote_cache: Option<String>,
    /// Run without the remote cache, whatever the environment or the manifest say
    #[arg(long, conflicts_with = "remote_cache")]
    pub no_remote_cache: bool,
    /// The server's instance name [env: ONCE_REMOTE_INSTANCE; manifest: `[cache] instance`]
    #[arg(long, value_name = "NAME")]
    pub remote_instance: Option<String>,
    /// Upload successful results (the default unless `[cache] upload = false`)
    /// [env: ONCE_REMOTE_UPLOAD=true|false]
    #[arg(long, overrides_with = "no_remote_upload")]
    pub remote_upload: bool,
    /// Read from the remote cache only: upload nothing
    #[arg(long, overrides_with = "remote_upload")]
    pub no_remote_upload: bool,
    /// Headers for every call (credentials), one `Name: value` per line
    /// [env: ONCE_REMOTE_HEADERS_FILE; also ONCE_REMOTE_HEADERS, the lines themselves]
    #[arg(long, value_name = "PATH")]
    pub remote_headers_file: Option<PathBuf>,
    /// The largest blob to fetch, like `512MiB`; a result with a larger one runs locally
    /// [default: 1GiB; env: ONCE_REMOTE_MAX_BLOB; manifest: `[cache] max-blob`]
    #[arg(long, value_name = "SIZE")]
    pub remote_max_blob: Option<String>,
    /// The largest result (its outputs together) to fetch; a larger one runs locally
    /// [default: 4GiB; env: ONCE_REMOTE_MAX_RESULT; manifest: `[cache] max-result`]
    #[arg(long, value_name = "SIZE")]
    pub remote_max_result: Option<String>,
}

impl RemoteArgs {
    pub fn flags(&self) -> once_run::RemoteFlags {
        once_run::RemoteFlags {
            url: self.remote_cache.clone(),
            off: self.no_remote_cache,
            instance: self.remote_instance.clone(),
            upload: if self.remote_upload {
                Some(true)
            } else if self.no_remote_upload {
                Some(false)
            } else {
                None
            },
            headers_file: self.remote_headers_file.clone(),
            max_blob: self.remote_max_blob.clone(),
            max_result: self.remote_max_result.clone(),
            exec: self.remote_exec.clone(),
            no_exec: self.no_remote_exec,
            jobs: self.remote_jobs,
        }
    }
}

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Enable the tools that edit project memory and materialize examples
    #[arg(long)]
    pub allow_edit: bool,
    /// Enable the tools that run and cancel capabilities
    #[arg(long)]
    pub allow_run: bool,
    /// Bridge stdio to the live `once serve` session of DIR (default: the only live session);
    /// the session's own flags decide which tools exist
    #[arg(long, value_name = "DIR", num_args = 0..=1, conflicts_with_all = ["allow_edit", "allow_run"])]
    pub attach: Option<Option<PathBuf>>,
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The target whose evaluator runs the code
    pub target: String,
    /// The code; `-` reads it from stdin
    #[arg(conflicts_with_all = ["file", "reset"])]
    pub code: Option<String>,
    /// Read the code from this file
    #[arg(short = 'f', long, value_name = "FILE", conflicts_with = "reset")]
    pub file: Option<PathBuf>,
    /// How long the code may run before it is interrupted: 500ms, 30s, 5m
    #[arg(long, value_name = "DUR", default_value = "30s")]
    pub deadline: String,
    /// Print the result as JSON (the value the MCP tool `once_eval` returns)
    #[arg(long)]
    pub json: bool,
    /// Stop the target's evaluator instead; the next evaluation starts a fresh one
    #[arg(long)]
    pub reset: bool,
    /// Evaluate in an evaluator of this command's own, even when a `once serve` session runs
    #[arg(long)]
    pub local: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Enable the tools that edit project memory and materialize examples
    #[arg(long)]
    pub allow_edit: bool,
    /// Enable the tools that run and cancel capabilities
    #[arg(long)]
    pub allow_run: bool,
    /// Open the window (the session's web page) in your browser
    #[arg(long)]
    pub open: bool,
    /// Let the attached agent reset (stop) the session's evaluators with `once_eval_reset`; they
    /// are shared with you, so by default it is refused
    #[arg(long, requires = "allow_run")]
    pub allow_eval_reset: bool,
    /// List the live sessions instead of starting one
    #[arg(long, conflicts_with_all = ["allow_edit", "allow_run", "allow_eval_reset"])]
    pub status: bool,
    /// With `--status`: print JSON
    #[arg(long, requires = "status")]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// The server: `grpc://host:port` (plaintext) or `grpcs://host[:port]` (TLS)
    #[arg(long, value_name = "URL")]
    pub server: String,
    /// The server's instance to work for
    #[arg(long, value_name = "NAME", default_value = "")]
    pub instance: String,
    /// The name the server knows this worker by (default: the host's name and this process's id)
    #[arg(long, value_name = "ID")]
    pub bot_id: Option<String>,
    /// Where each action's input root is laid out, and removed after it (default: the system's
    /// temporary folder)
    #[arg(long, value_name = "DIR")]
    pub scratch: Option<PathBuf>,
    /// A platform property this worker offers besides `OSFamily` and `ISA`, like
    /// `container-image=docker://build:1`; repeat for more. Actions that ask for a property go
    /// only to workers that offer it (as far as the server matches that property)
    #[arg(long = "property", value_name = "NAME=VALUE", value_parser = parse_property)]
    pub properties: Vec<(String, String)>,
}

/// `NAME=VALUE`, a platform property of `once worker --property`.
fn parse_property(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_owned(), value.to_owned()))
        }
        _ => Err(format!(
            "`{text}` is not `NAME=VALUE`, like `container-image=docker://build:1`"
        )),
    }
}

#[derive(Debug, Subcommand)]
pub enum Query {
    /// The workspace at a glance: root, manifests with hashes, counts, kinds, diagnostics, first targets
    #[command(after_help = "\
Example:
  once query workspace | jq .counts

Printed even when a manifest is invalid (with exit status 2): the diagnostics are part of it.")]
    Workspace {
        #[command(flatten)]
        json: JsonAlways,
    },

    /// List targets, filtered and paged with an opaque cursor
    #[command(after_help = "\
Examples:
  once query targets --name 'api-*'             Targets whose name matches a glob
  once query targets --capability test --limit 20
  once query targets --cursor c1f2e3-50         The next page, with the cursor of the last answer
  once query targets --all | jq -r '.targets[].name'   Every target at once, for a script")]
    Targets(TargetsArgs),

    /// One target in full: fields, capabilities with parameter schemas, deps and dependents
    #[command(after_help = "Example:\n  once query target web")]
    Target {
        /// The target's name
        name: String,
        #[command(flatten)]
        page: PageArgs,
        #[command(flatten)]
        json: JsonAlways,
    },

    /// JSON Schema (2020-12) of the manifest, of every kind, and of every capability's parameters
    #[command(after_help = "\
Examples:
  once query schema                  The manifest and every kind
  once query schema npm-package      Just one kind
  once query schema --manifest > once.schema.json
  once query schema --manifest --markdown   The book's page of once.toml (docs/src/reference/manifest.md)

With `--manifest` the answer is the schema of once.toml alone, a document editors read: put
`#:schema ./once.schema.json` on the first line of once.toml for taplo and Even Better TOML.
It needs no workspace, so it is printed even while once.toml is broken.")]
    Schema {
        /// Only this kind
        kind: Option<String>,
        /// Only the schema of once.toml, as one plain JSON Schema document
        #[arg(long, conflicts_with = "kind")]
        manifest: bool,
        /// With `--manifest`: the book's reference page of once.toml (Markdown), read off that
        /// schema, instead of the schema
        #[arg(long, requires = "manifest")]
        markdown: bool,
        #[command(flatten)]
        json: JsonAlways,
    },

    /// Walk the dependency graph, or print all of it (as JSON, Graphviz dot or Mermaid)
    #[command(
        subcommand_negates_reqs = true,
        args_conflicts_with_subcommands = true,
        after_help = "\
Examples:
  once query graph --format dot | dot -Tsvg > graph.svg   The whole graph as a picture
  once query graph --format mermaid           The whole graph for a Markdown page
  once query graph                            Every target and edge, as JSON
  once query graph deps web                   What web needs, one step
  once query graph dependents core --transitive
  once query graph path web proto             How web comes to depend on proto
  once query graph order web:test             What `once run web:test` would run, in waves"
    )]
    Graph(GraphArgs),

    /// Which targets own the changed files, and which actions must run again (dependents included)
    #[command(after_help = "\
Examples:
  once query affected                        Changes since `HEAD`: uncommitted and untracked files
  once query affected --since main --capability test   The tests to run since `main`
  once query affected --files src/lib.rs     These files, relative to here or to the workspace root
  once query affected --ownership all        Every changed file with its owners, after the actions
  once query affected --json                 The value `once_query_affected` returns

The changed files are those of `git diff --name-only --no-renames REV` (the working tree against
REV, so uncommitted edits count; a renamed file is its old and its new path) plus the untracked
files git does not ignore. The actions come first, then who owns the files: by default the
targets owning the most, with how many each. A file is owned by the target of the deepest folder holding it and by every target whose
capabilities' inputs name it. An action is affected when a changed file is one of its inputs,
when it depends on an affected action, or when its target depends on a target whose sources
changed: exactly when its cache key changes. Exit status 2 outside a git repository or for an
unknown revision, with what to do instead.")]
    Affected(AffectedArgs),

    /// Which targets own a path, and why
    #[command(after_help = "\
Examples:
  once query owner crates/core/src/lib.rs
  once query owner Cargo.lock --json")]
    Owner {
        /// The path, relative to here or to the workspace root
        path: PathBuf,
        /// Print the JSON value instead of text
        #[arg(long)]
        json: bool,
    },

    /// Project memory: ranked search, a filtered list, or one entry (the `once_query_memory` value)
    #[command(after_help = "\
Examples:
  once query memory                                The first page of entries, newest first
  once query memory release checklist              Ranked search over titles, tags and bodies
  once query memory --kind decision --target web   Filtered list
  once query memory --id 20261129-101500-1a2b3c4d  One entry with its body

Always JSON: the same value as `once memory search|list|show --json`.")]
    #[command(mut_arg("json", |arg| arg.help("Print JSON (the default)")))]
    Memory(MemoryQueryArgs),

    /// Size, SHA-256 and BLAKE3 of files: the `base` a change set names (the `once_query_hashes` value)
    #[command(after_help = "\
Examples:
  once query hashes src/lib.rs                   Size and both hashes, as text
  once query hashes src/lib.rs README.md --json  The value `once_query_hashes` returns

Paths are relative to the workspace root, at most 100 of them. Each is read as a change set
reaches it: never through a symbolic link, never inside `.git` or `.once`, never a folder; such a
path gets an `error` of its own. A change's `base` is `sha256:<sha256>` or `blake3:<blake3>`.
Exit status 1 when a path is missing or refused, 2 for more than 100 paths.")]
    Hashes {
        /// Files, relative to the workspace root
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<String>,
        /// Print the JSON value instead of text
        #[arg(long)]
        json: bool,
    },

    /// What an action's key is made of, and what changed since its last recorded run
    #[command(after_help = "\
Examples:
  once query key web:build             Its parts, and why it would run again (or not)
  once query key web:build --json      The same as JSON: key, entry, last_key, changes, parts

Each run that records a result also keeps the parts of its key in `.once/cache/key-parts`; this
compares them with the parts the key has now. It runs nothing and writes nothing.")]
    Key {
        /// `TARGET` or `TARGET:CAPABILITY`
        #[arg(value_name = "TARGET[:CAPABILITY]")]
        action: String,
        /// A parameter of the action, `NAME=VALUE` (repeat for more)
        #[arg(long = "param", value_name = "NAME=VALUE")]
        params: Vec<String>,
        /// Print the JSON value instead of text
        #[arg(long)]
        json: bool,
    },

    /// Every MCP tool of `once mcp`, gated ones included: name, title, description, schemas
    #[command(after_help = "\
Examples:
  once query tools --json          The catalog as JSON: each tool and its gate's flag
  once query tools --markdown      The book's tools page (docs/src/reference/tools.md), generated
                                   from the same catalog")]
    Tools {
        /// Print the tools page (Markdown) instead of JSON
        #[arg(long)]
        markdown: bool,
        /// Print JSON (the default)
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
    },

    /// Recent runs, a page of one run's actions, or a page of one action's log
    #[command(after_help = "\
Examples:
  once query runs                                 The recent runs, newest first
  once query runs 20250101-120000-001-42-0        A page of that run's actions, in plan order
  once query runs 20250101-120000-001-42-0 --offset 50
  once query runs 20250101-120000-001-42-0 --action web:test --limit 20   Its log, 20 lines

Pass an answer's `next_offset` back with `--offset` for the next page. Exit status 1 when there is
no such run or log.")]
    Runs(RunsArgs),
}

#[derive(Debug, Args)]
pub struct AffectedArgs {
    /// Compare the working tree with this revision (default `HEAD`)
    #[arg(long, value_name = "REF", conflicts_with = "files")]
    pub since: Option<String>,
    /// The changed files, instead of asking git
    #[arg(long, value_name = "PATH", num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// Only actions of this capability
    #[arg(long, value_name = "CAP", alias = "cap")]
    pub capability: Option<String>,
    /// Who owns the changed files: counts per target, every file with its owners (after the
    /// actions), or only the totals
    #[arg(long, value_enum, default_value_t = Ownership::Summary)]
    pub ownership: Ownership,
    /// Print the JSON value instead of text
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub page: PageArgs,
}

/// How much `once query affected` says about who owns the changed files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Ownership {
    /// The targets owning the most changed files, with how many each
    Summary,
    /// Every changed file with its owners, after the actions
    All,
    /// Only the totals
    None,
}

#[derive(Debug, Args)]
pub struct RunsArgs {
    /// One run, by the id `once run` printed
    pub run_id: Option<String>,
    /// With RUN_ID: the action whose log to read
    #[arg(long, value_name = "TARGET:CAP", requires = "run_id")]
    pub action: Option<String>,
    /// First action or log line (0-based)
    #[arg(long, value_name = "N")]
    pub offset: Option<u64>,
    /// How many runs (default 10, max 50), actions (default 50, max 200) or log lines (default
    /// 100, max 500)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
    #[command(flatten)]
    pub json: JsonAlways,
}

#[derive(Debug, Args)]
pub struct TargetsArgs {
    /// Only targets whose name matches this glob
    #[arg(long, value_name = "GLOB")]
    pub name: Option<String>,
    /// Only targets of this kind
    #[arg(long)]
    pub kind: Option<String>,
    /// Only targets with this tag
    #[arg(long)]
    pub tag: Option<String>,
    /// Only targets that have this capability
    #[arg(long)]
    pub capability: Option<String>,
    /// Every matching target in one answer, for scripts (agents page instead)
    #[arg(long, conflicts_with = "cursor")]
    pub all: bool,
    #[command(flatten)]
    pub page: PageArgs,
    #[command(flatten)]
    pub json: JsonAlways,
}

/// The `--json` of a query whose answer is JSON anyway: accepted so that every `once query`
/// subcommand takes it, as scripts expect.
#[derive(Debug, Args)]
pub struct JsonAlways {
    /// Print JSON (the default)
    #[arg(long = "json")]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PageArgs {
    /// Continue from the `next_cursor` of a previous answer
    #[arg(long)]
    pub cursor: Option<String>,
    /// How many rows per page
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: Option<u32>,
}

#[derive(Debug, Args)]
pub struct GraphArgs {
    #[command(subcommand)]
    pub walk: Option<GraphQuery>,
    /// Without a subcommand: print every target and edge in this format
    #[arg(long, value_enum, default_value_t = PictureFormat::Json)]
    pub format: PictureFormat,
    /// Print JSON (the default; not with another `--format`)
    #[arg(long, global = true)]
    pub json: bool,
}

/// How `once query graph` prints the whole graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PictureFormat {
    /// `{"targets": [...], "edges": [{"from", "to"}]}`: what the window page draws
    Json,
    /// Graphviz: `once query graph --format dot | dot -Tsvg > graph.svg`
    Dot,
    /// A Mermaid flowchart, for Markdown pages that render Mermaid
    Mermaid,
}

#[derive(Debug, Subcommand)]
pub enum GraphQuery {
    /// What TARGET depends on
    #[command(
        after_help = "Examples:\n  once query graph deps web\n  once query graph deps web --transitive --all"
    )]
    Deps(NeighbourArgs),
    /// What depends on TARGET
    #[command(after_help = "Example:\n  once query graph dependents core --transitive")]
    Dependents(NeighbourArgs),
    /// The shortest dependency path from one target to another, a page of its nodes at a time
    #[command(after_help = "Example:\n  once query graph path web core")]
    Path {
        /// Where the path starts (the dependent)
        from: String,
        /// Where it ends (the dependency)
        to: String,
        #[command(flatten)]
        pages: GraphPages,
    },
    /// The actions that TARGET:CAPABILITY needs, by the wave they can run in, a page at a time
    #[command(after_help = "Example:\n  once query graph order web:test --all")]
    Order {
        /// `TARGET:CAPABILITY`, or `TARGET` with `--capability`
        target: String,
        /// The capability, when not given after a colon
        #[arg(long)]
        capability: Option<String>,
        #[command(flatten)]
        pages: GraphPages,
    },
}

#[derive(Debug, Args)]
pub struct NeighbourArgs {
    /// The target, or `TARGET:CAPABILITY` to follow one capability's edges
    pub target: String,
    /// Follow edges all the way, not just one step
    #[arg(long)]
    pub transitive: bool,
    /// Follow only this capability's edges
    #[arg(long)]
    pub capability: Option<String>,
    #[command(flatten)]
    pub pages: GraphPages,
}

/// Paging of a graph answer: one page by cursor, or every page joined.
#[derive(Debug, Args)]
pub struct GraphPages {
    /// Every node in one answer, for scripts (agents page instead)
    #[arg(long, conflicts_with = "cursor")]
    pub all: bool,
    #[command(flatten)]
    pub page: PageArgs,
}

/// The command line of this process; on a wrong one, the error (exit 2), and on `--help` or
/// `--version` the text (exit 0), each coloured as [`crate::colour`] decides for its stream.
pub fn parse() -> Cli {
    let mut command = Cli::command().color(crate::colour::clap_choice(&std::io::stdout()));
    let parsed = command
        .try_get_matches_from_mut(std::env::args_os())
        .and_then(|mut matches| Cli::from_arg_matches_mut(&mut matches));
    match parsed {
        Ok(cli) => cli,
        // Help and the version go to stdout, errors to stderr: each stream decides for itself.
        Err(error) if error.use_stderr() => {
            let mut command = Cli::command().color(crate::colour::clap_choice(&std::io::stderr()));
            error.format(&mut command).exit()
        }
        Err(error) => error.exit(),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn affected_takes_an_optional_revision_before_the_capability() {
        let affected = |argv: &[&str]| match Cli::try_parse_from(argv).expect("parses").command {
            Command::Run(args) => (args.affected, args.actions),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            affected(&["once", "run", "--affected", "test"]),
            (Some(vec!["test".into()]), vec![])
        );
        assert_eq!(
            affected(&["once", "run", "--affected", "main", "test"]),
            (Some(vec!["main".into(), "test".into()]), vec![])
        );
        assert!(Cli::try_parse_from(["once", "run", "--affected"]).is_err());
        assert!(Cli::try_parse_from(["once", "run", "--affected", "t", "--all", "t"]).is_err());
    }

    #[test]
    fn attach_takes_an_optional_folder() {
        let attach = |argv: &[&str]| match Cli::try_parse_from(argv).expect("parses").command {
            Command::Mcp(args) => args.attach,
            other => panic!("{other:?}"),
        };
        assert_eq!(attach(&["once", "mcp"]), None);
        assert_eq!(attach(&["once", "mcp", "--attach"]), Some(None));
        assert_eq!(
            attach(&["once", "mcp", "--attach", "/w"]),
            Some(Some(PathBuf::from("/w")))
        );
        assert!(Cli::try_parse_from(["once", "mcp", "--attach", "--allow-run"]).is_err());
    }

    #[test]
    fn allow_eval_reset_needs_allow_run() {
        let cli = Cli::try_parse_from(["once", "serve", "--allow-run", "--allow-eval-reset"])
            .expect("parses");
        let Command::Serve(args) = cli.command else {
            panic!("not serve");
        };
        assert!(args.allow_eval_reset);
        assert!(Cli::try_parse_from(["once", "serve", "--allow-eval-reset"]).is_err());
    }

    #[test]
    fn workspace_flag_is_accepted_before_and_after_the_subcommand() {
        for argv in [
            &["once", "-C", "/w", "mcp"][..],
            &["once", "mcp", "-C", "/w"],
            &["once", "--workspace", "/w", "mcp"],
            &["once", "mcp", "--workspace", "/w"],
            &["once", "query", "target", "web", "--workspace", "/w"],
            &["once", "serve", "-C", "/w"],
        ] {
            let cli = Cli::try_parse_from(argv).expect("parses");
            assert_eq!(cli.workspace, Some(PathBuf::from("/w")), "{argv:?}");
        }
    }
}
