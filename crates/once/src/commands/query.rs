//! `once query …`: print the value that one library function computes. The MCP tools return the
//! very same values; nothing here may reshape them.

use std::fmt::Display;
use std::path::Path;

use anyhow::Result;
use once_graph::query::{self, GraphMode, GraphQuery, SchemaQuery, TargetQuery, TargetsQuery};
use once_run::{RunStore, RunsQuery};
use serde::Serialize;

use crate::cli::{self, GraphArgs, GraphPages, NeighbourArgs, PageArgs, PictureFormat, Query};
use crate::exit::Outcome;
use crate::{output, wording};

pub fn run(workspace: Option<&Path>, request: Query) -> Result<Outcome> {
    // Runs are read from the run store, not the graph: they are answered even while a manifest
    // is invalid, as `once_query_runs` answers them.
    if let Query::Runs(args) = request {
        let store = RunStore::new(&super::find_root(workspace)?);
        let q = RunsQuery {
            run_id: args.run_id,
            action: args.action,
            offset: args.offset,
            limit: args.limit,
        };
        return print(once_run::query_runs(&store, &q));
    }
    // A file's hashes need no graph either, as `once_query_hashes` needs none.
    if let Query::Hashes { paths, json } = request {
        return hashes(&super::find_root(workspace)?, &paths, json);
    }
    // The manifest's schema is the same in every workspace, and most wanted while a manifest is
    // broken: it is answered without loading one.
    if let Query::Schema {
        manifest: true,
        markdown,
        ..
    } = request
    {
        if markdown {
            output::text(&super::reference::manifest_page(&query::manifest_schema()))?;
        } else {
            output::json(&query::manifest_schema())?;
        }
        return Ok(Outcome::Success);
    }
    // The catalog's text and schemas are the same in every workspace.
    if let Query::Tools { markdown, .. } = request {
        return super::tools::print(workspace, markdown);
    }
    // Memory lives beside the graph, not in it: answered even while a manifest is invalid.
    if let Query::Memory(args) = request {
        return super::memory::query(workspace, args);
    }
    let loaded = super::load(workspace)?;
    // The workspace overview carries its own diagnostics, so it is printed even for a broken
    // manifest (then with exit status 2); every other query needs a valid graph.
    if let Query::Workspace { .. } = request {
        super::report_diagnostics(&loaded);
        output::json(&crate::overview::workspace_overview(&loaded))?;
        return Ok(if loaded.has_errors() {
            Outcome::Invalid
        } else {
            Outcome::Success
        });
    }
    if loaded.has_errors() {
        super::report_diagnostics(&loaded);
        return Ok(Outcome::Invalid);
    }
    match request {
        Query::Workspace { .. }
        | Query::Runs(_)
        | Query::Memory(_)
        | Query::Hashes { .. }
        | Query::Tools { .. } => {
            unreachable!("answered above")
        }
        Query::Key {
            action,
            params,
            json,
        } => super::key::run(&loaded, &action, &params, json),
        Query::Affected(args) => super::affected::affected(&loaded, args),
        Query::Owner { path, json } => super::affected::owner(&loaded, &path, json),
        Query::Targets(args) => {
            let (cursor, limit) = page(args.page);
            let q = TargetsQuery {
                name: args.name,
                kind: args.kind,
                tag: args.tag,
                capability: args.capability,
                cursor,
                limit,
            };
            if args.all {
                print(all_targets(&loaded, q))
            } else {
                print(query::targets(&loaded, &q))
            }
        }
        Query::Target { name, page, .. } => {
            let (cursor, limit) = self::page(page);
            print(query::target(
                &loaded,
                &TargetQuery {
                    name,
                    cursor,
                    limit,
                },
            ))
        }
        Query::Schema { kind, .. } => print(query::schema(&loaded, &SchemaQuery { kind })),
        Query::Graph(GraphArgs {
            walk: None,
            format,
            json,
        }) => {
            // `--json` is global to the walks below, so clap cannot refuse it beside `--format`.
            if json && format != PictureFormat::Json {
                eprintln!(
                    "error: `--json` and `--format` both say how to print the graph; pass one of \
                     them"
                );
                return Ok(Outcome::Invalid);
            }
            let picture = query::picture(&loaded);
            match format {
                PictureFormat::Json => output::json(&picture)?,
                PictureFormat::Dot => output::text(&picture.to_dot())?,
                PictureFormat::Mermaid => output::text(&picture.to_mermaid())?,
            }
            Ok(Outcome::Success)
        }
        Query::Graph(GraphArgs {
            walk: Some(graph), ..
        }) => {
            let (q, all) = graph_query(graph);
            if all {
                print(all_nodes(&loaded, q))
            } else {
                print(query::graph(&loaded, &q))
            }
        }
    }
}

/// Every page of `targets`, joined into one page of the same shape. Only the CLI offers this:
/// a script wants everything at once, while an agent's context wants pages.
fn all_targets(
    workspace: &once_graph::Workspace,
    mut q: TargetsQuery,
) -> Result<query::TargetsPage, query::QueryError> {
    // `--limit` still sets the page size the library works in; the answer is one page anyway.
    q.limit = q.limit.or(Some(query::MAX_PAGE_LIMIT));
    let mut all = query::targets(workspace, &q)?;
    while let Some(cursor) = all.next_cursor.take() {
        q.cursor = Some(cursor);
        let mut page = query::targets(workspace, &q)?;
        all.targets.append(&mut page.targets);
        all.next_cursor = page.next_cursor;
    }
    Ok(all)
}

/// Every page of a graph answer, joined into one answer of the same shape, like
/// [`all_targets`].
fn all_nodes(
    workspace: &once_graph::Workspace,
    mut q: GraphQuery,
) -> Result<query::GraphAnswer, query::QueryError> {
    q.limit = q.limit.or(Some(query::MAX_PAGE_LIMIT));
    let mut all = query::graph(workspace, &q)?;
    while let Some(cursor) = all.next_cursor.take() {
        q.cursor = Some(cursor);
        let mut page = query::graph(workspace, &q)?;
        all.nodes.append(&mut page.nodes);
        all.next_cursor = page.next_cursor;
    }
    Ok(all)
}

/// The library's query and whether to join every page.
fn graph_query(request: cli::GraphQuery) -> (GraphQuery, bool) {
    let query = |mode, target, to, transitive, capability, pages: GraphPages| {
        let (cursor, limit) = page(pages.page);
        let q = GraphQuery {
            mode,
            target,
            to,
            transitive,
            capability,
            cursor,
            limit,
        };
        (q, pages.all)
    };
    let neighbours = |mode, args: NeighbourArgs| {
        query(
            mode,
            args.target,
            None,
            Some(args.transitive),
            args.capability,
            args.pages,
        )
    };
    match request {
        cli::GraphQuery::Deps(args) => neighbours(GraphMode::Deps, args),
        cli::GraphQuery::Dependents(args) => neighbours(GraphMode::Dependents, args),
        cli::GraphQuery::Path { from, to, pages } => {
            query(GraphMode::Path, from, Some(to), None, None, pages)
        }
        cli::GraphQuery::Order {
            target,
            capability,
            pages,
        } => query(GraphMode::Order, target, None, None, capability, pages),
    }
}

fn page(args: PageArgs) -> (Option<String>, Option<u32>) {
    (args.cursor, args.limit)
}

/// Prints a query's value, or its error as a message that says what to do next, in the
/// command line's words: exit 2 for a wrong argument, 1 when there is no answer.
fn print<T: Serialize, E: Refusal>(answer: Result<T, E>) -> Result<Outcome> {
    match answer {
        Ok(value) => {
            output::json(&value)?;
            Ok(Outcome::Success)
        }
        Err(error) => {
            eprintln!("error: {}", wording::for_cli(&error.to_string()));
            Ok(if error.is_wrong_argument() {
                Outcome::Invalid
            } else {
                Outcome::Failure
            })
        }
    }
}

/// `once query hashes`: the value of `once_changes::hashes`, as JSON or one block per path.
fn hashes(root: &Path, paths: &[String], json: bool) -> Result<Outcome> {
    // One answer stops its rows where an MCP reply must; a terminal takes them all, so ask
    // again for the paths each answer left.
    let mut answer = match once_changes::hashes(root, paths) {
        Ok(answer) => answer,
        Err(error) => {
            eprintln!("error: {error}");
            return Ok(Outcome::Invalid);
        }
    };
    while answer.omitted > 0 {
        let rest = &paths[answer.files.len()..];
        let more = once_changes::hashes(root, rest)?;
        answer.omitted = more.omitted;
        answer.files.extend(more.files);
    }
    if json {
        output::json(&answer)?;
    } else {
        let mut text = String::new();
        for file in &answer.files {
            match (&file.error, &file.size, &file.sha256, &file.blake3) {
                (Some(error), ..) => text.push_str(&format!("{}  error: {error}\n", file.path)),
                (None, Some(size), Some(sha256), Some(blake3)) => text.push_str(&format!(
                    "{}  {size} bytes\n  sha256:{sha256}\n  blake3:{blake3}\n",
                    file.path
                )),
                _ => text.push_str(&format!("{}  no such file\n", file.path)),
            }
        }
        output::text(&text)?;
    }
    Ok(if answer.all_found() {
        Outcome::Success
    } else {
        Outcome::Failure
    })
}

/// A query's error, told apart: the caller sent something wrong, or there is no answer.
pub trait Refusal: Display {
    fn is_wrong_argument(&self) -> bool;
}

impl Refusal for query::QueryError {
    fn is_wrong_argument(&self) -> bool {
        matches!(
            self,
            query::QueryError::InvalidCursor | query::QueryError::InvalidArgument { .. }
        )
    }
}

impl Refusal for once_run::QueryRunsError {
    fn is_wrong_argument(&self) -> bool {
        matches!(self, once_run::QueryRunsError::ActionWithoutRun)
    }
}
