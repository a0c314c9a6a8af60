//! Who owns a run in flight, and whether that process still lives.
//!
//! A pid alone cannot say so: pids are reused. The kernel's start time of a process (field 22 of
//! `/proc/PID/stat`, clock ticks since boot) does not change while it lives, so a pid together
//! with that time names one process for good. This module only reads `/proc`; it must never
//! signal or wait for a process.

use std::fs;

use crate::report::Owner;

/// The current process, or `None` where `/proc` cannot tell (the run then records no owner,
/// and no reader ever judges it abandoned).
pub(crate) fn current() -> Option<Owner> {
    let pid = std::process::id();
    start_time(pid).map(|start_time| Owner { pid, start_time })
}

/// False only when `/proc` proves the owner gone: no such pid, or a pid that now names a
/// process started at another time.
pub(crate) fn is_alive(owner: &Owner) -> bool {
    if fs::metadata("/proc/self/stat").is_err() {
        return true;
    }
    start_time(owner.pid) == Some(owner.start_time)
}

/// Field 22 of `/proc/PID/stat`. The second field is the command name in parentheses and may
/// hold spaces and parentheses itself, so fields are counted after its last `)`.
fn start_time(pid: u32) -> Option<u64> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = text.rsplit_once(')')?;
    // `rest` starts with field 3 (the state); field 22 is the 20th from there.
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_lives_and_a_reaped_child_or_another_start_time_does_not() {
        let me = current().expect("linux has /proc");
        assert!(is_alive(&me));
        assert!(!is_alive(&Owner {
            start_time: me.start_time + 1,
            ..me
        }));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!is_alive(&Owner {
            pid,
            start_time: me.start_time
        }));
    }
}
