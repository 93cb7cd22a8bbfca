//! Runs on the host sandbox: prompts, templates, iterations, the completion
//! signal, hooks, the agent's environment and the run log.

use crate::common;

use std::path::Path;

use common::*;

use crate::common::lsp;

fn agent_arg(p: &Path) -> &str {
    p.to_str().expect("utf8 path")
}

#[test]
fn an_inline_prompt_reaches_the_agent_literally_on_stdin_and_in_the_environment() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let out = env.path().join("seen");
    let agent = env.script(
        "echo-prompt",
        &format!(
            "cat > '{0}.stdin'\nprintf '%s' \"$SLIPWAY_PROMPT\" > '{0}.env'\n",
            out.display()
        ),
    );
    let prompt = "Fix {{ISSUE}} and run !`touch pwned` please";
    env.slipway_json(
        &repo,
        &[
            "run",
            "--branch",
            "p",
            "--prompt",
            prompt,
            "--",
            agent_arg(&agent),
        ],
    );
    assert_eq!(
        std::fs::read_to_string(out.with_extension("stdin")).expect("stdin"),
        prompt
    );
    assert_eq!(
        std::fs::read_to_string(out.with_extension("env")).expect("env"),
        prompt
    );
    let wt = repo.join(".slipway/worktrees");
    assert!(
        !std::fs::read_dir(&wt)
            .expect("worktrees")
            .flatten()
            .any(|e| e.path().join("pwned").exists()),
        "an inline prompt never runs commands"
    );
}

#[test]
fn a_prompt_file_is_a_template_with_arguments_built_ins_and_commands() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let template = env.path().join("prompt.md");
    std::fs::write(
        &template,
        "Issue {{ISSUE}} on {{SOURCE_BRANCH}} landing on {{TARGET_BRANCH}}.\nREADME says: !`cat README.md`\n",
    )
    .expect("template");
    let out = env.path().join("prompt.seen");
    let agent = env.script("save-prompt", &format!("cat > '{}'\n", out.display()));
    let result = env.slipway_json(
        &repo,
        &[
            "run",
            "--strategy",
            "merge-to-head",
            "--prompt-file",
            template.to_str().expect("utf8"),
            "--arg",
            "ISSUE=#42 !`touch pwned`",
            "--arg",
            "UNUSED=1",
            "--",
            agent_arg(&agent),
        ],
    );
    let branch = s(&result, "branch");
    let seen = std::fs::read_to_string(&out).expect("prompt seen");
    assert_eq!(
        seen,
        format!(
            "Issue #42 !`touch pwned` on {branch} landing on main.\nREADME says: # test repo\n"
        )
    );
    assert!(
        result["warnings"].to_string().contains("UNUSED"),
        "an unused argument warns: {result}"
    );
    assert!(!repo.join("pwned").exists());
}

#[test]
fn a_missing_template_argument_fails_before_anything_is_created() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let template = env.path().join("prompt.md");
    std::fs::write(&template, "Do {{TASK}} for {{WHO}}\n").expect("template");
    let marker = env.path().join("ran");
    let agent = env.script("never", &format!("touch '{}'\n", marker.display()));
    let (_, err) = env.slipway_fail(
        &repo,
        &[
            "run",
            "--branch",
            "t",
            "--prompt-file",
            template.to_str().expect("utf8"),
            "--arg",
            "TASK=x",
            "--",
            agent_arg(&agent),
        ],
    );
    assert_eq!(err["kind"], "missingPromptArgs");
    assert!(s(&err, "message").contains("--arg WHO=VALUE"), "{err}");
    assert!(!marker.exists());
    assert_eq!(env.local_branches(&repo), vec!["main".to_owned()]);
    let (_, err) = env.slipway_fail(
        &repo,
        &[
            "run",
            "--branch",
            "t",
            "--prompt-file",
            template.to_str().expect("utf8"),
            "--arg",
            "TASK=x",
            "--arg",
            "WHO=y",
            "--arg",
            "SOURCE_BRANCH=z",
            "--",
            agent_arg(&agent),
        ],
    );
    assert!(s(&err, "message").contains("built in"), "{err}");
}

#[test]
fn iterations_run_until_the_limit_or_the_completion_signal() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let count = env.path().join("count");
    let agent = env.script(
        "count",
        &format!("echo \"$SLIPWAY_ITERATION\" >> '{}'\n", count.display()),
    );
    let result = env.slipway_json(
        &repo,
        &[
            "run",
            "--branch",
            "i",
            "--max-iterations",
            "3",
            "--",
            agent_arg(&agent),
        ],
    );
    assert_eq!(result["iterations"], 3);
    assert!(result["completionSignal"].is_null());
    assert_eq!(std::fs::read_to_string(&count).expect("count"), "1\n2\n3\n");

    let done = env.script(
        "done-at-2",
        "if [ \"$SLIPWAY_ITERATION\" = 2 ]; then echo 'all good <promise>COMPLETE</promise>'; fi\n",
    );
    let result = env.slipway_json(
        &repo,
        &[
            "run",
            "--branch",
            "i",
            "--max-iterations",
            "5",
            "--",
            agent_arg(&done),
        ],
    );
    assert_eq!(result["iterations"], 2);
    assert_eq!(result["completionSignal"], "<promise>COMPLETE</promise>");

    let custom = env.script("custom", "echo 'DONE-B'\n");
    let result = env.slipway_json(
        &repo,
        &[
            "run",
            "--branch",
            "i",
            "--max-iterations",
            "4",
            "--completion-signal",
            "DONE-A",
            "--completion-signal",
            "DONE-B",
            "--",
            agent_arg(&custom),
        ],
    );
    assert_eq!(result["iterations"], 1);
    assert_eq!(result["completionSignal"], "DONE-B");
}

#[test]
fn hooks_run_in_order_before_the_agent_and_a_failing_hook_fails_the_run() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let agent = env.script("reads-hooks", "cat hook-order.txt\n");
    let result = env.slipway_json(
        &repo,
        &[
            "run",
            "--branch",
            "h",
            "--on-worktree-ready",
            "echo host-1 >> hook-order.txt",
            "--on-worktree-ready",
            "echo host-2 >> hook-order.txt",
            "--on-sandbox-ready",
            "echo sandbox >> hook-order.txt",
            "--",
            agent_arg(&agent),
        ],
    );
    let wt = Path::new(s(&result, "worktreePath"));
    assert_eq!(
        std::fs::read_to_string(wt.join("hook-order.txt")).expect("hooks ran in the worktree"),
        "host-1\nhost-2\nsandbox\n"
    );
    let log = std::fs::read_to_string(s(&result, "logFile")).expect("log");
    assert!(
        log.contains("host-1\nhost-2\nsandbox"),
        "agent output is in the log:\n{log}"
    );

    let marker = env.path().join("agent-ran");
    let agent = env.script("marker", &format!("touch '{}'\n", marker.display()));
    let (result, err) = env.slipway_fail(
        &repo,
        &[
            "run",
            "--branch",
            "h2",
            "--on-worktree-ready",
            "echo 'npm: missing lockfile' >&2; exit 7",
            "--",
            agent_arg(&agent),
        ],
    );
    assert_eq!(err["kind"], "hookFailed");
    assert!(
        s(&err, "message").contains("npm: missing lockfile"),
        "the hook's output is in the error: {err}"
    );
    assert_eq!(result["status"], "failed");
    assert!(!marker.exists(), "the agent never started");

    let (_, err) = env.slipway_fail(
        &repo,
        &[
            "run",
            "--branch",
            "h3",
            "--on-sandbox-ready",
            "sleep 30", // allow-sleep: a hook that stalls until its timeout ends it
            "--hook-timeout",
            "1",
            "--",
            agent_arg(&agent),
        ],
    );
    assert_eq!(err["kind"], "hookTimeout");
    assert!(s(&err, "message").contains("sleep 30")); // allow-sleep: the hook's text in the error, not a wait
}

#[test]
fn the_agent_gets_its_branches_and_the_users_identity_through_the_environment() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let out = env.path().join("env.txt");
    let agent = env.script(
        "env",
        &format!(
            "echo \"$SLIPWAY_SOURCE_BRANCH|$SLIPWAY_TARGET_BRANCH|$SLIPWAY_ITERATION|$GIT_AUTHOR_NAME|$GIT_COMMITTER_EMAIL|$PWD\" > '{}'\n",
            out.display()
        ),
    );
    let result = env.slipway_json(
        &repo,
        &[
            "run",
            "--strategy",
            "merge-to-head",
            "--",
            agent_arg(&agent),
        ],
    );
    let text = std::fs::read_to_string(&out).expect("env");
    let expected = format!(
        "{}|main|1|Slipway Test|test@slipway.invalid|{}\n",
        s(&result, "branch"),
        s(&result, "worktreePath")
    );
    assert_eq!(text, expected);
}

#[test]
fn bad_run_arguments_are_clear_errors() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let (_, err) = env.slipway_fail(&repo, &["run", "--branch", "x"]);
    assert!(
        s(&err, "message").contains("--"),
        "says how to give the program: {err}"
    );
    let (_, err) = env.slipway_fail(&repo, &["run", "--branch", "a..b", "--", "true"]);
    assert_eq!(err["kind"], "invalidBranchName");
    let (_, err) = env.slipway_fail(
        &repo,
        &["run", "--branch", "x", "--arg", "novalue", "--", "true"],
    );
    assert_eq!(err["kind"], "invalidParams");
    let (_, err) = env.slipway_fail(
        &repo,
        &[
            "run",
            "--branch",
            "x",
            "--prompt-file",
            "/nonexistent/p.md",
            "--",
            "true",
        ],
    );
    assert!(s(&err, "message").contains("/nonexistent/p.md"));
    let (_, err) = env.slipway_fail(
        &repo,
        &[
            "run",
            "--branch",
            "x",
            "--max-iterations",
            "0",
            "--",
            "true",
        ],
    );
    assert_eq!(err["kind"], "invalidParams");
    let (_, err) = env.slipway_fail(env.path(), &["run", "--", "true"]);
    assert_eq!(err["kind"], "notARepository");
    assert_eq!(
        env.local_branches(&repo),
        vec!["main".to_owned()],
        "nothing was created"
    );
}

#[test]
fn the_cli_lists_runs_and_follows_a_log_until_the_run_ends() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    // The agent prints two lines, then waits until the follower has shown
    // them; the rest can only reach the follower by following.
    let gate = Gate::new(&env, "followed");
    let agent = env.script(
        "slow-lines",
        &format!(
            "{}echo 'line 1'; echo 'line 2'\n{}for i in 3 4 5; do echo \"line $i\"; done\n",
            gate.open_line(),
            gate.wait_line()
        ),
    );
    let run = env
        .slipway_cmd(&repo)
        .args([
            "--json",
            "run",
            "--run-id",
            "run-1-f0110f",
            "--branch",
            "f",
            "--",
            agent_arg(&agent),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn run");
    // Wait for the run to exist, then follow it to the end.
    let record = repo.join(".slipway/runs/run-1-f0110f.json");
    assert!(
        lsp::wait_until(EVENT_DEADLINE, || record.exists()),
        "the run never started"
    );
    let mut follower = env
        .slipway_cmd(&repo)
        .args(["logs", "run-1-f0110f", "--follow"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn the follower");
    let (lines, got) = std::sync::mpsc::channel();
    let stdout = follower.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    let mut text = String::new();
    while !text.contains("line 2") {
        let line = got
            .recv_timeout(EVENT_DEADLINE)
            .unwrap_or_else(|e| panic!("the follower showed no more ({e}) after:\n{text}"));
        text.push_str(&line);
        text.push('\n');
    }
    gate.go();
    text.extend(got.iter().map(|l| l + "\n"));
    assert!(follower.wait().expect("wait").success());
    for i in 1..=5 {
        assert!(
            text.contains(&format!("line {i}")),
            "missing line {i} in:\n{text}"
        );
    }
    let mut run = run;
    assert!(run.wait().expect("wait").success());
    let runs = env.slipway_json(&repo, &["runs"]);
    let entry = &runs["runs"][0];
    assert_eq!(entry["runId"], "run-1-f0110f");
    assert_eq!(entry["status"], "completed");
    let (_, err) = env.slipway_fail(&repo, &["logs", "run-9-abcdef"]);
    assert_eq!(err["kind"], "unknownRun");
    let (_, err) = env.slipway_fail(&repo, &["logs", "../../etc/passwd"]);
    assert_eq!(err["kind"], "invalidParams", "{err}");
}

#[test]
fn timeouts_larger_than_the_clock_mean_never_rather_than_a_crash() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let agent = env.script(
        "signals",
        "echo working\necho '<promise>COMPLETE</promise>'\n",
    );
    let never = u64::MAX.to_string();
    let result = env.slipway_json(
        &repo,
        &[
            "run",
            "--strategy",
            "branch",
            "--branch",
            "patient",
            "--idle-timeout",
            &never,
            "--hook-timeout",
            &never,
            "--completion-grace",
            &never,
            "--on-worktree-ready",
            "echo hook ran",
            "--",
            agent_arg(&agent),
        ],
    );
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(result["completionSignal"], "<promise>COMPLETE</promise>");
}

#[test]
fn an_empty_completion_signal_or_zero_iterations_is_refused_before_the_agent_runs() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let marker = env.path().join("agent-ran");
    let agent = env.script("marks", &format!("touch '{}'\n", marker.display()));
    let (_, err) = env.slipway_fail(
        &repo,
        &["run", "--completion-signal", " ", "--", agent_arg(&agent)],
    );
    assert_eq!(err["kind"], "invalidParams", "{err}");
    assert!(s(&err, "message").contains("completion signal cannot be empty"));
    let out = env.slipway(
        &repo,
        &["run", "--max-iterations", "0", "--", agent_arg(&agent)],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--max-iterations"), "{stderr}");
    assert!(!marker.exists(), "the agent must not run");
    assert_eq!(env.local_branches(&repo), vec!["main".to_owned()]);
}

#[test]
fn a_run_log_stops_at_its_size_cap_with_a_marker_and_the_run_goes_on() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    env.set_env("SLIPWAY_LOG_LIMIT", "1048576");
    // 16 MiB without a newline, then 20k short lines, then a commit.
    let script = "head -c 16777216 /dev/zero | tr '\\0' x; echo\n\
                  i=0; while [ $i -lt 20000 ]; do echo \"line $i\"; i=$((i+1)); done\n\
                  echo done > done.txt; git add done.txt; git commit -qm 'after the flood'; echo FINISHED";
    let (ok, result, log) = env.run_result(
        &repo,
        &[
            "--json",
            "run",
            "--branch",
            "agent/loud",
            "--",
            "sh",
            "-c",
            script,
        ],
    );
    assert!(ok, "{result}");
    assert_eq!(commit_shas(&result).len(), 1, "the run went on to its end");
    let size = std::fs::metadata(s(&result, "logFile")).expect("log").len();
    assert!(size < 1_200_000, "the log holds {size} bytes");
    assert!(
        log.contains("the log reached its limit of 1048576 bytes"),
        "the cut is marked: {}",
        &log[log.len().saturating_sub(500)..]
    );
    assert!(
        !log.contains("FINISHED"),
        "output after the cut is not kept"
    );
    assert!(log.contains("[slipway]"), "slipway's own lines still are");
}
