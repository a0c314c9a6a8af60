//! The JSON Schemas of `affected` and `owner`: what the MCP server advertises, pinned to the
//! values by the query tests. Only the keywords `schema_util` allows.

use serde_json::Value;

use crate::query::schema_util::{
    array, enumeration, integer, nullable, object, record, string, strings,
};

fn file_schema() -> Value {
    record(
        "A changed file and the targets that own it",
        vec![
            ("path", string("The file, relative to the workspace root")),
            (
                "owners",
                array(
                    record(
                        "A target that owns the file",
                        vec![
                            ("target", string("Target name")),
                            (
                                "reasons",
                                strings(
                                    "Why: inside its folder (the deepest target folder), an \
                                     input of some of its capabilities, or a root (`//`) input",
                                ),
                            ),
                        ],
                    ),
                    "The first 20 owners, the deepest folder's first; empty when no target owns it",
                ),
            ),
            ("owners_total", integer("Owners over all")),
        ],
    )
}

pub(crate) fn owner_output_schema() -> Value {
    file_schema()
}

pub(crate) fn owner_input_schema() -> Value {
    object(
        "Which targets own a path",
        vec![("path", string("A path relative to the workspace root"))],
        &["path"],
    )
}

pub(crate) fn output_schema() -> Value {
    record(
        "A page of the actions that must run again, then (with `ownership: \"all\"`) of the \
         changed files with their owners",
        vec![
            (
                "actions",
                array(
                    record(
                        "An action whose cache key the change alters",
                        vec![
                            ("action", string("`target:capability`")),
                            (
                                "reason",
                                string(
                                    "Why: a changed file is its input, it depends on an affected \
                                     action, or its target depends on a target whose sources \
                                     changed",
                                ),
                            ),
                        ],
                    ),
                    "Affected actions of this page: direct ones first, then dependents by distance",
                ),
            ),
            (
                "actions_total",
                integer("Affected actions over all pages (of `capability` only, when given)"),
            ),
            ("files_total", integer("Changed files")),
            ("unowned_total", integer("Changed files no target owns")),
            (
                "owners",
                array(
                    record(
                        "A target and how many changed files it owns",
                        vec![
                            ("target", string("Target name")),
                            (
                                "files",
                                integer("Changed files it owns (inside its folder, or inputs)"),
                            ),
                        ],
                    ),
                    "With `ownership: \"summary\"`: the targets owning the most changed files, \
                     most first (at most 20); else empty",
                ),
            ),
            (
                "owners_total",
                integer("Targets owning at least one changed file"),
            ),
            (
                "files",
                array(
                    file_schema(),
                    "With `ownership: \"all\"`: this page's changed files, by path, after the \
                     actions; else empty",
                ),
            ),
            (
                "next_cursor",
                nullable(string(
                    "Pass as `cursor` to get the next page; null on the last page",
                )),
            ),
        ],
    )
}

pub(crate) fn input_schema() -> Value {
    object(
        "Which targets own changed files and which actions must run again",
        vec![
            (
                "files",
                strings("Changed files, relative to the workspace root"),
            ),
            (
                "capability",
                string("Only actions of this capability, e.g. `test`"),
            ),
            (
                "ownership",
                enumeration(
                    &["summary", "all", "none"],
                    "`summary` (default): the targets owning the most changed files; `all`: \
                     every file with its owners, after the actions; `none`: only totals",
                ),
            ),
            (
                "cursor",
                string("`next_cursor` from the previous page, unchanged; keep the same arguments"),
            ),
            (
                "limit",
                integer("Most rows (actions, then files) per page, 1-200, default 50"),
            ),
        ],
        &[],
    )
}
