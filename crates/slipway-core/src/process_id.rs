//! Telling one process from another that later got the same pid (DESIGN §2
//! "Git safety" 5): a record names its process by pid, start time (clock
//! ticks since boot, from `/proc/<pid>/stat`) and boot id, and slipway
//! signals a pid only when the live process there matches all three. A pid
//! alone in a file (planted, or left from before a reboot) names nobody.

use serde::{Deserialize, Serialize};

/// One process, as it can be recognised again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessId {
    /// Its pid.
    pub pid: u32,
    /// When it started, in clock ticks since boot.
    pub start_ticks: u64,
    /// The boot it started in.
    pub boot_id: String,
}

impl ProcessId {
    /// This process.
    pub fn current() -> Option<ProcessId> {
        ProcessId::of(std::process::id())
    }

    /// The live process `pid` now, if there is one.
    pub fn of(pid: u32) -> Option<ProcessId> {
        Some(ProcessId {
            pid,
            start_ticks: start_ticks(pid)?,
            boot_id: boot_id()?,
        })
    }

    /// Whether this process still runs (the same one, not a later holder of its pid).
    pub fn is_alive(&self) -> bool {
        ProcessId::of(self.pid).as_ref() == Some(self)
    }

    /// Sends `signal` to the process if it is still this one; whether it was sent.
    pub fn signal(&self, signal: libc::c_int) -> bool {
        if !self.is_alive() {
            return false;
        }
        let Ok(pid) = libc::pid_t::try_from(self.pid) else {
            return false;
        };
        // SAFETY: kill has no memory effects; the pid was just checked to be
        // the process this identity names (a reuse in between would need the
        // pid to wrap around within microseconds).
        unsafe { libc::kill(pid, signal) == 0 }
    }
}

/// Field 22 of `/proc/<pid>/stat`, read after the command name (which may
/// hold spaces and parentheses).
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    // Fields from the state (field 3) on; the start time is field 22.
    after_name.split_whitespace().nth(19)?.parse().ok()
}

fn boot_id() -> Option<String> {
    static BOOT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    BOOT.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .ok()
            .map(|s| s.trim().to_owned())
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_known_again_and_a_bare_pid_is_not_it() {
        let me = ProcessId::current().expect("this process");
        assert!(me.is_alive());
        let mut other = me.clone();
        other.start_ticks += 1;
        assert!(!other.is_alive(), "same pid, other start: another process");
        assert!(!other.signal(0));
        let mut rebooted = me.clone();
        rebooted.boot_id = "another-boot".into();
        assert!(!rebooted.is_alive());
        assert!(me.signal(0));
    }
}
