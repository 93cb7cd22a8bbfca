//! Import checks every object as `git fsck` with `transfer.fsckObjects`
//! would (DESIGN §2): an agent that writes, with plumbing, a tree git itself
//! refuses (an entry named `.git` in any spelling, `..`, `a/b`, a bad mode,
//! a `.gitmodules` that runs a command or is a symlink) gets its whole import
//! refused with `importRefused` naming the object and the rule, before
//! anything of the host changes: its refs, HEAD, index, config and object
//! store, its files, and a file beside the repository stay byte-identical,
//! the refused objects never reach the host's store, and nothing planted
//! runs. The run's private git dir is kept for inspection.
//!
//! Every payload is tried from the host sandbox on a kept branch; the most
//! dangerous ones (`.git`, `..`, a command in `.gitmodules`) from every
//! sandbox and every strategy.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

/// A bash function the agent uses to write any tree, git-valid or not:
/// `mkt` reads `mode|name|id` lines and prints the tree's id.
const MKT: &str = r#"
mkt() {
  f=/tmp/slipway-tree.$$
  : > "$f"
  while IFS='|' read -r mode name oid; do
    printf '%s %s\0' "$mode" "$name" >> "$f"
    printf "$(echo "$oid" | sed 's/../\\x&/g')" >> "$f"
  done
  git hash-object -t tree --literally -w "$f"
  rm -f "$f"
}
blob() { printf '%s' "$1" | git hash-object -w --stdin; }
commit_tree() { c=$(git commit-tree "$1" -p HEAD -m "$2") && git update-ref HEAD "$c" && echo "committed $c"; }
"#;

/// A host repository, a file beside it that a `..` entry would reach, and
/// a folder planted programs leave their marks in.
struct World {
    env: TestEnv,
    repo: PathBuf,
    outside: PathBuf,
    marks: PathBuf,
}

const OUTSIDE: &str = "a file beside the repository\n";

impl World {
    fn new() -> World {
        let env = TestEnv::new();
        let repo = env.new_repo("repo");
        env.commit_file(&repo, "src/lib.txt", "one\n", "second commit");
        let outside = env.path().join("outside.txt");
        std::fs::write(&outside, OUTSIDE).expect("outside file");
        let marks = env.path().join("marks");
        std::fs::create_dir_all(&marks).expect("marks");
        World {
            env,
            repo,
            outside,
            marks,
        }
    }

    /// A shell command that leaves a mark named `name` when it runs.
    fn plant(&self, name: &str) -> String {
        format!("touch {}/{name}", self.marks.display())
    }

    fn marks(&self) -> Vec<String> {
        std::fs::read_dir(&self.marks)
            .expect("marks")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect()
    }

    /// Runs `script` (bash, with [`MKT`]) as the agent; returns the result and log.
    fn run(&self, sandbox: &[&str], strategy: &[&str], script: &str) -> (bool, Value, String) {
        let mut args = vec!["--json", "run"];
        args.extend_from_slice(sandbox);
        args.extend_from_slice(strategy);
        let body = format!("set -e\n{MKT}\n{script}");
        args.extend_from_slice(&["--", "bash", "-c", &body]);
        self.env.run_result(&self.repo, &args)
    }
}

/// Everything of the host a refused import must leave as it was.
#[derive(Debug, PartialEq, Eq)]
struct HostState {
    refs: BTreeMap<String, String>,
    files: BTreeMap<PathBuf, Vec<u8>>,
    outside: Vec<u8>,
}

impl HostState {
    /// The host's refs (but `except`, the run's own branch, which a branch
    /// run creates), HEAD, index, config, packed refs, object store and
    /// every file of the checkout (slipway's own `.slipway/` and git's
    /// linked-worktree admin dirs and logs aside).
    fn take(world: &World, except: &[&str]) -> HostState {
        let refs = world
            .env
            .git(
                &world.repo,
                &["for-each-ref", "--format=%(refname) %(objectname)"],
            )
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(n, _)| !except.contains(n))
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
            .collect();
        let mut files = BTreeMap::new();
        collect(&world.repo, &world.repo, &mut files);
        HostState {
            refs,
            files,
            outside: std::fs::read(&world.outside).unwrap_or_default(),
        }
    }
}

fn collect(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("entry").path();
        let rel = path.strip_prefix(root).expect("inside").to_path_buf();
        let skip = rel.starts_with(".slipway")
            || rel.starts_with(".git/worktrees")
            || rel.starts_with(".git/logs")
            || rel.starts_with(".git/refs");
        if skip {
            continue;
        }
        let meta = path.symlink_metadata().expect("meta");
        if meta.is_dir() {
            out.insert(rel.clone(), b"<dir>".to_vec());
            collect(root, &path, out);
        } else if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).expect("link");
            out.insert(rel, target.as_os_str().as_encoded_bytes().to_vec());
        } else {
            out.insert(rel, std::fs::read(&path).expect("read"));
        }
    }
}

/// Asserts a refused import: the run failed with `importRefused` naming
/// `rule`, the objects it made are not in the host, the host is as
/// `before`, the private dir is kept, and nothing planted ran.
fn assert_refused(
    world: &World,
    before: &HostState,
    except: &[&str],
    (rule, label): (&str, &str),
    ran: (bool, Value, String),
) {
    let (ok, result, log) = ran;
    let what = format!("{rule} ({label}): {result}\n{log}");
    assert!(!ok, "a run whose branch breaks {what}");
    assert!(
        log.contains("committed "),
        "the attack did not commit: {what}"
    );
    assert_eq!(result["error"]["kind"], "importRefused", "{what}");
    let message = result["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(rule), "the error names the rule: {what}");
    let commit = log
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("committed "))
        .expect("commit line")
        .trim()
        .to_owned();
    let probe = world
        .env
        .git_output(&world.repo, &["cat-file", "-e", &commit]);
    assert!(
        !probe.status.success(),
        "the refused commit {commit} reached the host's object store: {what}"
    );
    let kept = message
        .split("stays in ")
        .nth(1)
        .map(|p| PathBuf::from(p.trim()));
    assert!(
        kept.as_ref().is_some_and(|p| p.is_dir()),
        "the private git dir is kept and named: {what}"
    );
    assert_eq!(
        HostState::take(world, except),
        *before,
        "the host changed: {what}"
    );
    assert!(
        world.marks().is_empty(),
        "a planted program ran: {:?}",
        world.marks()
    );
    let fsck = world
        .env
        .git_output(&world.repo, &["fsck", "--no-dangling"]);
    assert!(
        fsck.status.success(),
        "git fsck: {}",
        String::from_utf8_lossy(&fsck.stderr)
    );
}

/// One tree an agent writes, and the fsck rule that refuses it.
struct Payload {
    rule: &'static str,
    /// bash that leaves the root tree's id in `$t`.
    tree: String,
}

/// The root tree of HEAD with `entries` (`mode|name|id` lines) added, in
/// git's order before `README.md`.
fn root_with(entries: &str) -> String {
    format!(
        "readme=$(git rev-parse HEAD:README.md)\nsrc=$(git rev-parse HEAD:src)\n\
         t=$(mkt <<EOF\n{entries}\n100644|README.md|$readme\n40000|src|$src\nEOF\n)\n"
    )
}

fn payloads(world: &World) -> Vec<Payload> {
    let plant = world.plant("gitmodules-update");
    let inner = "h=$(blob 'ref: refs/heads/evil\n'); c=$(blob '[core]\n\tfsmonitor = touch /tmp/x\n')\n\
                 g=$(printf '100644|HEAD|%s\\n100644|config|%s\\n' $h $c | mkt)\n";
    let dotgit = |name: &str| Payload {
        rule: "hasDotgit",
        tree: format!("{inner}{}", root_with(&format!("40000|{name}|$g"))),
    };
    vec![
        dotgit(".git"),
        dotgit(".GIT"),
        dotgit(".Git"),
        dotgit(".git."),
        dotgit("git~1"),
        dotgit(".g\u{200c}it"),
        Payload {
            rule: "hasDotgit",
            tree: format!(
                "{inner}readme=$(git rev-parse HEAD:README.md)\n\
                 s=$(printf '40000|.git|%s\\n100644|lib.txt|%s\\n' $g $(git rev-parse HEAD:src/lib.txt) | mkt)\n\
                 t=$(printf '100644|README.md|%s\\n40000|src|%s\\n' $readme $s | mkt)\n"
            ),
        },
        // A tree that a blob entry names is walked and checked as a tree.
        Payload {
            rule: "hasDotgit",
            tree: format!(
                "{inner}d=$(printf '40000|.git|%s\\n' $g | mkt)\n{}",
                root_with("100644|NOTES.txt|$d")
            ),
        },
        Payload {
            rule: "hasDotdot",
            tree: format!(
                "o=$(blob 'overwritten by the agent\n'); d=$(printf '100644|outside.txt|%s\\n' $o | mkt)\n{}",
                root_with("40000|..|$d")
            ),
        },
        Payload {
            rule: "hasDot",
            tree: format!(
                "o=$(blob 'x\n'); d=$(printf '100644|x|%s\\n' $o | mkt)\n{}",
                root_with("40000|.|$d")
            ),
        },
        Payload {
            rule: "fullPathname",
            tree: format!("o=$(blob 'x\n')\n{}", root_with("100644|../outside.txt|$o")),
        },
        Payload {
            rule: "fullPathname",
            tree: format!("o=$(blob 'x\n')\n{}", root_with("100644|.git/config|$o")),
        },
        Payload {
            rule: "emptyName",
            tree: format!("o=$(blob 'x\n')\n{}", root_with("100644||$o")),
        },
        Payload {
            rule: "gitmodulesSymlink",
            tree: format!("o=$(blob '/etc/passwd')\n{}", root_with("120000|.gitmodules|$o")),
        },
        Payload {
            rule: "gitmodulesSymlink",
            tree: format!("o=$(blob '../x')\n{}", root_with("120000|.GITMODULES|$o")),
        },
        Payload {
            rule: "gitmodulesUpdate",
            tree: format!(
                "o=$(blob '[submodule \"s\"]\n\tpath = s\n\turl = ./s\n\tupdate = !{plant}\n')\n{}",
                root_with("100644|.gitmodules|$o")
            ),
        },
        Payload {
            rule: "gitmodulesUrl",
            tree: format!(
                "o=$(blob '[submodule \"s\"]\n\tpath = s\n\turl = --upload-pack={plant}\n')\n{}",
                root_with("100644|.gitmodules|$o")
            ),
        },
        Payload {
            rule: "gitmodulesName",
            tree: format!(
                "o=$(blob '[submodule \"../../modules/evil\"]\n\tpath = s\n\turl = ./s\n')\n{}",
                root_with("100644|.gitmodules|$o")
            ),
        },
        Payload {
            rule: "gitmodulesPath",
            tree: format!(
                "o=$(blob '[submodule \"s\"]\n\tpath = --evil\n\turl = ./s\n')\n{}",
                root_with("100644|.gitmodules|$o")
            ),
        },
        Payload {
            rule: "zeroPaddedFilemode",
            tree: format!(
                "o=$(blob 'x\n'); d=$(printf '100644|x|%s\\n' $o | mkt)\n{}",
                root_with("040000|dir|$d")
            ),
        },
        Payload {
            rule: "badFilemode",
            tree: format!("o=$(blob 'x\n')\n{}", root_with("100666|any|$o")),
        },
        Payload {
            rule: "duplicateEntries",
            tree: "readme=$(git rev-parse HEAD:README.md)\n\
                   t=$(printf '100644|README.md|%s\\n100644|README.md|%s\\n' $readme $readme | mkt)\n"
                .to_owned(),
        },
        Payload {
            rule: "treeNotSorted",
            tree: "readme=$(git rev-parse HEAD:README.md); src=$(git rev-parse HEAD:src)\n\
                   t=$(printf '40000|src|%s\\n100644|README.md|%s\\n' $src $readme | mkt)\n"
                .to_owned(),
        },
    ]
}

const HOST: &[&str] = &["--sandbox", "none"];

#[test]
fn every_tree_git_refuses_is_refused_before_the_host_changes() {
    let world = World::new();
    for (n, payload) in payloads(&world).into_iter().enumerate() {
        let branch = format!("agent/p{n}");
        let refname = format!("refs/heads/{branch}");
        let before = HostState::take(&world, &[&refname]);
        let script = format!("{}commit_tree $t attack\n", payload.tree);
        let ran = world.run(HOST, &["--branch", &branch], &script);
        assert_refused(&world, &before, &[&refname], (payload.rule, &branch), ran);
        // The branch a refused run made is still at its start.
        assert_eq!(
            world.env.rev(&world.repo, &branch),
            world.env.rev(&world.repo, "main")
        );
    }
}

#[test]
fn a_tree_git_refuses_deep_in_the_runs_history_is_refused_too() {
    let world = World::new();
    let before = HostState::take(&world, &["refs/heads/agent/deep"]);
    let bad = &payloads(&world)[0];
    // The bad tree in the first of three commits; the tip's tree is clean.
    let script = format!(
        "{}commit_tree $t 'hidden attack'\n\
         git read-tree HEAD~1; echo fine > fine.txt; git add fine.txt\n\
         git commit -qm 'looks fine'; echo more >> fine.txt; git commit -qam 'looks fine too'\n\
         echo \"committed $(git rev-parse HEAD)\"\n",
        bad.tree
    );
    let ran = world.run(HOST, &["--branch", "agent/deep"], &script);
    assert_refused(
        &world,
        &before,
        &["refs/heads/agent/deep"],
        ("hasDotgit", "deep"),
        ran,
    );
}

/// The sandboxes and strategies each dangerous payload is tried in.
fn every_way() -> Vec<(&'static str, Vec<&'static str>, Vec<&'static str>)> {
    require_docker_image();
    let docker = Sandbox::Docker.args();
    let isolated: Vec<&str> = docker
        .iter()
        .map(|a| if *a == "docker" { "docker-isolated" } else { a })
        .collect();
    let mut out = Vec::new();
    for (name, sandbox) in [
        ("host", HOST.to_vec()),
        ("docker", docker),
        ("isolated", isolated),
    ] {
        out.push((name, sandbox.clone(), vec!["--branch", "agent/way"]));
        out.push((name, sandbox.clone(), vec!["--strategy", "merge-to-head"]));
        if name != "isolated" {
            // `head` works in the host checkout: only sandboxes that mount it.
            out.push((name, sandbox, vec!["--strategy", "head"]));
        }
    }
    out
}

#[test]
fn dotgit_dotdot_and_gitmodules_commands_are_refused_from_every_sandbox_and_strategy() {
    for (sandbox, args, strategy) in every_way() {
        let world = World::new();
        let all = payloads(&world);
        for rule in ["hasDotgit", "hasDotdot", "gitmodulesUpdate"] {
            let payload = all
                .iter()
                .find(|p| p.rule == rule)
                .expect("a payload of each rule");
            let except = ["refs/heads/agent/way"];
            let before = HostState::take(&world, &except);
            let script = format!("{}commit_tree $t attack\n", payload.tree);
            let ran = world.run(&args, &strategy, &script);
            let label = format!("{} ({sandbox} {strategy:?})", payload.rule);
            assert_refused(&world, &before, &except, (payload.rule, &label), ran);
            // No temporary branch of a refused merge-to-head run is left moved.
            for branch in world.env.local_branches(&world.repo) {
                if branch.starts_with("slipway/") {
                    assert_eq!(
                        world.env.rev(&world.repo, &branch),
                        world.env.rev(&world.repo, "main"),
                        "{label}: {branch}"
                    );
                }
            }
        }
    }
}

#[test]
fn names_git_accepts_are_imported() {
    // The control: trees with names close to the refused ones import.
    let world = World::new();
    let script = "o=$(blob 'ok\n')\n\
                  g=$(printf '100644|ci.yml|%s\\n' $o | mkt)\n\
                  readme=$(git rev-parse HEAD:README.md); src=$(git rev-parse HEAD:src)\n\
                  t=$(printf '40000|.github|%s\\n100644|.gitignore|%s\\n100644|.gitmodules|%s\\n100644|README.md|%s\\n100644|git|%s\\n100644|git~2x|%s\\n40000|src|%s\\n' \
                    $g $o $(blob '[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.com/lib.git\n') $readme $o $o $src | mkt)\n\
                  commit_tree $t 'close calls'\n";
    let (ok, result, log) = world.run(HOST, &["--branch", "agent/fine"], script);
    assert!(ok, "{result}\n{log}");
    let files = world
        .env
        .git(&world.repo, &["ls-tree", "-r", "--name-only", "agent/fine"]);
    for name in [
        ".gitignore",
        ".github/ci.yml",
        ".gitmodules",
        "git",
        "git~2x",
    ] {
        assert!(files.lines().any(|l| l == name), "{name} in {files}");
    }
}
