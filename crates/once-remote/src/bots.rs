//! The bot's half of remote execution: the Remote Workers API (`google.devtools.remoteworkers.
//! v1test2.Bots`) that BuildGrid hands work out by. A bot opens a session (`CreateBotSession`),
//! then keeps calling `UpdateBotSession` with the state of its leases; the server answers with
//! new leases (an `Action` to run) and holds the call while it has none (a long poll, bounded
//! by the deadline the bot gives). This module frames those calls and packs and unpacks what
//! travels in a lease; it runs nothing, and must never accept a lease whose payload it cannot
//! read as an `Action` or its digest.

use std::time::Duration;

use prost::Message;

use crate::client::Client;
use crate::error::Error;
use crate::proto::google::devtools::remoteworkers::v1test2 as rw;
use crate::proto::google::rpc::Status;
use crate::reapi;

const BOTS: &str = "/google.devtools.remoteworkers.v1test2.Bots/";
const ACTION_TYPE: &str = "type.googleapis.com/build.bazel.remote.execution.v2.Action";
const DIGEST_TYPE: &str = "type.googleapis.com/build.bazel.remote.execution.v2.Digest";
const RESULT_TYPE: &str = "type.googleapis.com/build.bazel.remote.execution.v2.ActionResult";

/// gRPC's `FAILED_PRECONDITION`, the status of a lease the bot could not carry out (a blob
/// missing from the CAS, a tree it refuses): final, as retrying elsewhere would fail the same.
const FAILED_PRECONDITION: i32 = 9;
/// gRPC's `UNAVAILABLE`, the status of a lease the bot gives back unfinished (it is stopping):
/// BuildGrid hands such a job to another bot at once.
const UNAVAILABLE: i32 = 14;
/// gRPC's `DEADLINE_EXCEEDED`, the status of an action stopped by its timeout.
const DEADLINE_EXCEEDED: i32 = 4;

/// What a lease asks the bot to run.
#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    /// The `Action` itself, as BuildGrid sends it.
    Action(reapi::Action),
    /// Only its digest: the bot reads the `Action` from the CAS.
    ActionDigest(reapi::Digest),
}

impl Client {
    /// Opens a session for the bot `bot_id`, which runs one action at a time on a machine
    /// described by `properties` (`OSFamily` = `linux`, ...). The server may hold the call
    /// until it has work, up to `wait`.
    pub fn create_bot_session(
        &self,
        bot_id: &str,
        properties: &[(String, String)],
        wait: Duration,
    ) -> Result<rw::BotSession, Error> {
        let session = rw::BotSession {
            bot_id: bot_id.to_owned(),
            status: rw::BotStatus::Ok as i32,
            worker: Some(rw::Worker {
                devices: vec![rw::Device {
                    handle: bot_id.to_owned(),
                    properties: properties
                        .iter()
                        .map(|(key, value)| rw::device::Property {
                            key: key.clone(),
                            value: value.clone(),
                        })
                        .collect(),
                }],
                ..Default::default()
            }),
            // `version` is left empty: BuildGrid counts its lease updates there.
            ..Default::default()
        };
        let request = rw::CreateBotSessionRequest {
            parent: self.instance().to_owned(),
            bot_session: Some(session),
        };
        self.unary_within(
            &format!("{BOTS}CreateBotSession"),
            "CreateBotSession",
            &request,
            wait,
        )
    }

    /// Reports `session` (its status and the state of each lease) and returns the server's
    /// view of it, with any new lease; the server may hold the call up to `wait` for work.
    pub fn update_bot_session(
        &self,
        session: &rw::BotSession,
        wait: Duration,
    ) -> Result<rw::BotSession, Error> {
        let request = rw::UpdateBotSessionRequest {
            name: session.name.clone(),
            bot_session: Some(session.clone()),
            update_mask: None,
        };
        self.unary_within(
            &format!("{BOTS}UpdateBotSession"),
            "UpdateBotSession",
            &request,
            wait,
        )
    }
}

/// What `lease` asks to run, or why it cannot be read.
pub fn lease_work(lease: &rw::Lease) -> Result<Work, String> {
    let Some(payload) = &lease.payload else {
        return Err(format!("lease `{}` carries no payload", lease.id));
    };
    match payload.type_url.as_str() {
        ACTION_TYPE => reapi::Action::decode(payload.value.as_slice())
            .map(Work::Action)
            .map_err(|e| format!("lease `{}` carries a broken Action: {e}", lease.id)),
        DIGEST_TYPE => reapi::Digest::decode(payload.value.as_slice())
            .map(Work::ActionDigest)
            .map_err(|e| format!("lease `{}` carries a broken Digest: {e}", lease.id)),
        other => Err(format!(
            "lease `{}` carries a `{other}`, not an Action: this bot runs REAPI actions only",
            lease.id
        )),
    }
}

/// Marks `lease` completed with `result`, as the server expects a finished action reported.
pub fn complete_lease(lease: &mut rw::Lease, result: &reapi::ActionResult) {
    lease.state = rw::LeaseState::Completed as i32;
    lease.status = Some(Status::default());
    lease.result = Some(prost_types::Any {
        type_url: RESULT_TYPE.to_owned(),
        value: result.encode_to_vec(),
    });
}

/// Marks `lease` completed with what the action wrote before its timeout stopped it: the status
/// is `DEADLINE_EXCEEDED`, as the API asks of an action that ran out of time.
pub fn time_out_lease(lease: &mut rw::Lease, result: &reapi::ActionResult) {
    complete_lease(lease, result);
    lease.status = Some(Status {
        code: DEADLINE_EXCEEDED,
        message: "the action ran past its timeout".to_owned(),
        details: Vec::new(),
    });
}

/// Marks `lease` completed without a result: the bot could not carry it out (`message` says
/// why, for the client that asked for the action), and no other bot would do better.
pub fn fail_lease(lease: &mut rw::Lease, message: String) {
    end_lease(lease, FAILED_PRECONDITION, message);
}

/// Gives `lease` back unfinished (the bot is stopping), for the server to hand to another bot.
pub fn release_lease(lease: &mut rw::Lease, message: String) {
    end_lease(lease, UNAVAILABLE, message);
}

fn end_lease(lease: &mut rw::Lease, code: i32, message: String) {
    lease.state = rw::LeaseState::Completed as i32;
    lease.status = Some(Status {
        code,
        message,
        details: Vec::new(),
    });
    lease.result = None;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease_with(type_url: &str, value: Vec<u8>) -> rw::Lease {
        rw::Lease {
            id: "job-1".into(),
            payload: Some(prost_types::Any {
                type_url: type_url.into(),
                value,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_lease_is_read_as_an_action_or_its_digest_and_nothing_else() {
        let action = reapi::Action {
            do_not_cache: true,
            ..Default::default()
        };
        let lease = lease_with(ACTION_TYPE, action.encode_to_vec());
        assert_eq!(lease_work(&lease), Ok(Work::Action(action)));
        let digest = crate::digest_of(b"an action");
        let lease = lease_with(DIGEST_TYPE, digest.encode_to_vec());
        assert_eq!(lease_work(&lease), Ok(Work::ActionDigest(digest)));
        let odd = lease_with("type.googleapis.com/google.protobuf.Empty", Vec::new());
        assert!(lease_work(&odd).unwrap_err().contains("not an Action"));
        let broken = lease_with(ACTION_TYPE, vec![0xff, 0xff]);
        assert!(lease_work(&broken).unwrap_err().contains("broken Action"));
    }

    #[test]
    fn a_completed_lease_carries_its_result_and_a_failed_one_its_reason() {
        let mut lease = rw::Lease::default();
        let result = reapi::ActionResult {
            exit_code: 3,
            ..Default::default()
        };
        complete_lease(&mut lease, &result);
        assert_eq!(lease.state, rw::LeaseState::Completed as i32);
        let any = lease.result.clone().unwrap();
        assert_eq!(any.type_url, RESULT_TYPE);
        assert_eq!(
            reapi::ActionResult::decode(any.value.as_slice()).unwrap(),
            result
        );
        fail_lease(&mut lease, "no input root".into());
        assert_eq!(lease.status.clone().unwrap().code, FAILED_PRECONDITION);
        assert!(lease.result.is_none());
        release_lease(&mut lease, "stopping".into());
        assert_eq!(lease.status.unwrap().code, UNAVAILABLE);
    }
}
