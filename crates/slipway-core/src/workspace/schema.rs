//! The current schema (version 2): reading typed content out of a
//! `toml_edit` document, and writing changed values back into it so that
//! comments, order and unknown keys survive.
//!
//! ```toml
//! version = 2
//! workdir = "/work/app"          # default: the first mount's dst
//! agent = "claude-code"          # command, claude-code, codex, opencode, pi, cursor, copilot
//! sandbox = "docker"             # none, docker, docker-isolated
//! image = "slipway-agent:latest"
//! strategy = "branch"            # head, merge-to-head, branch
//! source = "default"             # where new branches start: host_head (default), current_branch, default, ask, named:REF
//! copy_to_worktree = [".env"]
//! max_tokens = 200000            # budgets: the agent is stopped when one is reached
//! max_cost = 2.50                # US dollars, where the agent reports its cost
//! max_duration = "30m"           # seconds, or 90s, 30m, 2h
//!
//! [hooks.host]
//! on_worktree_ready = ["npm ci"]
//! [hooks.sandbox]
//! on_sandbox_ready = ["make setup"]
//!
//! [[mounts]]
//! src = "/home/me/app"
//! dst = "/work/app"              # default: src
//! readonly = false
//! isolation = "worktree"         # shared (default), worktree, clone
//! source_branch_policy = "named" # host_head (default), current_branch, default, named, ask
//! source_branch = "origin/release/2026-06"
//! ```

use std::path::{Path, PathBuf};

use toml_edit::{Array, ArrayOfTables, DocumentMut, Item, Table, TableLike, Value};

use super::items::{TOP, mount_tables, raw_label, wrong_type};
use super::validate::ValidationError;
use super::{
    HookDefaults, Isolation, Mount, RunDefaults, SandboxKind, StrategyKind, Workspace, parse_agent,
};
use crate::git::policy::SourcePolicy;

/// Top-level keys of the current schema.
const ROOT_KEYS: &[&str] = &[
    "version",
    "workdir",
    "mounts",
    "agent",
    "sandbox",
    "image",
    "strategy",
    "source",
    "hooks",
    "copy_to_worktree",
    "max_tokens",
    "max_cost",
    "max_duration",
];
/// Keys of one mount.
const MOUNT_KEYS: &[&str] = &[
    "src",
    "dst",
    "readonly",
    "isolation",
    "source_branch_policy",
    "source_branch",
];

/// The typed content of a file.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Content {
    pub workdir: Option<PathBuf>,
    pub mounts: Vec<Mount>,
    pub defaults: RunDefaults,
}

/// Where in the file a key is, for messages: `top level`, `mount /work/app`, `[hooks.host]`.
fn mount_at(label: &str) -> String {
    format!("mount {label}")
}

fn get_str(
    table: &dyn TableLike,
    key: &str,
    file: &Path,
    at: &str,
) -> Result<Option<String>, ValidationError> {
    match table.get(key) {
        None => Ok(None),
        Some(item) => match item.as_str() {
            Some(s) => Ok(Some(s.to_owned())),
            None => Err(wrong_type(file, at, key, "a string", item)),
        },
    }
}

fn get_bool(
    table: &dyn TableLike,
    key: &str,
    file: &Path,
    at: &str,
) -> Result<Option<bool>, ValidationError> {
    match table.get(key) {
        None => Ok(None),
        Some(item) => match item.as_bool() {
            Some(b) => Ok(Some(b)),
            None => Err(wrong_type(file, at, key, "true or false", item)),
        },
    }
}

fn get_str_list(
    table: &dyn TableLike,
    key: &str,
    file: &Path,
    at: &str,
) -> Result<Vec<String>, ValidationError> {
    let Some(item) = table.get(key) else {
        return Ok(Vec::new());
    };
    let expected = "a list of strings";
    let Some(array) = item.as_array() else {
        return Err(wrong_type(file, at, key, expected, item));
    };
    array
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| wrong_type(file, at, key, expected, &Item::Value(v.clone())))
        })
        .collect()
}

fn unknown_value(file: &Path, at: &str, key: &str, value: &str, expected: &str) -> ValidationError {
    ValidationError::UnknownValue {
        file: file.to_path_buf(),
        at: at.to_owned(),
        key: key.to_owned(),
        value: value.to_owned(),
        expected: expected.to_owned(),
    }
}

fn resolve(path: String, base: Option<&Path>) -> PathBuf {
    let p = PathBuf::from(path);
    match base {
        Some(b) if p.is_relative() => super::normalize(&b.join(p)),
        _ => p,
    }
}

/// Reads one mount table.
pub(crate) fn read_mount(
    table: &dyn TableLike,
    index: usize,
    file: &Path,
    base: Option<&Path>,
) -> Result<Mount, ValidationError> {
    let label = raw_label(table, index);
    let at = mount_at(&label);
    let dst = get_str(table, "dst", file, &at)?;
    let src = get_str(table, "src", file, &at)?.ok_or_else(|| ValidationError::MissingSrc {
        file: file.to_path_buf(),
        mount: label.clone(),
    })?;
    let src = resolve(src, base);
    let dst = dst.map(PathBuf::from).unwrap_or_else(|| src.clone());
    let readonly = get_bool(table, "readonly", file, &at)?.unwrap_or(false);
    let isolation = match get_str(table, "isolation", file, &at)? {
        None => Isolation::Shared,
        Some(s) => s
            .parse::<Isolation>()
            .map_err(|_| unknown_value(file, &at, "isolation", &s, "shared, worktree or clone"))?,
    };
    let policy_name = get_str(table, "source_branch_policy", file, &at)?;
    let branch = get_str(table, "source_branch", file, &at)?;
    let policy = read_policy(policy_name.as_deref(), branch, file, &label, &at)?;
    Ok(Mount {
        src,
        dst,
        readonly,
        isolation,
        policy,
    })
}

fn read_policy(
    name: Option<&str>,
    branch: Option<String>,
    file: &Path,
    label: &str,
    at: &str,
) -> Result<SourcePolicy, ValidationError> {
    let policy = match name.map(|n| (n, n.replace('-', "_"))) {
        None => None,
        Some((_, n)) if n == "host_head" => Some(SourcePolicy::HostHead),
        Some((_, n)) if n == "current_branch" => Some(SourcePolicy::CurrentBranch),
        Some((_, n)) if n == "default" => Some(SourcePolicy::Default),
        Some((_, n)) if n == "ask" => Some(SourcePolicy::Ask),
        Some((_, n)) if n == "named" => {
            return match branch {
                Some(b) if !b.trim().is_empty() => Ok(SourcePolicy::Named { reference: b }),
                _ => Err(ValidationError::NamedWithoutSourceBranch {
                    file: file.to_path_buf(),
                    mount: label.to_owned(),
                }),
            };
        }
        Some((raw, _)) => {
            return Err(unknown_value(
                file,
                at,
                "source_branch_policy",
                raw,
                "host_head, current_branch, default, named or ask",
            ));
        }
    };
    if let Some(branch) = branch {
        return Err(ValidationError::SourceBranchWithoutNamed {
            file: file.to_path_buf(),
            mount: label.to_owned(),
            policy: policy
                .as_ref()
                .map(|p| p.name().to_owned())
                .unwrap_or_else(|| "host_head (the default)".to_owned()),
            branch,
        });
    }
    Ok(policy.unwrap_or(SourcePolicy::HostHead))
}

/// Reads the typed content of a (current-version) document.
pub(crate) fn read(
    doc: &DocumentMut,
    file: &Path,
    base: Option<&Path>,
) -> Result<Content, ValidationError> {
    let root = doc.as_table();
    let workdir = get_str(root, "workdir", file, TOP)?.map(PathBuf::from);
    let mut mounts = Vec::new();
    if let Some(item) = root.get("mounts") {
        for (i, table) in mount_tables(item, file)?.into_iter().enumerate() {
            mounts.push(read_mount(table, i, file, base)?);
        }
    }
    let agent = match get_str(root, "agent", file, TOP)? {
        None => None,
        Some(a) => Some(
            parse_agent(&a)
                .ok_or_else(|| {
                    unknown_value(
                        file,
                        TOP,
                        "agent",
                        &a,
                        "command, claude-code, codex, opencode, pi, cursor or copilot",
                    )
                })?
                .to_owned(),
        ),
    };
    let sandbox = match get_str(root, "sandbox", file, TOP)? {
        None => None,
        Some(s) => Some(SandboxKind::parse(&s).ok_or_else(|| {
            unknown_value(file, TOP, "sandbox", &s, "none, docker or docker-isolated")
        })?),
    };
    let image = get_str(root, "image", file, TOP)?;
    let strategy = match get_str(root, "strategy", file, TOP)? {
        None => None,
        Some(s) => Some(StrategyKind::parse(&s).ok_or_else(|| {
            unknown_value(file, TOP, "strategy", &s, "head, merge-to-head or branch")
        })?),
    };
    let source = match get_str(root, "source", file, TOP)? {
        None => None,
        Some(s) => Some(s.parse::<SourcePolicy>().map_err(|_| {
            unknown_value(
                file,
                TOP,
                "source",
                &s,
                "host_head, current_branch, default, ask or named:REF",
            )
        })?),
    };
    let copy_to_worktree = get_str_list(root, "copy_to_worktree", file, TOP)?;
    let hooks = read_hooks(root, file)?;
    let budgets = read_budgets(root, file)?;
    Ok(Content {
        workdir,
        mounts,
        defaults: RunDefaults {
            agent,
            sandbox,
            image,
            strategy,
            source,
            hooks,
            copy_to_worktree,
            budgets,
        },
    })
}

fn read_budgets(root: &Table, file: &Path) -> Result<crate::run::Budgets, ValidationError> {
    let max_tokens = match root.get("max_tokens") {
        None => None,
        Some(item) => Some(
            item.as_integer()
                .and_then(|n| u64::try_from(n).ok())
                .filter(|n| *n > 0)
                .ok_or_else(|| wrong_type(file, TOP, "max_tokens", "a positive integer", item))?,
        ),
    };
    let max_cost_usd = match root.get("max_cost") {
        None => None,
        Some(item) => Some(
            item.as_float()
                .or_else(|| item.as_integer().map(|n| n as f64))
                .filter(|c| c.is_finite() && *c > 0.0)
                .ok_or_else(|| {
                    wrong_type(
                        file,
                        TOP,
                        "max_cost",
                        "a positive number of US dollars",
                        item,
                    )
                })?,
        ),
    };
    let duration = "seconds, or a string like \"90s\", \"30m\" or \"2h\"";
    let max_duration_secs = match root.get("max_duration") {
        None => None,
        Some(item) => Some(match (item.as_integer(), item.as_str()) {
            (Some(n), _) => u64::try_from(n)
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| wrong_type(file, TOP, "max_duration", duration, item))?,
            (None, Some(text)) => crate::run::parse_duration(text)
                .map_err(|_| unknown_value(file, TOP, "max_duration", text, duration))?,
            (None, None) => return Err(wrong_type(file, TOP, "max_duration", duration, item)),
        }),
    };
    Ok(crate::run::Budgets {
        max_tokens,
        max_cost_usd,
        max_duration_secs,
    })
}

fn sub_table<'a>(
    table: &'a dyn TableLike,
    key: &str,
    file: &Path,
    at: &str,
) -> Result<Option<&'a dyn TableLike>, ValidationError> {
    match table.get(key) {
        None => Ok(None),
        Some(item) => item
            .as_table_like()
            .map(Some)
            .ok_or_else(|| wrong_type(file, at, key, "a table", item)),
    }
}

fn read_hooks(root: &Table, file: &Path) -> Result<HookDefaults, ValidationError> {
    let mut hooks = HookDefaults::default();
    let Some(table) = sub_table(root, "hooks", file, TOP)? else {
        return Ok(hooks);
    };
    if let Some(host) = sub_table(table, "host", file, "[hooks]")? {
        hooks.host_on_worktree_ready =
            get_str_list(host, "on_worktree_ready", file, "[hooks.host]")?;
    }
    if let Some(sandbox) = sub_table(table, "sandbox", file, "[hooks]")? {
        hooks.sandbox_on_sandbox_ready =
            get_str_list(sandbox, "on_sandbox_ready", file, "[hooks.sandbox]")?;
    }
    Ok(hooks)
}

/// Keys the schema does not know, as dotted paths.
pub(crate) fn unknown_keys(doc: &DocumentMut) -> Vec<String> {
    let mut out = Vec::new();
    let root = doc.as_table();
    for (key, _) in root.iter() {
        if !ROOT_KEYS.contains(&key) {
            out.push(key.to_owned());
        }
    }
    if let Some(item) = root.get("mounts")
        && let Ok(tables) = mount_tables(item, Path::new(""))
    {
        for (i, table) in tables.into_iter().enumerate() {
            for (key, _) in table.iter() {
                if !MOUNT_KEYS.contains(&key) {
                    out.push(format!("mounts[{}].{key}", i + 1));
                }
            }
        }
    }
    if let Some(hooks) = root.get("hooks").and_then(Item::as_table_like) {
        for (key, item) in hooks.iter() {
            let known = match key {
                "host" => Some("on_worktree_ready"),
                "sandbox" => Some("on_sandbox_ready"),
                _ => None,
            };
            match (known, item.as_table_like()) {
                (Some(inner), Some(t)) => {
                    for (k, _) in t.iter() {
                        if k != inner {
                            out.push(format!("hooks.{key}.{k}"));
                        }
                    }
                }
                (None, _) => out.push(format!("hooks.{key}")),
                _ => {}
            }
        }
    }
    out
}

// ---------------------------------------------------------------- writing

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Sets `key` to `value`, keeping the old value's decoration (spaces, trailing
/// comment) when the key exists, appending it otherwise.
fn set(table: &mut dyn TableLike, key: &str, value: Value) {
    let mut value = value;
    if let Some(item) = table.get_mut(key) {
        if let Some(old) = item.as_value() {
            *value.decor_mut() = old.decor().clone();
        }
        *item = Item::Value(value);
    } else {
        table.insert(key, Item::Value(value));
    }
}

fn set_opt_str(table: &mut dyn TableLike, key: &str, old: Option<&str>, new: Option<&str>) {
    if old == new {
        return;
    }
    match new {
        Some(v) => set(table, key, Value::from(v)),
        None => {
            table.remove(key);
        }
    }
}

fn str_array(items: &[String]) -> Value {
    Value::Array(items.iter().map(String::as_str).collect::<Array>())
}

fn set_list(table: &mut dyn TableLike, key: &str, old: &[String], new: &[String]) {
    if old == new {
        return;
    }
    if new.is_empty() {
        table.remove(key);
    } else {
        set(table, key, str_array(new));
    }
}

/// Writes `ws` into `doc`, touching only what differs from what `doc` holds.
pub(crate) fn write(doc: &mut DocumentMut, ws: &Workspace, base: Option<&Path>) {
    let old = read(doc, Path::new(""), base).unwrap_or_default();
    let root = doc.as_table_mut();
    let version = i64::from(super::CURRENT_VERSION);
    if root.get("version").and_then(Item::as_integer) != Some(version) {
        set(root, "version", Value::from(version));
    }
    set_opt_str(
        root,
        "workdir",
        old.workdir.as_deref().map(path_str).as_deref(),
        ws.workdir.as_deref().map(path_str).as_deref(),
    );
    let (od, nd) = (&old.defaults, &ws.defaults);
    set_opt_str(root, "agent", od.agent.as_deref(), nd.agent.as_deref());
    set_opt_str(
        root,
        "sandbox",
        od.sandbox.map(SandboxKind::name),
        nd.sandbox.map(SandboxKind::name),
    );
    set_opt_str(root, "image", od.image.as_deref(), nd.image.as_deref());
    set_opt_str(
        root,
        "strategy",
        od.strategy.map(StrategyKind::name),
        nd.strategy.map(StrategyKind::name),
    );
    set_opt_str(
        root,
        "source",
        od.source.as_ref().map(SourcePolicy::to_string).as_deref(),
        nd.source.as_ref().map(SourcePolicy::to_string).as_deref(),
    );
    set_list(
        root,
        "copy_to_worktree",
        &od.copy_to_worktree,
        &nd.copy_to_worktree,
    );
    write_hook(
        root,
        "host",
        "on_worktree_ready",
        &od.hooks.host_on_worktree_ready,
        &nd.hooks.host_on_worktree_ready,
    );
    write_hook(
        root,
        "sandbox",
        "on_sandbox_ready",
        &od.hooks.sandbox_on_sandbox_ready,
        &nd.hooks.sandbox_on_sandbox_ready,
    );
    if old.mounts != ws.mounts {
        write_mounts(root, &ws.mounts, base);
    }
}

fn write_hook(root: &mut Table, group: &str, key: &str, old: &[String], new: &[String]) {
    if old == new {
        return;
    }
    if !root.contains_key("hooks") {
        if new.is_empty() {
            return;
        }
        let mut hooks = Table::new();
        hooks.set_implicit(true);
        root.insert("hooks", Item::Table(hooks));
    }
    let Some(hooks) = root.get_mut("hooks").and_then(Item::as_table_like_mut) else {
        return;
    };
    if !hooks.contains_key(group) {
        if new.is_empty() {
            return;
        }
        hooks.insert(group, Item::Table(Table::new()));
    }
    let Some(inner) = hooks.get_mut(group).and_then(Item::as_table_like_mut) else {
        return;
    };
    set_list(inner, key, old, new);
    let inner_empty = inner.is_empty();
    if inner_empty {
        hooks.remove(group);
    }
    if hooks.is_empty() {
        root.remove("hooks");
    }
}

/// Rewrites the mounts: each typed mount takes the old table with the same
/// `dst` (keeping its comments and unknown keys), else a new table.
fn write_mounts(root: &mut Table, mounts: &[Mount], base: Option<&Path>) {
    let old_item = root.remove("mounts");
    let mut old_tables: Vec<Option<Table>> = Vec::new();
    match old_item {
        Some(Item::ArrayOfTables(aot)) => old_tables.extend(aot.into_iter().map(Some)),
        Some(Item::Value(Value::Array(array))) => {
            old_tables.extend(array.into_iter().filter_map(|v| match v {
                Value::InlineTable(t) => Some(Some(t.into_table())),
                _ => None,
            }))
        }
        _ => {}
    }
    let old_mounts: Vec<Option<Mount>> = old_tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            t.as_ref()
                .and_then(|t| read_mount(t, i, Path::new(""), base).ok())
        })
        .collect();
    let mut aot = ArrayOfTables::new();
    let mut last_position: Option<isize> = None;
    for mount in mounts {
        let found = old_mounts.iter().enumerate().position(|(i, m)| {
            old_tables[i].is_some()
                && m.as_ref()
                    .is_some_and(|m| super::normalize(&m.dst) == super::normalize(&mount.dst))
        });
        let (mut table, old) = match found {
            Some(i) => (
                old_tables[i].take().unwrap_or_default(),
                old_mounts[i].clone(),
            ),
            None => (Table::new(), None),
        };
        write_mount(&mut table, old.as_ref(), mount);
        // Keep the rendered order equal to the list order.
        match (table.position(), last_position) {
            (Some(p), Some(last)) if p < last => table.set_position(Some(last)),
            (Some(p), _) => last_position = Some(p),
            (None, _) => {}
        }
        aot.push(table);
    }
    if !aot.is_empty() {
        root.insert("mounts", Item::ArrayOfTables(aot));
    }
}

fn write_mount(table: &mut Table, old: Option<&Mount>, new: &Mount) {
    let fresh = old.is_none();
    let src = path_str(&new.src);
    let dst = path_str(&new.dst);
    if old.map(|o| &o.src) != Some(&new.src) {
        set(table, "src", Value::from(src.as_str()));
    }
    // A missing dst means "same as src": write it once src and dst differ.
    let dst_written = table.contains_key("dst");
    if old.map(|o| &o.dst) != Some(&new.dst) || (!dst_written && new.src != new.dst) {
        set(table, "dst", Value::from(dst.as_str()));
    }
    if old.map(|o| o.readonly) != Some(new.readonly) && (!fresh || new.readonly) {
        set(table, "readonly", Value::from(new.readonly));
    }
    if old.map(|o| o.isolation) != Some(new.isolation) {
        set(table, "isolation", Value::from(new.isolation.name()));
    }
    if old.map(|o| &o.policy) != Some(&new.policy) {
        let has_key = table.contains_key("source_branch_policy");
        if new.policy != SourcePolicy::HostHead || has_key {
            set(
                table,
                "source_branch_policy",
                Value::from(new.policy.name()),
            );
        }
        match &new.policy {
            SourcePolicy::Named { reference } => {
                set(table, "source_branch", Value::from(reference.as_str()))
            }
            _ => {
                table.remove("source_branch");
            }
        }
    }
}
