//! The one channel message that wakes an evaluation: a reply, the end of an evaluator's channel,
//! an interrupt from the caller, or `stop_all`.
//!
//! Each target has one channel for its whole life, across restarts, so replies and ends carry
//! the generation of the evaluator that sent them and an evaluation ignores other generations'.
//! Nothing here may block: a send to a target nobody is waiting on simply queues, and the next
//! evaluation drains stale messages before it starts.

use crate::nrepl::Message;
use crate::reply::Reply;

#[derive(Debug)]
pub(crate) enum Event {
    /// An adapter answered.
    Reply { generation: u64, reply: Reply },
    /// An adapter sent output of evaluation `id` while it runs (the reply repeats it whole).
    Output {
        generation: u64,
        id: u64,
        text: String,
    },
    /// An nREPL server sent a message.
    Nrepl { generation: u64, message: Message },
    /// The evaluator's channel closed: its process ended, or the server hung up.
    Closed { generation: u64 },
    /// The caller's [`Interrupt`](crate::Interrupt) fired.
    Interrupt,
    /// [`Evaluators::stop`](crate::Evaluators::stop) was called.
    Stop,
}
