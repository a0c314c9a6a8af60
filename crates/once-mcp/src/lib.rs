//! The Model Context Protocol server of `once`: JSON-RPC codec, both eras (the handshake and
//! the 2026-07-28 revision), dispatch and tool catalog.
//!
//! This crate is the transport-agnostic core: [`serve`] runs one connection
//! over any reader and writer. It must never touch process state (stdout,
//! signals, the environment): the `once` binary does the fd-level wiring and
//! registers the tools through [`Tool`].

mod arguments;
pub mod catalog;
pub mod codec;
pub mod era;
pub mod message;
mod outbox;
pub mod server;
pub mod task;
pub mod tool;
pub mod version;

pub use catalog::{
    DEFAULT_EVAL_DEADLINE, EvalPolicy, LiveWorkspace, Overview, affected_tools, catalog,
    change_tools, eval_tools, evaluator_spec, example_tools, instructions, memory_tools,
    query_tools, run_tools,
};
pub use server::{
    DetachedCallError, InputEnd, ServeOptions, ServerConfig, TOOLS_PAGE_BYTES, WORKSPACE_META_KEY,
    call_read_only, first_tools_page, serve, serve_with,
};
pub use task::{TASKS_EXTENSION, TaskPolicy, Tasks};
pub use tool::{
    Annotations, Answer, CallContext, CancelToken, Gate, Gates, Handler, LogLevel, Outcome, Tool,
    ToolDefinitionError, ToolResult, answer_output_schema, optional_bool, optional_str,
    optional_u64, required_str, validate_tools, wrap_output_schema,
};
pub use version::ProtocolVersion;
