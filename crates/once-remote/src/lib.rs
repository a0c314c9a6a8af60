//! A small blocking client of the caches of the Remote Execution API v2 (REAPI): the ActionCache,
//! the content-addressable storage (CAS) and ByteStream, over gRPC that it frames itself on one
//! HTTP/2 connection (`h2`), without tonic: `grpc://host:port` in plaintext (loopback, trusted
//! networks) or `grpcs://host[:port]` in TLS (rustls, port 443 by default).
//!
//! It also speaks remote execution's two halves: a client's `Execute`/`WaitExecution`/
//! `CancelOperation` (`execution.rs`) and a bot's Remote Workers API (`bots.rs`), with the same
//! framing, bounds and checks; calls the server may hold on purpose (a bot's long poll, an
//! action's run) are bounded by a wait their caller gives instead of the client's timeout.
//!
//! Theory of operation: a `Client` owns a current-thread tokio runtime and, at most, one HTTP/2
//! connection; each public call runs that runtime until its answer or the client's timeout, so
//! callers see plain blocking functions and no async leaks out. A transport failure drops the
//! connection and the next call opens a new one. Every blob read is checked against its SHA-256
//! digest before it is returned; every call is bounded by the timeout; header values (credentials)
//! never appear in errors or `Debug` output. Over TLS the server's certificate must chain to the
//! system's trust roots (or to those that `SSL_CERT_FILE`/`SSL_CERT_DIR` name instead) and carry
//! the URL's host; nothing turns that check off. Its message types (`reapi`) and `digest_of` serve
//! any crate that describes actions as REAPI does (`once-run`); only a caller that means to reach
//! a server makes a `Client`, and nothing here opens a connection until one is made.

mod answers;
mod blob;
mod bots;
mod client;
mod digest;
mod error;
mod execution;
mod grpc;
mod proto;
mod tls;
mod wire;

pub use answers::{Answer, check_answer, frame};
pub use blob::{Blob, BlobFile, IN_MEMORY};
pub use bots::{Work, complete_lease, fail_lease, lease_work, release_lease, time_out_lease};
pub use bytes::Bytes;
pub use client::{Capabilities, Client, LOOKUP_LIMIT, Lookup, MAX_LOOKUPS};
pub use digest::digest_of;
pub use error::{Error, code_name as status_name};
/// The REAPI v2 messages (`Digest`, `ActionResult`, `OutputFile`, ...), as generated from the
/// vendored protos.
pub use proto::build::bazel::remote::execution::v2 as reapi;
/// The ByteStream messages (`ReadResponse`, `WriteResponse`, ...) blobs travel in.
pub use proto::google::bytestream;
/// The Remote Workers API messages (`BotSession`, `Lease`, ...) a bot speaks.
pub use proto::google::devtools::remoteworkers::v1test2 as remoteworkers;
/// The long-running operations remote execution reports through.
pub use proto::google::longrunning;
