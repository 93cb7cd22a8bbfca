//! LSP's lifecycle as the front door keeps it: no request but `initialize`
//! is served before `initialize` has been answered, and none after
//! `shutdown`. The front door answers some requests itself (`slipway.status`),
//! ahead of tower-lsp-server, so it must hold the same rule for every request.

use std::sync::Mutex;

use serde::Deserialize;
use serde_json::Value;

/// Where the session is.
#[derive(Debug, Clone, PartialEq)]
enum Phase {
    /// No `initialize` yet, or the last one failed.
    Uninitialized,
    /// `initialize` (with this id) was sent on and is not answered yet.
    Initializing(Value),
    /// `initialize` was answered with a result.
    Initialized,
    /// `shutdown` was received: only `exit` is left.
    ShutDown,
}

/// Why a request is not served now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Before `initialize` was answered.
    NotInitialized,
    /// After `shutdown`.
    ShutDown,
}

impl Refusal {
    /// The JSON-RPC error code LSP gives it.
    pub fn code(self) -> i64 {
        match self {
            Refusal::NotInitialized => -32002,
            Refusal::ShutDown => -32600,
        }
    }

    /// Its `data.kind`.
    pub fn kind(self) -> &'static str {
        match self {
            Refusal::NotInitialized => "serverNotInitialized",
            Refusal::ShutDown => "serverShutDown",
        }
    }

    /// What happened and what to do.
    pub fn why(self, method: &str) -> String {
        match self {
            Refusal::NotInitialized => format!(
                "{method} was sent before the server was initialized: send `initialize` and wait for its answer first"
            ),
            Refusal::ShutDown => format!(
                "{method} was sent after `shutdown`: the server only accepts `exit` now; start a new one"
            ),
        }
    }
}

/// The session's phase, shared by the reader of the client and the writer of the server's answers.
pub struct Lifecycle {
    phase: Mutex<Phase>,
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    id: Value,
    #[serde(default)]
    result: Option<serde::de::IgnoredAny>,
}

impl Default for Lifecycle {
    fn default() -> Self {
        Lifecycle {
            phase: Mutex::new(Phase::Uninitialized),
        }
    }
}

impl Lifecycle {
    /// A session that has not been initialized.
    pub fn new() -> Lifecycle {
        Lifecycle::default()
    }

    fn phase(&self) -> std::sync::MutexGuard<'_, Phase> {
        // A panic while holding it cannot leave a half-set phase: every write is one assignment.
        self.phase.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether request `method` with `id` may be served now; `initialize` and
    /// `shutdown` move the phase on.
    pub fn admit(&self, method: &str, id: &Value) -> Result<(), Refusal> {
        let mut phase = self.phase();
        match (&*phase, method) {
            (Phase::ShutDown, _) => Err(Refusal::ShutDown),
            (Phase::Uninitialized, "initialize") => {
                *phase = Phase::Initializing(id.clone());
                Ok(())
            }
            // A second `initialize`: tower-lsp-server answers it as the protocol says.
            (Phase::Initializing(_) | Phase::Initialized, "initialize") => Ok(()),
            (Phase::Uninitialized | Phase::Initializing(_), _) => Err(Refusal::NotInitialized),
            (Phase::Initialized, "shutdown") => {
                *phase = Phase::ShutDown;
                Ok(())
            }
            (Phase::Initialized, _) => Ok(()),
        }
    }

    /// Sees a message the server sends the client, before the client can:
    /// the answer to `initialize` ends `Initializing`.
    pub fn server_sent(&self, body: &[u8]) {
        let mut phase = self.phase();
        let Phase::Initializing(id) = &*phase else {
            return;
        };
        let Ok(answer) = serde_json::from_slice::<Answer>(body) else {
            return;
        };
        if answer.id != *id {
            return;
        }
        *phase = if answer.result.is_some() {
            Phase::Initialized
        } else {
            Phase::Uninitialized
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_wait_for_the_answer_to_initialize_and_end_with_shutdown() {
        let life = Lifecycle::new();
        assert_eq!(
            life.admit("workspace/executeCommand", &json!(1)),
            Err(Refusal::NotInitialized)
        );
        assert_eq!(life.admit("initialize", &json!(2)), Ok(()));
        assert_eq!(
            life.admit("shutdown", &json!(3)),
            Err(Refusal::NotInitialized)
        );
        // Another message, or the answer to another id, changes nothing.
        life.server_sent(br#"{"jsonrpc":"2.0","method":"window/logMessage","params":{}}"#);
        life.server_sent(br#"{"jsonrpc":"2.0","id":1,"result":null}"#);
        assert_eq!(life.admit("x", &json!(4)), Err(Refusal::NotInitialized));
        life.server_sent(br#"{"jsonrpc":"2.0","id":2,"result":{"capabilities":{}}}"#);
        assert_eq!(life.admit("x", &json!(5)), Ok(()));
        assert_eq!(life.admit("initialize", &json!(6)), Ok(()));
        assert_eq!(life.admit("shutdown", &json!(7)), Ok(()));
        for method in ["x", "shutdown", "initialize"] {
            assert_eq!(life.admit(method, &json!(8)), Err(Refusal::ShutDown));
        }
    }

    #[test]
    fn a_failed_initialize_can_be_sent_again() {
        let life = Lifecycle::new();
        assert_eq!(life.admit("initialize", &json!("a")), Ok(()));
        life.server_sent(br#"{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"no"}}"#);
        assert_eq!(life.admit("x", &json!(1)), Err(Refusal::NotInitialized));
        assert_eq!(life.admit("initialize", &json!("b")), Ok(()));
        life.server_sent(br#"{"jsonrpc":"2.0","id":"b","result":{}}"#);
        assert_eq!(life.admit("x", &json!(2)), Ok(()));
    }
}
