//! Deterministic test points. With `SLIPWAY_TEST_CRASH=<step>:<n>` in its
//! environment, slipway kills itself (SIGKILL: no destructor, no cleanup, as
//! a power cut or `kill -9` would) when step `<step>` passes its `n`-th point;
//! `<step>:<n>:group` kills its whole process group instead. With
//! `SLIPWAY_TEST_GATE=<step>:<n>:<dir>` it stops at that point instead: it
//! creates `<dir>/<step>-<n>.reached` and goes on once `<dir>/<step>-<n>.go`
//! exists, so a test can do something at exactly that moment. Without either
//! a point costs one load.

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

struct Gate {
    step: String,
    at: u64,
    dir: std::path::PathBuf,
    seen: Mutex<u64>,
}

fn gate() -> Option<&'static Gate> {
    static GATE: OnceLock<Option<Gate>> = OnceLock::new();
    GATE.get_or_init(|| {
        let text = std::env::var("SLIPWAY_TEST_GATE").ok()?;
        let mut parts = text.splitn(3, ':');
        let (step, at, dir) = (parts.next()?, parts.next()?, parts.next()?);
        Some(Gate {
            step: step.to_owned(),
            at: at.parse().ok()?,
            dir: dir.into(),
            seen: Mutex::new(0),
        })
    })
    .as_ref()
}

/// Waits at the gate's point until the test opens it (at most ten minutes,
/// so a test that died leaves no process waiting forever).
fn wait_at(gate: &Gate, n: u64) {
    let name = format!("{}-{n}", gate.step);
    let reached = gate.dir.join(format!("{name}.reached"));
    let go = gate.dir.join(format!("{name}.go"));
    if let Err(e) = std::fs::write(&reached, b"") {
        tracing::warn!("test gate {}: {e}", reached.display());
        return;
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
    while !go.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// One point of `step` has passed.
pub fn point(step: &str) {
    if let Some(gate) = gate()
        && gate.step == step
    {
        let mut seen = gate.seen.lock().unwrap_or_else(|e| e.into_inner());
        *seen += 1;
        if *seen == gate.at {
            wait_at(gate, *seen);
        }
    }
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
