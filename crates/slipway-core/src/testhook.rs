//! Deterministic crash points for the crash-safety tests. With
//! `SLIPWAY_TEST_CRASH=<step>:<n>` in its environment, slipway kills itself
//! (SIGKILL: no destructor, no cleanup, as a power cut or `kill -9` would)
//! when step `<step>` passes its `n`-th point; `<step>:<n>:group` kills its
//! whole process group instead. Without it a point costs one load.

use std::sync::Mutex;
use std::sync::OnceLock;

struct Plan {
    step: String,
    at: u64,
    group: bool,
    seen: Mutex<u64>,
}

fn plan() -> Option<&'static Plan> {
    static PLAN: OnceLock<Option<Plan>> = OnceLock::new();
    PLAN.get_or_init(|| {
        let text = std::env::var("SLIPWAY_TEST_CRASH").ok()?;
        let mut parts = text.split(':');
        let (step, at) = (parts.next()?, parts.next()?);
        Some(Plan {
            step: step.to_owned(),
            at: at.parse().ok()?,
            group: parts.next() == Some("group"),
            seen: Mutex::new(0),
        })
    })
    .as_ref()
}

/// One point of `step` has passed.
pub fn point(step: &str) {
    let Some(plan) = plan() else { return };
    if plan.step != step {
        return;
    }
    let mut seen = plan.seen.lock().unwrap_or_else(|e| e.into_inner());
    *seen += 1;
    if *seen == plan.at {
        // SAFETY: signalling our own process (or group); nothing after this runs.
        unsafe {
            if plan.group {
                libc::killpg(libc::getpgrp(), libc::SIGKILL);
            }
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}
