//! The one channel message that wakes a run: its leader exited, or someone asked it to stop.
//!
//! Every source of news for a run (the waiter thread, a [`Cancel`](crate::Cancel) token, the
//! [`Registry`](crate::Registry)) sends on the same channel, so the run sleeps in exactly one
//! place. Nothing here may block: a send to a run that already finished is simply dropped.

use std::io;

#[derive(Debug)]
pub(crate) enum Wake {
    /// The leader has exited and is a zombie, not yet reaped; or waiting for it failed.
    Exited(io::Result<()>),
    /// A [`Cancel`](crate::Cancel) token fired.
    Cancelled,
    /// [`Registry::stop_all`](crate::Registry::stop_all) was called.
    Stopped,
}
