//! Agents: the programs that do the work. Each provider builds its unattended
//! and interactive command lines and parses its output stream.

pub mod prompt;

use serde::{Deserialize, Serialize};

/// How to start an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInvocation {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// What goes to its stdin.
    #[serde(skip)]
    pub stdin: Option<String>,
    /// Environment it needs.
    #[serde(skip)]
    pub env: Vec<(String, String)>,
}

/// Something an agent reported, parsed from one output line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum AgentEvent {
    /// Text for people.
    Text { text: String },
    /// The agent's session id.
    SessionId { id: String },
    /// Token usage.
    Usage {
        input_tokens: u64,
        output_tokens: u64,
    },
}

/// An agent provider.
pub trait Agent: Send + Sync {
    /// The provider's name.
    fn name(&self) -> &'static str;
    /// The command line for an unattended run with `prompt`.
    fn unattended(&self, prompt: &str) -> AgentInvocation;
    /// The command line a person runs in a terminal.
    fn interactive(&self) -> AgentInvocation;
    /// Parses one output line.
    fn parse_line(&self, line: &str) -> Vec<AgentEvent>;
}

/// Which agent to run, as the CLI and the protocol name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum AgentSpec {
    /// Any program; the prompt reaches it on stdin and in `SLIPWAY_PROMPT`.
    Command {
        /// Program and arguments.
        command: Vec<String>,
    },
}

/// An agent spec that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AgentSpecError {
    /// `command` without a program.
    #[error(
        "the command agent needs a program: put it after `--` (e.g. `slipway run -- ./agent.sh`)"
    )]
    EmptyCommand,
}

impl AgentSpec {
    /// Builds the provider.
    pub fn build(&self) -> Result<Box<dyn Agent>, AgentSpecError> {
        match self {
            AgentSpec::Command { command } if command.is_empty() => {
                Err(AgentSpecError::EmptyCommand)
            }
            AgentSpec::Command { command } => Ok(Box::new(CommandAgent {
                argv: command.clone(),
            })),
        }
    }
}

/// Any program: prompt on stdin and in `SLIPWAY_PROMPT`; every line is text.
#[derive(Debug, Clone)]
pub struct CommandAgent {
    /// Program and arguments.
    pub argv: Vec<String>,
}

impl Agent for CommandAgent {
    fn name(&self) -> &'static str {
        "command"
    }

    fn unattended(&self, prompt: &str) -> AgentInvocation {
        AgentInvocation {
            argv: self.argv.clone(),
            stdin: Some(prompt.to_owned()),
            env: vec![("SLIPWAY_PROMPT".to_owned(), prompt.to_owned())],
        }
    }

    fn interactive(&self) -> AgentInvocation {
        AgentInvocation {
            argv: self.argv.clone(),
            stdin: None,
            env: Vec::new(),
        }
    }

    fn parse_line(&self, line: &str) -> Vec<AgentEvent> {
        vec![AgentEvent::Text {
            text: line.to_owned(),
        }]
    }
}
