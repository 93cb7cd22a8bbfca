//! The real agent CLIs, pointed at a scripted model: each test gets a
//! [`TestEnv`], a [`ModelServer`] and the CLI installed by
//! `scripts/agents-setup.sh` (at the version `scripts/agents.txt` pins), with
//! the endpoint settings each CLI needs written into the fake HOME and the
//! environment. A CLI that is not installed fails the test with the command
//! that installs it; nothing is skipped.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::TestEnv;
use super::model_server::{ModelServer, Script};

/// The agents tested with their real CLI.
pub const AGENTS: [&str; 5] = ["claude-code", "codex", "opencode", "pi", "copilot"];

/// An installed agent CLI.
#[derive(Debug, Clone)]
pub struct Cli {
    /// slipway's name for the agent (`claude-code`, …).
    pub agent: String,
    /// The npm package.
    pub package: String,
    /// The version tested.
    pub version: String,
    /// The program name.
    pub program: String,
    /// Where the program is.
    pub path: PathBuf,
}

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Where `scripts/agents-setup.sh` installs the CLIs.
pub fn agents_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SLIPWAY_AGENTS_DIR") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").expect("HOME is set for the test process");
    PathBuf::from(home).join(".cache/slipway/agents")
}

/// The CLI of `agent`; panics, naming what is missing and how to install it,
/// when it is not installed.
pub fn cli(agent: &str) -> Cli {
    let list = std::fs::read_to_string(repo_root().join("scripts/agents.txt"))
        .expect("scripts/agents.txt lists the agent CLIs");
    let fields = list
        .lines()
        .map(str::split_whitespace)
        .map(Iterator::collect::<Vec<_>>)
        .find(|f| f.first() == Some(&agent))
        .unwrap_or_else(|| panic!("scripts/agents.txt has no line for {agent}"));
    let [_, package, version, program] = fields[..] else {
        panic!("scripts/agents.txt: bad line for {agent}: {fields:?}");
    };
    let dir = agents_dir().join(format!("{agent}-{version}"));
    let path = dir.join("node_modules/.bin").join(program);
    assert!(
        dir.join(".complete").is_file() && path.is_file(),
        "the {agent} CLI ({package}@{version}) is not installed at {}: run `bash scripts/agents-setup.sh` \
         (it installs the agent CLIs from npm into {})",
        path.display(),
        agents_dir().display()
    );
    Cli {
        agent: agent.to_owned(),
        package: package.to_owned(),
        version: version.to_owned(),
        program: program.to_owned(),
        path,
    }
}

/// The local image with `agent`'s CLI that `scripts/agents-image.sh` builds;
/// panics with how to build it when the engine or the image is missing.
pub fn agent_image(agent: &str) -> String {
    let image = format!("slipway-agent-{agent}:latest");
    let ok = Command::new("docker")
        .args(["image", "inspect", &image])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "the Docker engine or the image {image} (the real {agent} CLI) is missing: run \
         `bash scripts/docker-setup.sh && bash scripts/agents-setup.sh` (as root)"
    );
    image
}

/// A test's world: a repository, the scripted model and one real agent CLI
/// configured to use it.
pub struct AgentWorld {
    /// The hermetic environment.
    pub env: TestEnv,
    /// The scripted model.
    pub server: ModelServer,
    /// The CLI.
    pub cli: Cli,
    /// The repository (`main`, one commit).
    pub repo: PathBuf,
    /// The model Codex is told to use: `fake-model`, or one whose metadata
    /// Codex bundles (its tools depend on it: `apply_patch` comes only with a
    /// known model).
    pub codex_model: &'static str,
}

impl AgentWorld {
    /// A world for `agent` with the model following `script`.
    pub fn new(agent: &str, script: Script) -> AgentWorld {
        let cli = cli(agent);
        let env = TestEnv::new();
        let server = ModelServer::start(script);
        let repo = env.new_repo("repo");
        let bin = env.path().join("agent-bin");
        std::fs::create_dir_all(&bin).expect("bin dir");
        std::os::unix::fs::symlink(&cli.path, bin.join(&cli.program)).expect("link the CLI");
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![bin];
        paths.extend(std::env::split_paths(&path));
        env.set_env("PATH", std::env::join_paths(paths).expect("PATH"));
        // slipway started from a directory other than the worktree: an agent
        // that trusted an inherited $PWD would work here, outside any repository.
        env.set_env("PWD", env.path());
        let world = AgentWorld {
            env,
            server,
            cli,
            repo,
            codex_model: "fake-model",
        };
        world.configure();
        world
    }

    /// Endpoint settings, in the environment and the fake HOME, as each CLI
    /// reads them (see ../shared/agents/README.md).
    fn configure(&self) {
        let url = self.server.url();
        let env = &self.env;
        let home = env.home();
        match self.cli.agent.as_str() {
            "claude-code" => {
                env.set_env("ANTHROPIC_BASE_URL", &url);
                env.set_env("ANTHROPIC_API_KEY", "sk-test");
                env.set_env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
                env.set_env("DISABLE_TELEMETRY", "1");
                env.set_env("DISABLE_AUTOUPDATER", "1");
                // Claude Code refuses bypassPermissions as root unless told it is
                // in a sandbox; the tests run as root on CI. In containers
                // slipway sets it itself.
                // SAFETY: geteuid has no preconditions.
                if unsafe { libc::geteuid() } == 0 {
                    env.set_env("IS_SANDBOX", "1");
                }
            }
            "codex" => env.set_env("OPENAI_API_KEY", "sk-test"),
            "opencode" => {
                let config = json!({
                    "autoupdate": false,
                    "share": "disabled",
                    "model": "fake/fake-model",
                    "small_model": "fake/fake-model",
                    "provider": {"fake": {
                        "npm": "@ai-sdk/openai-compatible",
                        "name": "Scripted",
                        "options": {"baseURL": format!("{url}/v1"), "apiKey": "sk-test"},
                        "models": {"fake-model": {"name": "Scripted", "tool_call": true,
                                                   "limit": {"context": 128000, "output": 8192}}}
                    }}
                });
                env.set_env("OPENCODE_CONFIG_CONTENT", config.to_string());
                env.set_env("OPENCODE_DISABLE_MODELS_FETCH", "1");
                env.set_env("OPENCODE_DISABLE_AUTOUPDATE", "1");
            }
            "pi" => {
                let dir = home.join(".pi/agent");
                std::fs::create_dir_all(&dir).expect("pi dir");
                let models = json!({"providers": {"fake": {
                    "baseUrl": format!("{url}/v1"), "api": "openai-completions", "apiKey": "sk-test",
                    "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
                    "models": [{"id": "fake-model", "reasoning": false, "input": ["text"],
                                "contextWindow": 128000, "maxTokens": 8192}]
                }}});
                std::fs::write(dir.join("models.json"), models.to_string()).expect("models.json");
                let settings = json!({"defaultProvider": "fake", "defaultModel": "fake-model", "quietStartup": true});
                std::fs::write(dir.join("settings.json"), settings.to_string())
                    .expect("settings.json");
                env.set_env("PI_OFFLINE", "1");
            }
            "copilot" => {
                env.set_env("COPILOT_OFFLINE", "true");
                env.set_env("COPILOT_PROVIDER_BASE_URL", format!("{url}/v1"));
                env.set_env("COPILOT_PROVIDER_TYPE", "openai");
                env.set_env("COPILOT_PROVIDER_API_KEY", "sk-test");
                env.set_env("COPILOT_MODEL", "fake-model");
                env.set_env("COPILOT_AUTO_UPDATE", "false");
            }
            other => panic!("no set-up for agent {other}"),
        }
    }

    /// Flags for the agent's own command line that slipway passes on
    /// (`extraArgs`, or after `--`): Codex's provider pointed at the server.
    pub fn extra_args(&self) -> Vec<String> {
        match self.cli.agent.as_str() {
            "codex" => {
                let base = format!("{}/v1", self.server.url());
                [
                    "model_provider=fake".to_owned(),
                    "model_providers.fake.name=\"Scripted\"".to_owned(),
                    format!("model_providers.fake.base_url=\"{base}\""),
                    "model_providers.fake.env_key=\"OPENAI_API_KEY\"".to_owned(),
                    "model_providers.fake.wire_api=\"responses\"".to_owned(),
                ]
                .into_iter()
                .flat_map(|c| ["-c".to_owned(), c])
                .collect()
            }
            _ => Vec::new(),
        }
    }

    /// The model flag, for the agents that need one.
    pub fn model(&self) -> Option<&'static str> {
        (self.cli.agent == "codex").then_some(self.codex_model)
    }

    /// The agent as the protocol names it, with `more` fields merged in.
    pub fn agent_spec(&self, more: Value) -> Value {
        let mut spec = json!({"type": self.cli.agent});
        if let Some(model) = self.model() {
            spec["model"] = json!(model);
        }
        let extra = self.extra_args();
        if !extra.is_empty() {
            spec["extraArgs"] = json!(extra);
        }
        if let (Value::Object(spec), Value::Object(more)) = (&mut spec, more) {
            spec.extend(more);
        }
        spec
    }

    /// Runs `slipway --json run --agent AGENT ARGS -- EXTRA` in the repository;
    /// returns the result document (a failed run prints one too) and the
    /// error line, if any. Panics after `limit`.
    pub fn run(&self, args: &[&str], limit: Duration) -> (Value, Option<Value>) {
        let mut cmd = self.env.slipway_cmd(&self.repo);
        cmd.args(["--json", "run", "--agent", &self.cli.agent]);
        if let Some(model) = self.model() {
            cmd.args(["--model", model]);
        }
        cmd.args(args);
        let extra = self.extra_args();
        if !extra.is_empty() {
            cmd.arg("--").args(extra);
        }
        let out = output_within(cmd, limit);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let error = stderr
            .lines()
            .rev()
            .find(|l| l.starts_with("{\"error\""))
            .and_then(|l| serde_json::from_str::<Value>(l).ok())
            .map(|v| v["error"].clone());
        // A run refused before it starts prints only its error.
        if stdout.trim().is_empty() && error.is_some() {
            return (Value::Null, error);
        }
        let result: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "slipway run ({}) printed no result ({e}):\nstdout: {stdout}\nstderr: {stderr}\nmodel server:\n{}",
                self.cli.agent,
                self.server.describe()
            )
        });
        (result, error)
    }

    /// The run's log, for failure messages.
    pub fn log_of(result: &Value) -> String {
        result["logFile"]
            .as_str()
            .and_then(|f| std::fs::read_to_string(f).ok())
            .unwrap_or_else(|| "(no log)".into())
    }

    /// Everything the environment gives children, for a program started
    /// outside slipway (the interactive command line).
    pub fn child_env(&self) -> Vec<(String, OsString)> {
        let mut envs: Vec<(String, OsString)> = ["USER", "LANG"]
            .iter()
            .filter_map(|k| std::env::var_os(k).map(|v| ((*k).to_owned(), v)))
            .collect();
        envs.extend(self.env.envs());
        envs
    }

    /// What a person who has used the CLI in this repository before has in
    /// their HOME, so its interactive start goes straight to the prompt:
    /// onboarding done, the API key approved, and the repository trusted (the
    /// CLIs extend that trust to the worktrees inside it).
    pub fn prepare_interactive(&self) {
        let home = self.env.home();
        let repo = self.repo.display().to_string();
        match self.cli.agent.as_str() {
            "claude-code" => {
                let mut projects = serde_json::Map::new();
                projects.insert(
                    repo,
                    json!({"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}),
                );
                let config = json!({
                    "hasCompletedOnboarding": true,
                    "customApiKeyResponses": {"approved": ["sk-test"], "rejected": []},
                    "projects": projects,
                });
                std::fs::write(home.join(".claude.json"), config.to_string())
                    .expect("~/.claude.json");
            }
            "codex" => {
                std::fs::create_dir_all(home.join(".codex")).expect("~/.codex");
                std::fs::write(
                    home.join(".codex/config.toml"),
                    format!("[projects.{}]\ntrust_level = \"trusted\"\n", json!(repo)),
                )
                .expect("~/.codex/config.toml");
            }
            "copilot" => {
                std::fs::create_dir_all(home.join(".copilot")).expect("~/.copilot");
                std::fs::write(
                    home.join(".copilot/config.json"),
                    json!({"trustedFolders": [repo]}).to_string(),
                )
                .expect("~/.copilot/config.json");
            }
            _ => {}
        }
    }

    /// Stops what the CLIs left running in the background: Codex's interactive
    /// start leaves an app-server daemon whose pid it writes under its home.
    fn stop_leftovers(&self) {
        let dir = self.env.home().join(".codex/app-server-daemon");
        for name in ["daemon.pid", "daemon-updater.pid"] {
            let Ok(text) = std::fs::read_to_string(dir.join(name)) else {
                continue;
            };
            let pid = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v["pid"].as_i64())
                .or_else(|| text.trim().parse().ok());
            if let Some(pid) = pid.and_then(|p| libc::pid_t::try_from(p).ok()) {
                // SAFETY: signalling the daemon this test's codex started, by its recorded pid.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

impl Drop for AgentWorld {
    fn drop(&mut self) {
        self.stop_leftovers();
    }
}

/// Runs `cmd` to its end; kills it and panics if it takes longer than `limit`.
pub fn output_within(mut cmd: Command, limit: Duration) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // The receiver may have given up after the limit.
        let _sent = tx.send(child.wait_with_output());
    });
    let started = Instant::now();
    match rx.recv_timeout(limit) {
        Ok(out) => out.expect("the command's output"),
        Err(_) => {
            if let Ok(pid) = libc::pid_t::try_from(pid) {
                // SAFETY: killing the child this function started, by its pid.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
            panic!(
                "{cmd:?} did not finish within {:?} (killed after {:?})",
                limit,
                started.elapsed()
            );
        }
    }
}
