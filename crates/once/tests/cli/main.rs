//! Integration tests of the `once` binary: real processes, real files, whole outputs.
//! One test binary, so the crate links once.

mod affected;
mod batch;
mod book;
mod book_console;
mod bounded;
// The BuildGrid and PostgreSQL of `once-remote`'s tests, shared by the remote tests here.
#[path = "../../../once-remote/tests/support/buildgrid.rs"]
mod buildgrid;
mod cache_bound;
mod cache_worktree;
mod changes;
mod check;
mod colour;
mod command_line;
mod completions;
mod contain;
mod did_you_mean;
mod discovery;
mod dry_run;
mod eval;
mod examples;
mod false_green;
mod floors;
// The hostile REAPI cache of `once-remote`'s tests, shared by the remote tests here.
#[path = "../../../once-remote/tests/support/hostile_cache.rs"]
mod hostile_cache;
mod hostile_deep_pnpm;
mod hostile_git_config;
mod hostile_lying_uv_lock;
mod hostile_manifest_above;
mod hostile_nested_fixtures;
mod hostile_remote_credentials;
mod key;
mod manifest_schema;
mod mcp;
mod mcp_http;
mod mcp_http_modern;
mod mcp_schemas;
mod mcp_tasks;
mod memory;
mod outcomes;
mod placeholders;
#[path = "../../../once-remote/tests/support/postgres.rs"]
mod postgres;
mod proof;
mod query;
mod ran_again;
mod real_repositories;
mod remote;
mod remote_bounds;
mod remote_exec;
mod root_tasks;
mod run;
mod run_env;
mod run_output;
mod run_record;
mod select;
mod session;
mod state_folder;
mod support;
mod task_shapes;
mod tools_page;
mod window;
mod window_flood;
mod window_runs;
mod worker;
