//! Workspace files: migrations (fixtures, byte for byte), parse → write → parse
//! stability (property tests), one test per validation rule with the exact
//! error text, and the `workspace create|edit|show|list|rm` library calls the
//! CLI makes — against real temp dirs and real git repositories.

use crate::common;

use std::path::{Path, PathBuf};

use common::TestEnv;
use proptest::prelude::*;
use slipway_core::git::policy::SourcePolicy;
use slipway_core::workspace::CURRENT_VERSION;
use slipway_core::workspace::edit::{self, EditError, EditRequest, MountArg};
use slipway_core::workspace::migrate;
use slipway_core::workspace::{
    FileKind, HookDefaults, Isolation, Mount, RunDefaults, SandboxKind, StrategyKind,
    ValidationError, Workspace, WorkspaceError, WorkspaceStore, workspaces_dir_from,
};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/workspace")
}

fn named(path: &Path) -> FileKind {
    FileKind::Named(
        path.file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("ws")
            .to_owned(),
    )
}

fn parse(text: &str, path: &Path) -> Result<Workspace, WorkspaceError> {
    Workspace::parse(text, path, named(path))
}

fn parse_ok(text: &str, path: &Path) -> Workspace {
    parse(text, path).unwrap_or_else(|e| panic!("{} should parse: {e}", path.display()))
}

/// The store of a test environment (its fake `$XDG_CONFIG_HOME`).
fn store(env: &TestEnv) -> WorkspaceStore {
    let envs = env.envs();
    let get = |k: &str| {
        envs.iter()
            .find(|(name, _)| *name == k)
            .map(|(_, v)| v.clone())
    };
    let dir = workspaces_dir_from(get("XDG_CONFIG_HOME").as_deref(), get("HOME").as_deref())
        .expect("the test env sets HOME");
    WorkspaceStore::new(dir)
}

fn validation_error(ws: &Workspace) -> ValidationError {
    match ws.validate() {
        Err(e) => e,
        Ok(()) => panic!("{} should be invalid:\n{}", ws.path.display(), ws.to_toml()),
    }
}

fn parse_error(text: &str, path: &Path) -> WorkspaceError {
    match parse(text, path) {
        Err(e) => e,
        Ok(_) => panic!("should not parse:\n{text}"),
    }
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).expect("canonicalize")
}

// ------------------------------------------------------------ migrations

#[test]
fn every_migration_step_has_fixtures_and_they_match_byte_for_byte() {
    let steps = migrate::steps();
    assert!(!steps.is_empty());
    assert_eq!(steps.last().map(|s| s.to), Some(CURRENT_VERSION));
    for step in steps {
        let dir = fixtures()
            .join("migrations")
            .join(format!("v{}-to-v{}", step.from, step.to));
        let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("no fixtures for step {step:?} in {}: {e}", dir.display()))
            .map(|e| e.expect("dir entry").path())
            .filter(|p| p.is_dir())
            .collect();
        cases.sort();
        assert!(!cases.is_empty(), "no fixture cases in {}", dir.display());
        for case in cases {
            let before = std::fs::read_to_string(case.join("before.toml")).expect("before.toml");
            let after = std::fs::read_to_string(case.join("after.toml")).expect("after.toml");
            let file = case.join("before.toml");
            let migrated = migrate::migrate_text(&before, &file)
                .unwrap_or_else(|e| panic!("{}: {e}", case.display()));
            similar_asserts::assert_eq!(migrated, after, "migrating {}", case.display());
            // Migrating twice changes nothing.
            let again = migrate::migrate_text(&after, &case.join("after.toml"))
                .unwrap_or_else(|e| panic!("{}: {e}", case.display()));
            similar_asserts::assert_eq!(again, after, "re-migrating {}", case.display());
            // Both read as the same workspace, and the old one says where it came from.
            let old = parse_ok(&before, &file);
            let new = parse_ok(&after, &case.join("after.toml"));
            assert_eq!(old.migrated_from, Some(step.from));
            assert_eq!(new.migrated_from, None);
            assert_eq!(old.mounts, new.mounts, "{}", case.display());
            assert_eq!(old.workdir, new.workdir);
            assert_eq!(old.defaults, new.defaults);
            // Saving the migrated workspace writes exactly the after file.
            similar_asserts::assert_eq!(old.to_toml(), after, "saving {}", case.display());
        }
    }
}

#[test]
fn v1_isolated_becomes_worktree_or_shared_and_policies_stay_host_head() {
    let path = fixtures().join("migrations/v1-to-v2/basic/before.toml");
    let ws = Workspace::load(&path).expect("loads");
    let summary: Vec<(String, Isolation, bool, SourcePolicy)> = ws
        .mounts
        .iter()
        .map(|m| (m.label(), m.isolation, m.readonly, m.policy.clone()))
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "/work/app".to_owned(),
                Isolation::Worktree,
                false,
                SourcePolicy::HostHead
            ),
            (
                "/cache/npm".to_owned(),
                Isolation::Shared,
                true,
                SourcePolicy::HostHead
            ),
            (
                "/work/docs".to_owned(),
                Isolation::Shared,
                false,
                SourcePolicy::HostHead
            ),
        ]
    );
    assert_eq!(ws.unknown_keys(), vec!["team", "mounts[1].owner"]);
}

#[test]
fn a_file_newer_than_this_slipway_says_upgrade_slipway() {
    let path = Path::new("/cfg/slipway/workspaces/future.toml");
    let err = parse_error("version = 7\n", path);
    assert_eq!(
        err.to_string(),
        "/cfg/slipway/workspaces/future.toml: this workspace file is version 7; this slipway understands up to 2: upgrade slipway"
    );
    assert_eq!(err.kind(), "versionTooNew");
}

#[test]
fn invalid_fixtures_fail_with_their_exact_message() {
    let dir = fixtures().join("invalid");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("invalid fixtures")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10);
    for file in files {
        let expected = std::fs::read_to_string(file.with_extension("err"))
            .unwrap_or_else(|e| panic!("{} needs a .err file: {e}", file.display()));
        let expected = expected
            .trim_end()
            .replace("{file}", &file.display().to_string());
        let err = match Workspace::load(&file) {
            Err(e) => e,
            Ok(_) => panic!("{} should not load", file.display()),
        };
        similar_asserts::assert_eq!(err.to_string(), expected, "{}", file.display());
        // Every error has a stable kind.
        assert!(!err.kind().as_str().is_empty());
    }
}

#[test]
fn conflicting_keys_leave_the_document_untouched() {
    let text = "version = 1\n[[mounts]]\nsrc = \"/a\"\nisolated = true\n\n[[mounts]]\nsrc = \"/b\"\nisolated = true\nisolation = \"clone\"\n";
    let err = migrate::migrate_text(text, Path::new("/w.toml")).expect_err("conflict");
    assert_eq!(err.kind(), "conflictingKeys");
}

// ------------------------------------------------------------ property tests

fn segment() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 ._\\-\"\\\\#=é\\[\\]']{1,8}"
}

fn abs_path() -> impl Strategy<Value = PathBuf> {
    prop::collection::vec(segment(), 1..4).prop_map(|segs| {
        let mut p = PathBuf::from("/");
        for s in segs {
            // `.` and `..` are path syntax, not names.
            let s = if s == "." || s == ".." {
                format!("x{s}")
            } else {
                s
            };
            p.push(s);
        }
        p
    })
}

fn policy() -> impl Strategy<Value = SourcePolicy> {
    prop_oneof![
        Just(SourcePolicy::HostHead),
        Just(SourcePolicy::CurrentBranch),
        Just(SourcePolicy::Default),
        Just(SourcePolicy::Ask),
        "[a-z]{1,6}(/[a-z0-9._\\-]{1,6}){0,2}"
            .prop_map(|reference| SourcePolicy::Named { reference }),
    ]
}

fn mount() -> impl Strategy<Value = Mount> {
    (
        abs_path(),
        abs_path(),
        any::<bool>(),
        prop_oneof![
            Just(Isolation::Shared),
            Just(Isolation::Worktree),
            Just(Isolation::Clone)
        ],
        policy(),
    )
        .prop_map(|(src, dst, readonly, isolation, policy)| Mount {
            src,
            dst,
            readonly,
            isolation,
            policy,
        })
}

fn text_list() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec("[^\u{0}]{0,12}", 0..3)
}

fn defaults() -> impl Strategy<Value = RunDefaults> {
    (
        prop::option::of(prop::sample::select(
            slipway_core::workspace::AGENT_NAMES.to_vec(),
        )),
        prop::option::of(prop::sample::select(SandboxKind::ALL.to_vec())),
        prop::option::of("[a-z0-9./:_\\-]{1,20}"),
        prop::option::of(prop::sample::select(StrategyKind::ALL.to_vec())),
        prop::option::of(prop::sample::select(vec![
            SourcePolicy::HostHead,
            SourcePolicy::CurrentBranch,
            SourcePolicy::Default,
            SourcePolicy::Ask,
            SourcePolicy::Named {
                reference: "origin/release".into(),
            },
        ])),
        text_list(),
        text_list(),
        text_list(),
    )
        .prop_map(
            |(agent, sandbox, image, strategy, source, host, sandbox_hooks, copy)| RunDefaults {
                agent: agent.map(str::to_owned),
                sandbox,
                image,
                strategy,
                source,
                hooks: HookDefaults {
                    host_on_worktree_ready: host,
                    sandbox_on_sandbox_ready: sandbox_hooks,
                },
                copy_to_worktree: copy,
                budgets: Default::default(),
            },
        )
}

fn workspace() -> impl Strategy<Value = Workspace> {
    (
        prop::option::of(abs_path()),
        prop::collection::vec(mount(), 0..5),
        defaults(),
    )
        .prop_map(|(workdir, mounts, defaults)| {
            let path = Path::new("/cfg/slipway/workspaces/prop.toml");
            let mut ws = Workspace::new(path, named(path));
            ws.workdir = workdir;
            ws.mounts = mounts;
            ws.defaults = defaults;
            ws
        })
}

fn same_content(a: &Workspace, b: &Workspace) -> bool {
    a.workdir == b.workdir && a.mounts == b.mounts && a.defaults == b.defaults
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn parse_write_parse_is_stable(ws in workspace()) {
        let text = ws.to_toml();
        let parsed = parse(&text, &ws.path).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert!(same_content(&ws, &parsed), "content changed:\n{text}\n{:?}\n{:?}", ws.mounts, parsed.mounts);
        prop_assert_eq!(parsed.to_toml(), text.clone());
        let reparsed = parse(&parsed.to_toml(), &ws.path).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(same_content(&parsed, &reparsed));
    }

    #[test]
    fn comments_and_unknown_keys_survive_an_edit(ws in workspace(), other in workspace()) {
        // Decorate the file by hand: a comment and an unknown key at the top
        // and in every mount.
        let mut doc: toml_edit::DocumentMut = ws.to_toml().parse().map_err(|e| TestCaseError::fail(format!("{e}")))?;
        doc["x_unknown"] = toml_edit::value("kept");
        if let Some(aot) = doc.get_mut("mounts").and_then(|i| i.as_array_of_tables_mut()) {
            for (i, t) in aot.iter_mut().enumerate() {
                t["x_note"] = toml_edit::value(i as i64);
                t.decor_mut().set_prefix(format!("\n# mount number {i}\n"));
            }
        }
        let text = doc.to_string();
        let mut parsed = parse(&text, &ws.path).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        // Nothing changed: byte for byte.
        prop_assert_eq!(parsed.to_toml(), text.clone());
        // Change every value but keep the mounts' dsts.
        parsed.workdir = other.workdir.clone();
        parsed.defaults = other.defaults.clone();
        for (i, m) in parsed.mounts.iter_mut().enumerate() {
            if let Some(o) = other.mounts.get(i) {
                m.src = o.src.clone();
                m.readonly = o.readonly;
                m.isolation = o.isolation;
                m.policy = o.policy.clone();
            }
        }
        let written = parsed.to_toml();
        let reread = parse(&written, &ws.path).map_err(|e| TestCaseError::fail(format!("{e}\n{written}")))?;
        prop_assert!(same_content(&parsed, &reread), "edit lost:\n{written}");
        let doc2: toml_edit::DocumentMut = written.parse().map_err(|e| TestCaseError::fail(format!("{e}")))?;
        prop_assert_eq!(doc2.get("x_unknown").and_then(|v| v.as_str()), Some("kept"));
        for i in 0..parsed.mounts.len() {
            let note = doc2["mounts"][i].get("x_note").and_then(|v| v.as_integer());
            prop_assert_eq!(note, Some(i as i64), "{}", written);
            let marker = format!("# mount number {i}\n");
            prop_assert!(written.contains(&marker), "comment lost:\n{}", written);
        }
    }

    #[test]
    fn v1_files_migrate_once_and_keep_their_meaning(
        mounts in prop::collection::vec((abs_path(), abs_path(), any::<bool>(), any::<bool>()), 0..4),
        with_version in any::<bool>(),
    ) {
        let mut doc = toml_edit::DocumentMut::new();
        if with_version {
            doc["version"] = toml_edit::value(1);
        }
        let mut aot = toml_edit::ArrayOfTables::new();
        for (src, dst, readonly, isolated) in &mounts {
            let mut t = toml_edit::Table::new();
            t["src"] = toml_edit::value(src.to_string_lossy().as_ref());
            t["dst"] = toml_edit::value(dst.to_string_lossy().as_ref());
            t["readonly"] = toml_edit::value(*readonly);
            t["isolated"] = toml_edit::value(*isolated);
            aot.push(t);
        }
        if !aot.is_empty() {
            doc["mounts"] = toml_edit::Item::ArrayOfTables(aot);
        }
        let path = Path::new("/cfg/v1.toml");
        let migrated = migrate::migrate_text(&doc.to_string(), path).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(migrate::migrate_text(&migrated, path).map_err(|e| TestCaseError::fail(e.to_string()))?, migrated.clone());
        let ws = parse(&migrated, path).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(ws.mounts.len(), mounts.len());
        for (m, (src, dst, readonly, isolated)) in ws.mounts.iter().zip(&mounts) {
            prop_assert_eq!(&m.src, src);
            prop_assert_eq!(&m.dst, dst);
            prop_assert_eq!(m.readonly, *readonly);
            prop_assert_eq!(m.isolation, if *isolated { Isolation::Worktree } else { Isolation::Shared });
            prop_assert_eq!(&m.policy, &SourcePolicy::HostHead);
        }
    }
}

// ------------------------------------------------------------ parsing details

#[test]
fn missing_policy_is_host_head_and_both_spellings_are_accepted() {
    let path = Path::new("/cfg/slipway/workspaces/spell.toml");
    let text = r#"version = 2
[[mounts]]
src = "/a"
isolation = "worktree"
[[mounts]]
src = "/b"
isolation = "worktree"
source_branch_policy = "current-branch"
[[mounts]]
src = "/c"
isolation = "clone"
source_branch_policy = "host-head"
[[mounts]]
src = "/d"
isolation = "clone"
source_branch_policy = "named"
source_branch = "origin/release/2026-06"
"#;
    let ws = parse_ok(text, path);
    let policies: Vec<SourcePolicy> = ws.mounts.iter().map(|m| m.policy.clone()).collect();
    assert_eq!(
        policies,
        vec![
            SourcePolicy::HostHead,
            SourcePolicy::CurrentBranch,
            SourcePolicy::HostHead,
            SourcePolicy::Named {
                reference: "origin/release/2026-06".into()
            },
        ]
    );
    // dst defaults to src; isolation defaults to shared.
    assert_eq!(ws.mounts[0].dst, PathBuf::from("/a"));
    let shared = parse_ok("version = 2\n[[mounts]]\nsrc = \"/s\"\n", path);
    assert_eq!(shared.mounts[0].isolation, Isolation::Shared);
    // Kebab-case spellings stay as written when nothing changes.
    assert_eq!(ws.to_toml(), text);
}

#[test]
fn a_new_workspace_is_written_in_a_plain_shape() {
    let path = Path::new("/cfg/slipway/workspaces/new.toml");
    let mut ws = Workspace::new(path, named(path));
    ws.workdir = Some("/work/app".into());
    let mut app = Mount::new("/home/me/app", "/work/app");
    app.isolation = Isolation::Worktree;
    app.policy = SourcePolicy::Named {
        reference: "origin/main".into(),
    };
    let mut cache = Mount::new("/home/me/.cache", "/cache");
    cache.readonly = true;
    ws.mounts = vec![app, cache];
    ws.defaults.agent = Some("codex".into());
    ws.defaults.hooks.host_on_worktree_ready = vec!["npm ci".into()];
    similar_asserts::assert_eq!(
        ws.to_toml(),
        r#"version = 2
workdir = "/work/app"
agent = "codex"

[hooks.host]
on_worktree_ready = ["npm ci"]

[[mounts]]
src = "/home/me/app"
dst = "/work/app"
isolation = "worktree"
source_branch_policy = "named"
source_branch = "origin/main"

[[mounts]]
src = "/home/me/.cache"
dst = "/cache"
readonly = true
isolation = "shared"
"#
    );
}

#[test]
fn repo_defaults_resolve_relative_src_against_the_repo_root() {
    let env = TestEnv::new();
    let repo = env.new_repo("app");
    std::fs::write(
        repo.join("slipway.toml"),
        "version = 2\nagent = \"claude-code\"\ncopy_to_worktree = [\".env\"]\n\n[[mounts]]\nsrc = \".\"\ndst = \"/work/app\"\nisolation = \"worktree\"\nsource_branch_policy = \"default\"\n",
    )
    .expect("write slipway.toml");
    let ws = Workspace::load_repo_defaults(&repo)
        .expect("loads")
        .expect("present");
    assert_eq!(ws.mounts[0].src, repo);
    assert_eq!(ws.defaults.agent.as_deref(), Some("claude-code"));
    ws.validate().expect("valid");
    // Repo defaults need no mounts.
    let empty = env.new_repo("empty");
    std::fs::write(
        empty.join("slipway.toml"),
        "version = 2\nsandbox = \"docker\"\n",
    )
    .expect("write");
    let ws = Workspace::load_repo_defaults(&empty)
        .expect("loads")
        .expect("present");
    ws.validate().expect("no mounts is fine for repo defaults");
    assert!(
        Workspace::load_repo_defaults(&env.new_repo("none"))
            .expect("no file")
            .is_none()
    );
    // A workspace's defaults win; unset ones come from the repo.
    let mut mine = RunDefaults {
        agent: Some("codex".into()),
        ..RunDefaults::default()
    };
    mine.hooks.sandbox_on_sandbox_ready = vec!["make".into()];
    let merged = mine.or(&ws.defaults);
    assert_eq!(merged.agent.as_deref(), Some("codex"));
    assert_eq!(merged.sandbox, Some(SandboxKind::Docker));
}

#[test]
fn workspaces_dir_follows_xdg_then_home() {
    use std::ffi::OsStr;
    assert_eq!(
        workspaces_dir_from(Some(OsStr::new("/x/cfg")), Some(OsStr::new("/home/u"))),
        Some(PathBuf::from("/x/cfg/slipway/workspaces"))
    );
    assert_eq!(
        workspaces_dir_from(Some(OsStr::new("relative")), Some(OsStr::new("/home/u"))),
        Some(PathBuf::from("/home/u/.config/slipway/workspaces"))
    );
    assert_eq!(
        workspaces_dir_from(Some(OsStr::new("")), Some(OsStr::new("/home/u"))),
        Some(PathBuf::from("/home/u/.config/slipway/workspaces"))
    );
    assert_eq!(workspaces_dir_from(None, None), None);
}

// ------------------------------------------------------------ validation rules

/// A workspace file path in the env's store, and a workspace for it.
fn ws_in(env: &TestEnv, name: &str) -> Workspace {
    let path = store(env).path_of(name).expect("name");
    Workspace::new(&path, FileKind::Named(name.to_owned()))
}

fn isolated(src: &Path, dst: &str, isolation: Isolation) -> Mount {
    let mut m = Mount::new(src, dst);
    m.isolation = isolation;
    m
}

#[test]
fn a_sound_workspace_passes_and_launches() {
    let env = TestEnv::new();
    let app = env.new_repo("app");
    let lib = env.new_repo("lib");
    let cache = env.path().join("cache");
    std::fs::create_dir_all(&cache).expect("cache");
    let mut ws = ws_in(&env, "ok");
    let mut a = isolated(&app, "/work/app", Isolation::Worktree);
    a.policy = SourcePolicy::Default;
    let mut b = isolated(&lib, "/work/lib", Isolation::Clone);
    b.policy = SourcePolicy::Named {
        reference: "origin/release".into(),
    };
    let mut c = Mount::new(&cache, "/cache");
    c.readonly = true;
    // A worktree and a clone of one repository are fine, and a shared mount
    // inside an isolated one's container path too.
    let d = isolated(&app, "/work/app-clone", Isolation::Clone);
    let e = Mount::new(&cache, "/work/app/node_modules");
    ws.mounts = vec![a, b, c, d, e];
    ws.workdir = Some("/work/app/src".into());
    ws.validate().expect("valid");
    ws.validate_for_launch().expect("launchable");
    assert_eq!(
        ws.workdir_mount().map(Mount::label),
        Some("/work/app".into())
    );
    // What the run takes.
    let plan = ws.launch_plan().expect("plan");
    assert_eq!(plan.name, "ok");
    assert_eq!(plan.workdir, PathBuf::from("/work/app/src"));
    let kinds: Vec<_> = plan
        .mounts
        .iter()
        .map(|m| (m.dst.clone(), m.isolation, m.source.clone()))
        .collect();
    use slipway_core::run::workspace::Isolation as RunIsolation;
    assert_eq!(
        kinds,
        vec![
            (
                "/work/app".into(),
                RunIsolation::Worktree,
                SourcePolicy::Default
            ),
            (
                "/work/lib".into(),
                RunIsolation::Clone,
                SourcePolicy::Named {
                    reference: "origin/release".into()
                }
            ),
            (
                "/cache".into(),
                RunIsolation::Shared,
                SourcePolicy::HostHead
            ),
            (
                "/work/app-clone".into(),
                RunIsolation::Clone,
                SourcePolicy::HostHead
            ),
            (
                "/work/app/node_modules".into(),
                RunIsolation::Shared,
                SourcePolicy::HostHead
            ),
        ]
    );
    assert!(plan.mounts[2].readonly);
    ws.save().expect("saves");
    assert!(ws.path.is_file());
}

#[test]
fn rule_policy_on_a_shared_mount() {
    let env = TestEnv::new();
    let app = env.new_repo("app");
    let mut ws = ws_in(&env, "p");
    let mut m = Mount::new(&app, "/work/app");
    m.policy = SourcePolicy::Default;
    ws.mounts = vec![m];
    let err = validation_error(&ws);
    assert_eq!(err.kind(), "policyOnSharedMount");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: mount /work/app is shared but has source_branch_policy = \"default\"; a shared mount is the host folder itself, at whatever the host has checked out, so only host_head applies: set isolation = \"worktree\" (or \"clone\") to start from another branch, or remove source_branch_policy",
            ws.path.display()
        )
    );
    // host_head on a shared mount is fine.
    ws.mounts[0].policy = SourcePolicy::HostHead;
    ws.validate().expect("host_head is fine");
    // So is `ask` spelled in a file: refused on shared.
    let text = format!(
        "version = 2\n[[mounts]]\nsrc = \"{}\"\ndst = \"/w\"\nsource_branch_policy = \"ask\"\n",
        app.display()
    );
    let ws = parse_ok(&text, &ws.path);
    assert_eq!(validation_error(&ws).kind(), "policyOnSharedMount");
}

#[test]
fn rule_source_branch_without_named() {
    let path = Path::new("/cfg/slipway/workspaces/sb.toml");
    let err = parse_error(
        "version = 2\n[[mounts]]\nsrc = \"/a\"\ndst = \"/w\"\nisolation = \"worktree\"\nsource_branch_policy = \"ask\"\nsource_branch = \"main\"\n",
        path,
    );
    assert_eq!(err.kind(), "sourceBranchWithoutNamed");
    assert_eq!(
        err.to_string(),
        "/cfg/slipway/workspaces/sb.toml: mount /w has source_branch = \"main\" but source_branch_policy is ask; source_branch only goes with the named policy: set source_branch_policy = \"named\", or remove source_branch"
    );
}

#[test]
fn rule_named_without_source_branch() {
    let path = Path::new("/cfg/slipway/workspaces/nb.toml");
    for extra in ["", "source_branch = \"  \"\n"] {
        let err = parse_error(
            &format!(
                "version = 2\n[[mounts]]\nsrc = \"/a\"\ndst = \"/w\"\nisolation = \"clone\"\nsource_branch_policy = \"named\"\n{extra}"
            ),
            path,
        );
        assert_eq!(err.kind(), "namedWithoutSourceBranch");
        assert_eq!(
            err.to_string(),
            "/cfg/slipway/workspaces/nb.toml: mount /w has source_branch_policy = \"named\" but no source_branch; add source_branch = \"BRANCH\" (a local branch such as main, or a remote-tracking one such as origin/main)"
        );
    }
}

#[test]
fn rule_isolated_mounts_may_not_nest_on_the_host() {
    let env = TestEnv::new();
    let outer = env.new_repo("outer");
    let inner_dir = outer.join("vendor/inner");
    std::fs::create_dir_all(&inner_dir).expect("inner");
    env.git(&inner_dir, &["init", "-q", "-b", "main"]);
    env.commit_file(&inner_dir, "x", "x\n", "inner");
    let mut ws = ws_in(&env, "nest");
    ws.mounts = vec![
        isolated(&outer, "/work/outer", Isolation::Worktree),
        isolated(&inner_dir, "/work/inner", Isolation::Clone),
    ];
    let err = validation_error(&ws);
    assert_eq!(err.kind(), "nestedIsolatedMounts");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: isolated mounts may not nest: mount /work/inner (src {}) is inside mount /work/outer (src {}); isolate only one of them and set the other to isolation = \"shared\"",
            ws.path.display(),
            canonical(&inner_dir).display(),
            canonical(&outer).display()
        )
    );
    // Shared inner: fine.
    ws.mounts[1].isolation = Isolation::Shared;
    ws.validate()
        .expect("a shared mount may sit inside an isolated one");
}

#[test]
fn rule_isolated_mounts_may_not_nest_in_the_container() {
    let env = TestEnv::new();
    let a = env.new_repo("a");
    let b = env.new_repo("b");
    let mut ws = ws_in(&env, "nestdst");
    ws.mounts = vec![
        isolated(&a, "/work", Isolation::Worktree),
        isolated(&b, "/work/b", Isolation::Worktree),
    ];
    let err = validation_error(&ws);
    assert_eq!(err.kind(), "nestedIsolatedMounts");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: isolated mounts may not nest: mount /work/b is inside mount /work in the container; give them separate container paths, e.g. /work/a and /work/b",
            ws.path.display()
        )
    );
}

#[test]
fn rule_two_worktree_mounts_of_one_repository_even_through_symlinks_and_dotdot() {
    let env = TestEnv::new();
    let repo = env.new_repo("app");
    std::fs::create_dir_all(repo.join("sub")).expect("sub");
    let link = env.path().join("app-link");
    std::os::unix::fs::symlink(&repo, &link).expect("symlink");
    // A linked worktree of the same repository counts too.
    let linked = env.path().join("app-linked");
    env.git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "other",
            linked.to_str().expect("utf-8"),
        ],
    );
    let expected = |second: &str| {
        format!(
            "{{file}}: mounts /work/one and {second} are both worktree mounts of the repository at {}; a workspace gets one worktree of a repository: remove one of them, or set one to isolation = \"clone\"",
            canonical(&repo).display()
        )
    };
    for other in [link.clone(), repo.join("sub/.."), linked.clone()] {
        let mut ws = ws_in(&env, "twice");
        ws.mounts = vec![
            isolated(&repo, "/work/one", Isolation::Worktree),
            isolated(&other, "/work/two", Isolation::Worktree),
        ];
        let err = validation_error(&ws);
        assert_eq!(
            err.kind(),
            "twoWorktreesOfOneRepository",
            "{}",
            other.display()
        );
        assert_eq!(
            err.to_string(),
            expected("/work/two").replace("{file}", &ws.path.display().to_string())
        );
        // A clone of it beside the worktree is fine.
        ws.mounts[1].isolation = Isolation::Clone;
        ws.validate()
            .expect("a worktree and a clone of one repository");
    }
}

#[test]
fn rule_src_absolute() {
    let env = TestEnv::new();
    let mut ws = ws_in(&env, "rel");
    ws.mounts = vec![Mount::new("projects/app", "/work/app")];
    let err = validation_error(&ws);
    assert_eq!(err.kind(), "srcNotAbsolute");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: mount /work/app: src = \"projects/app\" is not an absolute path; write the full host path, e.g. \"/home/me/project\"",
            ws.path.display()
        )
    );
}

#[test]
fn rule_src_exists() {
    let env = TestEnv::new();
    let gone = env.path().join("gone");
    let mut ws = ws_in(&env, "gone");
    ws.mounts = vec![Mount::new(&gone, "/work/app")];
    let err = validation_error(&ws);
    assert_eq!(err.kind(), "srcMissing");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: mount /work/app: src {} does not exist; create it, or point src at an existing host path",
            ws.path.display(),
            gone.display()
        )
    );
}

#[test]
fn rule_dst_absolute() {
    let env = TestEnv::new();
    let mut ws = ws_in(&env, "dst");
    for dst in ["work/app", "/work/../etc"] {
        ws.mounts = vec![Mount::new(env.path(), dst)];
        let err = validation_error(&ws);
        assert_eq!(err.kind(), "dstNotAbsolute");
        assert_eq!(
            err.to_string(),
            format!(
                "{}: mount {dst}: dst must be an absolute container path without '..', such as /work/app",
                ws.path.display()
            )
        );
    }
    ws.mounts = vec![Mount::new(env.path(), "/")];
    let err = validation_error(&ws);
    assert_eq!(err.kind(), "dstIsRoot");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: mount /: dst cannot be / (the container's root); mount it at a folder such as /work/app",
            ws.path.display()
        )
    );
}

#[test]
fn rule_dst_unique() {
    let env = TestEnv::new();
    let a = env.path().join("a");
    let b = env.path().join("b");
    std::fs::create_dir_all(&a).expect("a");
    std::fs::create_dir_all(&b).expect("b");
    let mut ws = ws_in(&env, "dup");
    ws.mounts = vec![Mount::new(&a, "/data"), Mount::new(&b, "/data/")];
    let err = validation_error(&ws);
    assert_eq!(err.kind(), "duplicateDst");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: two mounts have dst /data/; give each mount its own container path",
            ws.path.display()
        )
    );
}

#[test]
fn rule_workdir_covered_by_a_mount() {
    let env = TestEnv::new();
    let mut ws = ws_in(&env, "wd");
    ws.mounts = vec![
        Mount::new(env.path(), "/work/app"),
        Mount::new(env.path(), "/cache"),
    ];
    ws.workdir = Some("/work/application".into());
    let err = validation_error(&ws);
    assert_eq!(err.kind(), "workdirNotCovered");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: workdir /work/application is not inside any mount; set workdir to one of /work/app, /cache (or a folder inside one), or add a mount that covers it",
            ws.path.display()
        )
    );
    ws.workdir = Some("work/app".into());
    let err = validation_error(&ws);
    assert_eq!(err.kind(), "workdirNotAbsolute");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: workdir = \"work/app\" is not an absolute container path; use the dst of a mount, or a folder inside one",
            ws.path.display()
        )
    );
    ws.workdir = Some("/work/app/src/".into());
    ws.validate().expect("inside a mount");
}

#[test]
fn rule_a_named_workspace_has_mounts() {
    let env = TestEnv::new();
    let ws = ws_in(&env, "empty");
    let err = validation_error(&ws);
    assert_eq!(err.kind(), "noMounts");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: the workspace has no mounts; add a [[mounts]] table with src and dst",
            ws.path.display()
        )
    );
}

#[test]
fn rule_isolated_src_is_a_repository_root() {
    let env = TestEnv::new();
    let repo = env.new_repo("app");
    let sub = repo.join("src");
    std::fs::create_dir_all(&sub).expect("sub");
    let plain = env.path().join("plain");
    std::fs::create_dir_all(&plain).expect("plain");
    let mut ws = ws_in(&env, "root");

    ws.mounts = vec![isolated(&sub, "/work/app", Isolation::Worktree)];
    let err = validation_error(&ws);
    assert_eq!(err.kind(), "notRepositoryRoot");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: mount /work/app: src {} is a folder inside the repository at {}; a worktree mount isolates a whole repository: set src = \"{}\", or set isolation = \"shared\"",
            ws.path.display(),
            sub.display(),
            canonical(&repo).display(),
            canonical(&repo).display()
        )
    );

    // The git dir itself is not the root either.
    ws.mounts = vec![isolated(&repo.join(".git"), "/work/app", Isolation::Clone)];
    assert_eq!(validation_error(&ws).kind(), "notRepositoryRoot");

    ws.mounts = vec![isolated(&plain, "/work/app", Isolation::Clone)];
    let err = validation_error(&ws);
    assert_eq!(err.kind(), "notARepository");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: mount /work/app: src {} is not a git repository, so it cannot be isolated in a clone; point src at a repository root, or set isolation = \"shared\"",
            ws.path.display(),
            plain.display()
        )
    );

    let bare = env.path().join("bare.git");
    env.git(env.path(), &["init", "-q", "--bare", "bare.git"]);
    ws.mounts = vec![isolated(&bare, "/work/app", Isolation::Worktree)];
    let err = validation_error(&ws);
    assert_eq!(err.kind(), "bareRepository");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: mount /work/app: src {} is a bare repository, with no checkout to isolate; point src at a repository with a working tree, or set isolation = \"shared\"",
            ws.path.display(),
            bare.display()
        )
    );

    // Shared mounts may be any folder.
    ws.mounts = vec![Mount::new(&sub, "/work/app")];
    ws.validate().expect("shared subfolder is fine");
}

#[test]
fn rule_read_only_isolated_mounts_are_refused() {
    let env = TestEnv::new();
    let repo = env.new_repo("app");
    let mut ws = ws_in(&env, "ro");
    let mut m = isolated(&repo, "/work/app", Isolation::Worktree);
    m.readonly = true;
    ws.mounts = vec![m];
    let err = validation_error(&ws);
    assert_eq!(err.kind(), "readonlyIsolatedMount");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: mount /work/app is readonly but isolated (worktree); a private checkout exists for the agent to write in: remove readonly, or set isolation = \"shared\" for a read-only view of the host folder",
            ws.path.display()
        )
    );
}

/// A repository whose `main` and `side` both changed `f`, so replaying one on
/// the other stops with a conflict.
fn conflicting_repo(env: &TestEnv, name: &str) -> PathBuf {
    let repo = env.new_repo(name);
    env.commit_file(&repo, "f", "base\n", "base");
    env.git(&repo, &["switch", "-q", "-c", "side"]);
    env.commit_file(&repo, "f", "side\n", "side");
    env.git(&repo, &["switch", "-q", "main"]);
    env.commit_file(&repo, "f", "main\n", "main");
    repo
}

#[test]
fn rule_host_repo_in_the_middle_of_a_rebase_merge_or_cherry_pick_is_refused_at_launch() {
    let env = TestEnv::new();
    let cases: [(&str, &[&str], &str, &str); 3] = [
        (
            "rebase",
            &["rebase", "side"],
            "rebase",
            "git rebase --continue, or git rebase --abort",
        ),
        (
            "merge",
            &["merge", "--no-edit", "side"],
            "merge",
            "git commit, or git merge --abort",
        ),
        (
            "pick",
            &["cherry-pick", "side"],
            "cherry-pick",
            "git cherry-pick --continue, or git cherry-pick --abort",
        ),
    ];
    for (name, args, operation, commands) in cases {
        let repo = conflicting_repo(&env, name);
        let mut ws = ws_in(&env, name);
        ws.mounts = vec![isolated(&repo, "/work/app", Isolation::Worktree)];
        ws.validate_for_launch().expect("clean repo launches");
        let out = env.git_output(&repo, args);
        assert!(
            !out.status.success(),
            "git {args:?} should stop on a conflict"
        );
        // Static validation does not look at repository state...
        ws.validate().expect("still a valid file");
        // ...launch does.
        let err = match ws.validate_for_launch() {
            Err(e) => e,
            Ok(()) => panic!("{name}: launch should be refused"),
        };
        assert_eq!(err.kind(), "hostRepoBusy");
        assert_eq!(
            err.to_string(),
            format!(
                "{}: mount /work/app: the host repository {} is in the middle of a {operation}; finish or abort it first ({commands}), then launch again",
                ws.path.display(),
                repo.display()
            )
        );
        // A shared mount of that repository root is refused too.
        ws.mounts = vec![Mount::new(&repo, "/work/app")];
        assert_eq!(
            ws.validate_for_launch().map_err(|e| e.kind().as_str()),
            Err("hostRepoBusy")
        );
    }
}

// ------------------------------------------------------------ CLI edits

fn req() -> EditRequest {
    EditRequest::default()
}

#[test]
fn mount_args_parse_src_dst_and_ro() {
    let cwd = Path::new("/home/me/src");
    let home = Some(Path::new("/home/me"));
    let p = |s: &str| MountArg::parse(s, cwd, home);
    assert_eq!(
        p("app"),
        Ok(MountArg {
            src: "/home/me/src/app".into(),
            dst: "/home/me/src/app".into(),
            readonly: false
        })
    );
    assert_eq!(
        p("~/cache:/cache:ro"),
        Ok(MountArg {
            src: "/home/me/cache".into(),
            dst: "/cache".into(),
            readonly: true
        })
    );
    assert_eq!(
        p("/data:ro"),
        Ok(MountArg {
            src: "/data".into(),
            dst: "/data".into(),
            readonly: true
        })
    );
    assert_eq!(
        p("../lib:/work/lib/"),
        Ok(MountArg {
            src: "/home/me/lib".into(),
            dst: "/work/lib".into(),
            readonly: false
        })
    );
    let err = p("app:work").expect_err("relative dst");
    assert_eq!(
        err.to_string(),
        "--mount app:work: DST must be an absolute container path; use --mount SRC[:DST][:ro], e.g. --mount ~/src/app:/work/app"
    );
    assert!(p("a:/b:/c").is_err());
    assert!(p(":/b").is_err());
}

#[test]
fn create_writes_a_valid_file_and_refuses_an_existing_one() {
    let env = TestEnv::new();
    let app = env.new_repo("app");
    let cache = env.path().join("cache");
    std::fs::create_dir_all(&cache).expect("cache");
    let store = store(&env);
    let mut ws = store.new_workspace("web").expect("new");
    let request = EditRequest {
        mounts: vec!["app:/work/app".into(), "cache:/cache:ro".into()],
        // Order on the command line does not matter: the policy is accepted
        // because the same command makes the mount isolated.
        source_branch: vec!["/work/app=named:origin/release".into()],
        isolation: vec!["/work/app=clone".into()],
        agent: Some("claude_code".into()),
        sandbox: Some("docker".into()),
        image: Some("slipway-agent:latest".into()),
        workdir: Some("/work/app".into()),
        ..req()
    };
    edit::apply(&mut ws, &request, env.path(), None).expect("applies");
    ws.save().expect("saves");
    similar_asserts::assert_eq!(
        std::fs::read_to_string(&ws.path).expect("file"),
        format!(
            r#"version = 2
workdir = "/work/app"
agent = "claude-code"
sandbox = "docker"
image = "slipway-agent:latest"

[[mounts]]
src = "{}"
dst = "/work/app"
isolation = "clone"
source_branch_policy = "named"
source_branch = "origin/release"

[[mounts]]
src = "{}"
dst = "/cache"
readonly = true
isolation = "shared"
"#,
            app.display(),
            cache.display()
        )
    );
    let loaded = store.load("web").expect("loads");
    assert_eq!(loaded.mounts, ws.mounts);
    assert_eq!(
        store
            .list()
            .expect("list")
            .iter()
            .map(|e| e.name.as_str())
            .collect::<Vec<_>>(),
        vec!["web"]
    );
    let err = store.new_workspace("web").expect_err("exists");
    assert_eq!(err.kind(), "workspaceExists");
    assert_eq!(
        err.to_string(),
        format!("workspace 'web' already exists ({})", ws.path.display())
    );
    // What to do is a hint each edge words: the command line names its commands.
    assert_eq!(
        slipway_core::error::Failure::hints(&err),
        vec![slipway_core::error::Hint::ChangeWorkspace { name: "web".into() }]
    );
}

#[test]
fn an_unknown_dst_is_an_error() {
    let env = TestEnv::new();
    let mut ws = store(&env).new_workspace("u").expect("new");
    let request = EditRequest {
        mounts: vec![format!("{}:/work/app", env.path().display())],
        isolation: vec!["/work/ap=worktree".into()],
        ..req()
    };
    let err = edit::apply(&mut ws, &request, env.path(), None).expect_err("unknown dst");
    assert_eq!(err.kind(), "unknownMount");
    assert_eq!(
        err.to_string(),
        "--mount-isolation /work/ap=worktree: no mount has dst /work/ap; the mounts are: /work/app"
    );
    let mut ws = store(&env).new_workspace("u").expect("new");
    let request = EditRequest {
        source_branch: vec!["/x=default".into()],
        ..req()
    };
    let err = edit::apply(&mut ws, &request, env.path(), None).expect_err("unknown dst");
    assert_eq!(
        err.to_string(),
        "--mount-source-branch /x=default: no mount has dst /x; the mounts are: (none yet; add one with --mount SRC:DST)"
    );
}

#[test]
fn a_policy_on_a_shared_mount_needs_the_same_command_to_isolate_it() {
    let env = TestEnv::new();
    let app = env.new_repo("app");
    let store = store(&env);
    let mut ws = store.new_workspace("s").expect("new");
    let request = EditRequest {
        mounts: vec![format!("{}:/work/app", app.display())],
        source_branch: vec!["/work/app=default".into()],
        ..req()
    };
    let err = edit::apply(&mut ws, &request, env.path(), None).expect_err("shared");
    assert_eq!(
        err,
        EditError::PolicyOnSharedMount {
            arg: "/work/app=default".into(),
            dst: "/work/app".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "--mount-source-branch /work/app=default: mount /work/app is shared, and a shared mount always shows what the host has checked out; make it isolated in the same command with --mount-isolation /work/app=worktree (or clone)"
    );
    // host-head is what a shared mount shows anyway.
    let mut ws = store.new_workspace("s").expect("new");
    let request = EditRequest {
        mounts: vec![format!("{}:/work/app", app.display())],
        source_branch: vec!["/work/app=host-head".into()],
        ..req()
    };
    edit::apply(&mut ws, &request, env.path(), None).expect("host-head on shared");
    ws.save().expect("saves");

    // Once isolated (in the file), a later edit may set a policy alone...
    let mut ws = store.load("s").expect("load");
    let iso = EditRequest {
        isolation: vec!["/work/app=worktree".into()],
        ..req()
    };
    edit::apply(&mut ws, &iso, env.path(), None).expect("isolate");
    ws.save().expect("saves");
    let mut ws = store.load("s").expect("load");
    let pol = EditRequest {
        source_branch: vec!["/work/app=current-branch".into()],
        ..req()
    };
    edit::apply(&mut ws, &pol, env.path(), None).expect("policy on isolated");
    ws.save().expect("saves");
    // ...but making it shared again needs the policy reset in the same command.
    let mut ws = store.load("s").expect("load");
    let back = EditRequest {
        isolation: vec!["/work/app=shared".into()],
        ..req()
    };
    let err = edit::apply(&mut ws, &back, env.path(), None).expect_err("policy left");
    assert_eq!(
        err.to_string(),
        "--mount-isolation /work/app=shared: mount /work/app starts from source branch policy current_branch, which only an isolated mount can have; add --mount-source-branch /work/app=host-head to the same command, or keep it isolated"
    );
    let mut ws = store.load("s").expect("load");
    let back = EditRequest {
        isolation: vec!["/work/app=shared".into()],
        source_branch: vec!["/work/app=host-head".into()],
        ..req()
    };
    edit::apply(&mut ws, &back, env.path(), None).expect("both at once");
    ws.save().expect("saves");
    let ws = store.load("s").expect("load");
    assert_eq!(ws.mounts[0].isolation, Isolation::Shared);
    assert_eq!(ws.mounts[0].policy, SourcePolicy::HostHead);
}

#[test]
fn bad_assignments_and_names_are_errors() {
    let env = TestEnv::new();
    let mut ws = store(&env).new_workspace("b").expect("new");
    let base = EditRequest {
        mounts: vec![format!("{}:/w", env.path().display())],
        ..req()
    };
    let cases: Vec<(EditRequest, &str)> = vec![
        (
            EditRequest {
                isolation: vec!["/w".into()],
                ..base.clone()
            },
            "--mount-isolation /w: expected DST=VALUE, e.g. --mount-isolation /work/app=worktree",
        ),
        (
            EditRequest {
                isolation: vec!["/w=private".into()],
                ..base.clone()
            },
            "--mount-isolation /w=private: unknown isolation 'private'; use shared, worktree or clone",
        ),
        (
            EditRequest {
                isolation: vec!["/w=worktree".into()],
                source_branch: vec!["/w=latest".into()],
                ..base.clone()
            },
            "--mount-source-branch /w=latest: unknown source branch policy 'latest'; use host-head, current-branch, default, ask or named:REF",
        ),
        (
            EditRequest {
                isolation: vec!["/w=worktree".into()],
                source_branch: vec!["/w=named".into()],
                ..base.clone()
            },
            "--mount-source-branch /w=named: the named policy needs a branch: use /w=named:BRANCH, e.g. /w=named:origin/main",
        ),
        (
            EditRequest {
                sandbox: Some("vm".into()),
                ..base.clone()
            },
            "--sandbox vm: unknown; use none, docker or docker-isolated",
        ),
    ];
    for (request, expected) in cases {
        let err = edit::apply(&mut ws, &request, env.path(), None).expect_err(expected);
        assert_eq!(err.to_string(), expected);
    }
    let err = store(&env).path_of("../evil").expect_err("bad name");
    assert_eq!(err.kind(), "invalidWorkspaceName");
}

#[test]
fn edit_keeps_comments_order_and_unknown_keys_and_migrates() {
    let env = TestEnv::new();
    let app = env.new_repo("app");
    let docs = env.new_repo("docs");
    let store = store(&env);
    let path = store.path_of("mine").expect("path");
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    let before = format!(
        r#"# Hand-written, version 1.
version = 1
team = "platform"   # kept

[[mounts]]
# the app
src = "{app}"
dst = "/work/app"
isolated = true # private
cache_size = 3

[[mounts]]
src = "{docs}"   # the docs
dst = "/work/docs"
"#,
        app = app.display(),
        docs = docs.display()
    );
    std::fs::write(&path, &before).expect("write");
    let mut ws = store.load("mine").expect("load");
    assert_eq!(ws.migrated_from, Some(1));
    let request = EditRequest {
        source_branch: vec!["/work/app=default".into()],
        isolation: vec!["/work/docs=clone".into()],
        agent: Some("pi".into()),
        ..req()
    };
    edit::apply(&mut ws, &request, env.path(), None).expect("applies");
    ws.save().expect("saves");
    similar_asserts::assert_eq!(
        std::fs::read_to_string(&path).expect("file"),
        format!(
            r#"# Hand-written, version 1.
version = 2
team = "platform"   # kept
agent = "pi"

[[mounts]]
# the app
src = "{app}"
dst = "/work/app"
isolation = "worktree" # private
cache_size = 3
source_branch_policy = "default"

[[mounts]]
src = "{docs}"   # the docs
dst = "/work/docs"
isolation = "clone"
"#,
            app = app.display(),
            docs = docs.display()
        )
    );
    // Removing a mount keeps the others' comments.
    let mut ws = store.load("mine").expect("load");
    let rm = EditRequest {
        remove_mounts: vec!["/work/docs".into()],
        ..req()
    };
    edit::apply(&mut ws, &rm, env.path(), None).expect("applies");
    ws.save().expect("saves");
    let text = std::fs::read_to_string(&path).expect("file");
    assert!(text.contains("# the app\n") && text.contains("cache_size = 3"));
    assert!(!text.contains("/work/docs"));
}

#[test]
fn nothing_is_written_when_the_result_is_invalid() {
    let env = TestEnv::new();
    let app = env.new_repo("app");
    let store = store(&env);
    // create: nothing at all.
    let mut ws = store.new_workspace("bad").expect("new");
    let request = EditRequest {
        mounts: vec![format!("{}:/work/app:ro", app.display())],
        isolation: vec!["/work/app=worktree".into()],
        ..req()
    };
    edit::apply(&mut ws, &request, env.path(), None).expect("applies");
    let err = ws.save().expect_err("read-only isolated");
    assert_eq!(err.kind(), "readonlyIsolatedMount");
    assert!(!ws.path.exists());
    assert!(
        std::fs::read_dir(store.dir())
            .map(|d| d.count())
            .unwrap_or(0)
            == 0,
        "no temp file left behind"
    );
    // edit: the old bytes stay.
    let mut ws = store.new_workspace("good").expect("new");
    edit::apply(
        &mut ws,
        &EditRequest {
            mounts: vec![format!("{}:/work/app", app.display())],
            ..req()
        },
        env.path(),
        None,
    )
    .expect("applies");
    ws.save().expect("saves");
    let saved = std::fs::read(&ws.path).expect("file");
    let mut ws = store.load("good").expect("load");
    edit::apply(
        &mut ws,
        &EditRequest {
            mounts: vec![format!(
                "{}:/elsewhere",
                env.path().join("missing").display()
            )],
            workdir: Some("/nowhere".into()),
            ..req()
        },
        env.path(),
        None,
    )
    .expect("applies");
    assert_eq!(ws.save().map_err(|e| e.kind().as_str()), Err("srcMissing"));
    assert_eq!(std::fs::read(&ws.path).expect("file"), saved);
}

#[test]
fn list_show_and_rm() {
    let env = TestEnv::new();
    let store = store(&env);
    assert!(store.list().expect("missing dir is empty").is_empty());
    std::fs::create_dir_all(store.dir()).expect("dir");
    for name in ["zeta", "alpha", "mid.dle"] {
        std::fs::write(
            store.dir().join(format!("{name}.toml")),
            "version = 2\n[[mounts]]\nsrc = \"/\"\ndst = \"/host\"\n",
        )
        .expect("write");
    }
    std::fs::write(store.dir().join("notes.txt"), "x").expect("write");
    std::fs::write(store.dir().join(".alpha.toml.1234.tmp"), "x").expect("write");
    let names: Vec<String> = store
        .list()
        .expect("list")
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, vec!["alpha", "mid.dle", "zeta"]);
    let ws = store.load("alpha").expect("load");
    assert_eq!(ws.name.as_deref(), Some("alpha"));
    let json = serde_json::to_value(&ws).expect("json");
    assert_eq!(json["mounts"][0]["source"]["policy"], "host_head");
    assert_eq!(json["mounts"][0]["isolation"], "shared");
    store.remove("alpha").expect("rm");
    let err = store.remove("alpha").expect_err("gone");
    assert_eq!(err.kind(), "workspaceNotFound");
    let err = store.load("alpha").expect_err("gone");
    assert_eq!(
        err.to_string(),
        format!(
            "no workspace named 'alpha' ({} does not exist)",
            store.dir().join("alpha.toml").display()
        )
    );
    assert_eq!(
        slipway_core::error::Failure::hints(&err),
        vec![slipway_core::error::Hint::CreateWorkspace {
            name: "alpha".into()
        }]
    );
}

#[test]
fn ask_mounts_are_listed_in_mount_order() {
    let path = Path::new("/cfg/slipway/workspaces/ask.toml");
    let ws = parse_ok(
        "version = 2\n[[mounts]]\nsrc = \"/a\"\nisolation = \"worktree\"\nsource_branch_policy = \"ask\"\n[[mounts]]\nsrc = \"/b\"\n[[mounts]]\nsrc = \"/c\"\nisolation = \"clone\"\nsource_branch_policy = \"ask\"\n",
        path,
    );
    let asks: Vec<String> = ws.ask_mounts().iter().map(|m| m.label()).collect();
    assert_eq!(asks, vec!["/a", "/c"]);
    assert_eq!(ws.effective_workdir(), Some(Path::new("/a")));
}

#[test]
fn each_edge_words_what_to_do_about_a_missing_workspace_in_its_own_terms() {
    let env = TestEnv::new();
    let repo = env.new_repo("repo");
    let (_, err) = env.slipway_fail(&repo, &["workspace", "show", "nope"]);
    assert_eq!(err["kind"], "workspaceNotFound");
    assert!(
        err["message"]
            .as_str()
            .expect("message")
            .ends_with("create it with `slipway workspace create nope --mount SRC:DST`"),
        "{err}"
    );
    let mut lsp = common::lsp::Lsp::start(&env, Some(&repo), false);
    let answer = lsp
        .execute(
            "slipway.run",
            serde_json::json!({"root": repo, "workspace": "nope", "agent": {"type": "command", "command": ["true"]}}),
        )
        .expect_err("no such workspace");
    let message = answer["message"].as_str().expect("message");
    assert_eq!(answer["data"]["kind"], "workspaceNotFound", "{answer}");
    assert!(
        !message.contains("slipway workspace create"),
        "no command-line words in the sidecar: {message}"
    );
    assert!(message.contains("create it first"), "{message}");
}
