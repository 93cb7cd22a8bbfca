//! Deterministic crash points for the crash-safety tests. With
//! `SLIPWAY_TEST_CRASH=<step>:<n>` in its environment, slipway kills itself
//! (SIGKILL: no destructor, no cleanup, as a power cut or `kill -9` would)
//! when step `<step>` passes its `n`-th point. Without it a point costs one
//! atomic load.

use std::sync::Mutex;
use std::sync::OnceLock;

struct Plan {
    step: String,
    at: u64,
    seen: Mutex<u64>,
}

fn plan() -> Option<&'static Plan> {
    static PLAN: OnceLock<Option<Plan>> = OnceLock::new();
    PLAN.get_or_init(|| {
        let text = std::env::var("SLIPWAY_TEST_CRASH").ok()?;
        let (step, at) = text.rsplit_once(':')?;
        Some(Plan {
            step: step.to_owned(),
            at: at.parse().ok()?,
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
        // SAFETY: signalling our own process; nothing after this runs.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}
