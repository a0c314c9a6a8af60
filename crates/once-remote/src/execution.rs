//! The client's half of remote execution: `Execution.Execute` and `WaitExecution`, each a stream
//! of `google.longrunning.Operation`s that ends with the one whose `done` is set and whose
//! response is an `ExecuteResponse`, and `Operations.CancelOperation`. Each call is bounded by
//! the deadline its caller gives (the action's own, plus room for the queue), never by the
//! client's short timeout. It must never execute an action twice for one request: a broken
//! stream is resumed by `wait_execution` with the operation's name, which the caller learns
//! from `on_operation` before the stream breaks.

use std::time::Duration;

use prost::Message;

use crate::client::{Client, UNARY};
use crate::error::Error;
use crate::grpc::{self, CallError};
use crate::proto::google::longrunning::{self as lr, operation};
use crate::reapi;

const EXECUTION: &str = "/build.bazel.remote.execution.v2.Execution/";
const OPERATIONS: &str = "/google.longrunning.Operations/";
const RESPONSE_TYPE: &str = "type.googleapis.com/build.bazel.remote.execution.v2.ExecuteResponse";

impl Client {
    /// Asks the server to run the action whose digest is `action` (its `Action`, `Command` and
    /// input root already in the CAS) and waits up to `wait` for it to finish. `on_operation`
    /// sees every operation the stream brings (queued, executing, done), the first one naming
    /// the operation to resume or cancel.
    pub fn execute(
        &self,
        action: &reapi::Digest,
        skip_cache_lookup: bool,
        wait: Duration,
        on_operation: impl FnMut(&lr::Operation),
    ) -> Result<reapi::ExecuteResponse, Error> {
        let request = reapi::ExecuteRequest {
            instance_name: self.instance().to_owned(),
            skip_cache_lookup,
            action_digest: Some(action.clone()),
            ..Default::default()
        };
        self.operations(
            &format!("{EXECUTION}Execute"),
            "Execute",
            &request,
            wait,
            on_operation,
        )
    }

    /// Follows the operation `name` (from an earlier `execute`) to its end, up to `wait`.
    pub fn wait_execution(
        &self,
        name: &str,
        wait: Duration,
        on_operation: impl FnMut(&lr::Operation),
    ) -> Result<reapi::ExecuteResponse, Error> {
        let request = reapi::WaitExecutionRequest {
            name: name.to_owned(),
        };
        self.operations(
            &format!("{EXECUTION}WaitExecution"),
            "WaitExecution",
            &request,
            wait,
            on_operation,
        )
    }

    /// Asks the server to stop the operation `name`; best effort, as the API says.
    pub fn cancel_operation(&self, name: &str) -> Result<(), Error> {
        let request = lr::CancelOperationRequest {
            name: name.to_owned(),
        };
        let _: Empty = self.unary(
            &format!("{OPERATIONS}CancelOperation"),
            "CancelOperation",
            &request,
        )?;
        Ok(())
    }

    fn operations<Q: Message>(
        &self,
        path: &str,
        name: &'static str,
        request: &Q,
        wait: Duration,
        mut on_operation: impl FnMut(&lr::Operation),
    ) -> Result<reapi::ExecuteResponse, Error> {
        let frame = grpc::frame(request).map_err(|e| self.call_error(name, e))?;
        let mut last: Option<lr::Operation> = None;
        self.call_within(path, name, vec![frame], UNARY, wait, |op: lr::Operation| {
            if last.as_ref().is_some_and(|op| op.done) {
                return Err(CallError::Protocol(
                    "an operation after the one that was done".into(),
                ));
            }
            on_operation(&op);
            last = Some(op);
            Ok(())
        })?;
        let Some(op) = last.filter(|op| op.done) else {
            return Err(self.protocol(name, "the stream ended before the operation was done"));
        };
        match op.result {
            Some(operation::Result::Response(any)) if any.type_url == RESPONSE_TYPE => {
                reapi::ExecuteResponse::decode(any.value.as_slice())
                    .map_err(|e| self.protocol(name, &format!("a broken ExecuteResponse: {e}")))
            }
            Some(operation::Result::Response(any)) => Err(self.protocol(
                name,
                &format!("a done operation answers `{}`", any.type_url),
            )),
            Some(operation::Result::Error(status)) => Err(self.call_error(
                name,
                CallError::Status {
                    code: status.code,
                    message: status.message,
                },
            )),
            None => Err(self.protocol(name, "a done operation with no result")),
        }
    }
}

/// `google.protobuf.Empty`, the answer of `CancelOperation`.
#[derive(Clone, PartialEq, Message)]
struct Empty {}
