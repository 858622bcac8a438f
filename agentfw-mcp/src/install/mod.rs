//! `agentfw install` / `uninstall` as pure functions: current file contents in, new file
//! contents out (TR2).
//!
//! What each harness gets:
//!
//! | harness | MCP server | hooks | permission overlay |
//! |---|---|---|---|
//! | Claude Code | `~/.claude.json` `mcpServers` (user) or `.mcp.json` (project) | `~/.claude/settings.json` or `.claude/settings.json` `hooks` | the same settings file, `permissions.allow/ask/deny` |
//! | Codex | `~/.codex/config.toml` (or `.codex/config.toml`) `[mcp_servers.agentfw]`, `required`, `startup_timeout_sec = 60`, `approval_mode = "approve"` per tool | `~/.codex/hooks.json` | `~/.codex/rules/agentfw.rules` (command rules) |
//! | Cursor | `~/.cursor/mcp.json` `mcpServers` | `~/.cursor/hooks.json` | `~/.cursor/cli-config.json` (or `.cursor/cli.json`) `permissions.allow/deny` |
//! | Gemini CLI | `~/.gemini/settings.json` `mcpServers` | the same file, `hooks` | `~/.gemini/policies/agentfw.toml` |
//!
//! Project scope puts the same files under the project directory.
//!
//! The planner never overwrites what a person wrote without saying so: each [`FilePlan`]
//! lists the customisations it would replace (an agentfw entry that differs, a permission
//! rule in another list), so the command can ask first. Every change is recorded in a
//! [`Receipt`], and [`plan_uninstall`] undoes exactly those changes, putting back what
//! they replaced.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::harness::Harness;
use crate::hooks::Event;

mod codex;
mod json;
pub mod overlay;

pub(crate) use json::kind as json_kind;
use json::{JsonDoc, path};

/// Where the configuration goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// The person's own harness settings, for every project.
    User,
    /// This project's settings (checked into the repository, shared with its team).
    Project,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
        }
    }
}

/// What the plan depends on besides the files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Context {
    /// The absolute path of the `agentfw` binary the harness should run.
    pub exe: String,
    /// The person's home directory, where user-scope harness files live.
    pub home: PathBuf,
    /// The project directory, for project scope.
    pub project: PathBuf,
    /// agentfw's state directory when it is not the default: passed to the MCP server and
    /// the hooks, since some harnesses give their children only a few variables.
    pub agentfw_home: Option<String>,
}

impl Context {
    /// agentfw's home, which holds its trust file and configuration: `AGENTFW_HOME` as
    /// passed on, else the default the daemon uses.
    pub fn state(&self) -> String {
        self.agentfw_home.clone().unwrap_or_else(|| self.home.join(".local/share/agentfw").display().to_string())
    }
}

/// Why a plan cannot be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InstallError {
    #[error("cannot read `{path}`: {problem}; fix it by hand (or move it aside) and run again")]
    Parse { path: String, problem: String },
    #[error("{at} in `{path}` must be {want}, found {found}; fix it by hand and run again")]
    Shape { path: String, at: String, want: &'static str, found: &'static str },
}

/// One change made to a file, as recorded for uninstall.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Change {
    /// An empty object or list created at `at` to hold what follows.
    Created { at: Vec<String> },
    /// `key` of the object at `at` set to `value`; it was `previous` (or absent).
    Set { at: Vec<String>, key: String, value: Value, previous: Option<Value> },
    /// `value` appended to the list at `at`.
    Push { at: Vec<String>, value: Value },
    /// `value` removed from position `index` of the list at `at`, with the person's consent.
    Pull { at: Vec<String>, value: Value, index: usize },
    /// Codex's `[mcp_servers.agentfw]` written as the TOML text `written`; `previous` is
    /// the text of the table it replaced.
    CodexServer { written: String, previous: Option<String>, created_parent: bool },
    /// A file agentfw owns written whole; `previous` is what it replaced.
    Owned { content: String, previous: Option<String> },
    /// A setting of Codex's `config.toml` (`table` is `None` at the top) set to the TOML
    /// value `written`; `previous` is the value it replaced, if any.
    CodexSetting { table: Option<String>, key: String, written: String, previous: Option<String> },
}

/// The plan for one file.
#[derive(Clone, Debug, PartialEq)]
pub struct FilePlan {
    pub path: PathBuf,
    /// The contents now (`None`: no such file).
    pub before: Option<String>,
    /// The contents after (`None`: the file is removed).
    pub after: Option<String>,
    /// Customisations this plan replaces, one sentence each.
    pub customised: Vec<String>,
    pub changes: Vec<Change>,
}

impl FilePlan {
    pub fn changes_file(&self) -> bool {
        self.before != self.after
    }

    /// A unified diff of the change, empty if there is none.
    pub fn diff(&self) -> String {
        if !self.changes_file() {
            return String::new();
        }
        let name = self.path.display().to_string();
        let (old, new) = (self.before.as_deref().unwrap_or(""), self.after.as_deref().unwrap_or(""));
        let old_name = if self.before.is_some() { format!("a{name}") } else { "/dev/null".to_owned() };
        let new_name = if self.after.is_some() { format!("b{name}") } else { "/dev/null".to_owned() };
        similar::TextDiff::from_lines(old, new)
            .unified_diff()
            .context_radius(3)
            .header(&old_name, &new_name)
            .to_string()
    }
}

/// What install or uninstall would do.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub harness: Harness,
    pub scope: Scope,
    pub files: Vec<FilePlan>,
    /// What people should know: what the harness cannot do, what was left alone.
    pub notes: Vec<String>,
}

impl Plan {
    /// Whether applying the plan would change no file.
    pub fn is_noop(&self) -> bool {
        !self.files.iter().any(FilePlan::changes_file)
    }

    pub fn customised(&self) -> impl Iterator<Item = &str> {
        self.files.iter().flat_map(|f| f.customised.iter().map(String::as_str))
    }

    pub fn diff(&self) -> String {
        self.files.iter().map(FilePlan::diff).collect()
    }
}

/// What one install changed in one file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileReceipt {
    pub path: PathBuf,
    /// The file did not exist before install.
    pub created: bool,
    pub changes: Vec<Change>,
}

/// Everything installs for one harness and scope changed, kept in agentfw's state
/// directory so uninstall removes exactly that.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    pub version: u32,
    pub harness: String,
    pub scope: Scope,
    pub files: Vec<FileReceipt>,
}

impl Receipt {
    pub fn new(harness: Harness, scope: Scope) -> Self {
        Self { version: 1, harness: harness.as_str().to_owned(), scope, files: Vec::new() }
    }

    /// Adds the changes of an applied install plan.
    pub fn record(&mut self, plan: &Plan) {
        for file in plan.files.iter().filter(|f| f.changes_file()) {
            match self.files.iter_mut().find(|r| r.path == file.path) {
                Some(r) => r.changes.extend(file.changes.iter().cloned()),
                None => self.files.push(FileReceipt {
                    path: file.path.clone(),
                    created: file.before.is_none(),
                    changes: file.changes.clone(),
                }),
            }
        }
    }
}

/// The files a harness's configuration lives in, and what agentfw puts in each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// `mcpServers.agentfw` in a JSON file.
    McpJson,
    /// Claude Code's settings: hooks and permissions.
    ClaudeSettings,
    CodexConfig,
    /// A `hooks.json` (Codex, Cursor) or Gemini's settings (which also hold its server).
    Hooks,
    GeminiSettings,
    CursorPermissions,
    /// A file agentfw owns whole: Codex's rules, Gemini's policy.
    Owned,
}

/// The files install touches for `harness` at `scope`, in the order they are shown.
fn targets(harness: Harness, scope: Scope, ctx: &Context) -> Vec<(PathBuf, Role)> {
    let base = match scope {
        Scope::User => ctx.home.clone(),
        Scope::Project => ctx.project.clone(),
    };
    let p = |rel: &str| base.join(rel);
    match (harness, scope) {
        (Harness::Claude, Scope::User) => {
            vec![(p(".claude.json"), Role::McpJson), (p(".claude/settings.json"), Role::ClaudeSettings)]
        }
        (Harness::Claude, Scope::Project) => {
            vec![(p(".mcp.json"), Role::McpJson), (p(".claude/settings.json"), Role::ClaudeSettings)]
        }
        (Harness::Codex, _) => vec![
            (p(".codex/config.toml"), Role::CodexConfig),
            (p(".codex/hooks.json"), Role::Hooks),
            (p(".codex/rules/agentfw.rules"), Role::Owned),
        ],
        (Harness::Cursor, _) => vec![
            (p(".cursor/mcp.json"), Role::McpJson),
            (p(".cursor/hooks.json"), Role::Hooks),
            (
                p(if scope == Scope::User { ".cursor/cli-config.json" } else { ".cursor/cli.json" }),
                Role::CursorPermissions,
            ),
        ],
        (Harness::Gemini, _) => {
            vec![(p(".gemini/settings.json"), Role::GeminiSettings), (p(".gemini/policies/agentfw.toml"), Role::Owned)]
        }
    }
}

/// The paths whose contents [`plan_install`] needs.
pub fn install_paths(harness: Harness, scope: Scope, ctx: &Context) -> Vec<PathBuf> {
    targets(harness, scope, ctx).into_iter().map(|(p, _)| p).collect()
}

/// `s` as one word for `sh -c`.
pub fn shell_word(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:@%=,".contains(c)) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The command a hook runs.
pub fn hook_command(harness: Harness, event: Event, ctx: &Context) -> String {
    let env = ctx.agentfw_home.as_deref().map(|h| format!("AGENTFW_HOME={} ", shell_word(h))).unwrap_or_default();
    format!("{env}{} hook {harness} {}", shell_word(&ctx.exe), event.arg(harness).unwrap_or_default())
}

/// Whether `command` runs agentfw's hook for `harness`/`event` (from any install path).
fn is_agentfw_hook(command: &str, harness: Harness, event: Event) -> bool {
    let tail = format!(" hook {harness} {}", event.arg(harness).unwrap_or_default());
    command.strip_suffix(&tail).is_some_and(|program| program.trim_end_matches('\'').ends_with("agentfw"))
}

fn server_entry(harness: Harness, ctx: &Context) -> Value {
    let mut entry = serde_json::Map::new();
    if harness == Harness::Claude {
        entry.insert("type".into(), json!("stdio"));
    }
    entry.insert("command".into(), json!(ctx.exe));
    entry.insert("args".into(), json!(["mcp"]));
    match &ctx.agentfw_home {
        Some(home) => {
            entry.insert("env".into(), json!({"AGENTFW_HOME": home}));
        }
        None if harness == Harness::Claude => {
            entry.insert("env".into(), json!({}));
        }
        None => {}
    }
    Value::Object(entry)
}

/// The hooks agentfw adds to a `hooks` object, one list entry per event.
fn add_hooks(doc: &mut JsonDoc<'_>, harness: Harness, ctx: &Context) -> Result<(), InstallError> {
    for event in Event::hooked(harness) {
        let command = hook_command(harness, event, ctx);
        let native = event.native(harness).unwrap_or_default();
        let at = path(&["hooks", native]);
        let entry = match harness {
            Harness::Cursor => json!({"command": command}),
            _ => {
                let mut hook = json!({"type": "command", "command": command});
                if harness == Harness::Gemini
                    && let Value::Object(h) = &mut hook
                {
                    h.insert("name".into(), json!("agentfw"));
                }
                match event {
                    Event::AfterTool => json!({"matcher": ".*", "hooks": [hook]}),
                    _ => json!({"hooks": [hook]}),
                }
            }
        };
        let commands = |item: &Value| -> Vec<String> {
            let hooks = match item.get("hooks") {
                Some(Value::Array(list)) => list.iter().collect(),
                _ => vec![item],
            };
            hooks.iter().filter_map(|h| h.get("command").and_then(Value::as_str).map(str::to_owned)).collect()
        };
        let items = doc.list(&at)?.to_vec();
        if items.iter().any(|item| commands(item).contains(&command)) {
            continue;
        }
        for item in items.iter().filter(|item| commands(item).iter().any(|c| is_agentfw_hook(c, harness, event))) {
            let old = commands(item).into_iter().find(|c| is_agentfw_hook(c, harness, event)).unwrap_or_default();
            let why = format!(
                "`{}` already has an agentfw {native} hook that runs `{old}`; it will be replaced (uninstall puts it back)",
                doc.path
            );
            doc.pull(&at, item, why);
        }
        doc.push(&at, entry)?;
    }
    Ok(())
}

/// Legacy `Bash(cmd:*)` is the same rule as `Bash(cmd *)`.
fn same_rule(a: &str, b: &str) -> bool {
    a == b || a.replace(":*)", " *)") == b.replace(":*)", " *)")
}

fn add_permissions(
    doc: &mut JsonDoc<'_>,
    rules: &[(&'static str, String)],
    lists: &[&str],
) -> Result<(), InstallError> {
    for (list, rule) in rules {
        let at = path(&["permissions", list]);
        if doc.list(&at)?.iter().any(|v| v.as_str().is_some_and(|r| same_rule(r, rule))) {
            continue;
        }
        for other in lists.iter().filter(|l| *l != list) {
            let other_at = path(&["permissions", other]);
            let clashing: Vec<Value> = doc
                .list(&other_at)?
                .iter()
                .filter(|v| v.as_str().is_some_and(|r| same_rule(r, rule)))
                .cloned()
                .collect();
            for value in clashing {
                let why = format!(
                    "`{}` has `{}` in `permissions.{other}`; agentfw's overlay moves it to `permissions.{list}`",
                    doc.path,
                    value.as_str().unwrap_or_default()
                );
                doc.pull(&other_at, &value, why);
            }
        }
        doc.push(&at, Value::from(rule.as_str()))?;
    }
    Ok(())
}

fn plan_file(
    harness: Harness,
    role: Role,
    file: &Path,
    before: Option<&str>,
    ctx: &Context,
    installed: &[PathBuf],
) -> Result<FilePlan, InstallError> {
    let name = file.display().to_string();
    let (after, changes, customised) = match role {
        Role::CodexConfig => codex::install(&name, before, ctx)?,
        Role::Owned => {
            let content = match harness {
                Harness::Gemini => overlay::gemini_policy(),
                _ => overlay::codex_rules(),
            };
            let mut customised = Vec::new();
            if before.is_some_and(|b| b != content) {
                customised
                    .push(format!("`{name}` exists with other rules; it will be replaced (uninstall puts it back)"));
            }
            let change = Change::Owned { content: content.clone(), previous: before.map(str::to_owned) };
            let changes = if before == Some(content.as_str()) { Vec::new() } else { vec![change] };
            (Some(content), changes, customised)
        }
        _ => {
            let mut doc = JsonDoc::parse(&name, before)?;
            match role {
                Role::McpJson => doc.set(&path(&["mcpServers"]), "agentfw", server_entry(harness, ctx))?,
                Role::ClaudeSettings => {
                    add_hooks(&mut doc, harness, ctx)?;
                    add_permissions(&mut doc, &overlay::claude(), &["allow", "ask", "deny"])?;
                    let guard = overlay::claude_guard(&ctx.exe, &ctx.state(), installed);
                    add_permissions(&mut doc, &guard, &["allow", "ask", "deny"])?;
                }
                Role::Hooks => {
                    if harness == Harness::Cursor && json::lookup(&doc.root, &path(&["version"])).is_none() {
                        doc.set(&[], "version", json!(1))?;
                    }
                    add_hooks(&mut doc, harness, ctx)?;
                }
                Role::GeminiSettings => {
                    doc.set(&path(&["mcpServers"]), "agentfw", server_entry(harness, ctx))?;
                    add_hooks(&mut doc, harness, ctx)?;
                }
                Role::CursorPermissions => add_permissions(&mut doc, &overlay::cursor(), &["allow", "deny"])?,
                Role::CodexConfig | Role::Owned => {}
            }
            let after =
                if doc.changes.is_empty() { before.map(str::to_owned) } else { Some(json::render(&doc.root, before)) };
            (after, doc.changes, doc.customised)
        }
    };
    Ok(FilePlan { path: file.to_owned(), before: before.map(str::to_owned), after, customised, changes })
}

/// What `agentfw install harness --scope scope` would change, given the current contents
/// of the files [`install_paths`] names (`read` answers `None` for a missing file).
pub fn plan_install(
    harness: Harness,
    scope: Scope,
    ctx: &Context,
    read: impl Fn(&Path) -> Option<String>,
) -> Result<Plan, InstallError> {
    let mut files = Vec::new();
    let installed = install_paths(harness, scope, ctx);
    for (file, role) in targets(harness, scope, ctx) {
        let before = read(&file);
        files.push(plan_file(harness, role, &file, before.as_deref(), ctx, &installed)?);
    }
    let mut notes = Vec::new();
    let permissions = files.last().map(|f| f.path.display().to_string()).unwrap_or_default();
    match harness {
        Harness::Claude => {
            let settings = files.get(1).map(|f| f.path.display().to_string()).unwrap_or_default();
            notes.push(format!(
                "Claude Code: permission overlay in `permissions.allow/ask/deny` of `{settings}` \
                 (reads and tests allowed, edits and commits asked, pushes, publishes, cloud CLIs, curl and ssh denied; \
                 agentfw's admin commands and its home `{}` denied to the model).",
                ctx.state()
            ));
            if scope == Scope::Project {
                notes.push("Claude Code asks once before it starts servers listed in a project's `.mcp.json`.".into());
            }
        }
        Harness::Codex => notes.push(format!(
            "Codex: command rules in `{permissions}` (tests allowed, commits asked, pushes, publishes, cloud CLIs, \
             curl, ssh and agentfw's admin commands forbidden), and `sandbox_mode = \"workspace-write\"` unless you \
             chose `read-only`: the model's commands write only the workspace, so agentfw's home `{}` stays \
             read-only to them. Codex runs the hooks once you trust them.",
            ctx.state()
        )),
        Harness::Cursor => {
            notes.push(format!("Cursor: permission rules in `{permissions}`. {}", overlay::cursor_gaps()))
        }
        Harness::Gemini => {
            notes.push(format!(
                "Gemini CLI: policy rules in `{permissions}` (reads and tests allowed, edits and commits asked, \
                 pushes, publishes, cloud CLIs, curl and ssh denied)."
            ));
            let settings = files.first();
            let text = settings.and_then(|f| f.after.as_deref()).unwrap_or_default();
            if serde_json::from_str::<Value>(text)
                .ok()
                .and_then(|v| v.pointer("/hooksConfig/enabled").and_then(Value::as_bool))
                == Some(false)
            {
                notes.push(format!(
                    "Gemini CLI has hooks turned off in `{}` (`hooksConfig.enabled: false`): agentfw's hooks will \
                     not run until you turn them on.",
                    settings.map(|f| f.path.display().to_string()).unwrap_or_default()
                ));
            }
        }
    }
    Ok(Plan { harness, scope, files, notes })
}

/// What `agentfw uninstall` would change: the changes in `receipt` undone, given the
/// files' current contents.
pub fn plan_uninstall(
    harness: Harness,
    receipt: &Receipt,
    read: impl Fn(&Path) -> Option<String>,
) -> Result<Plan, InstallError> {
    let mut files = Vec::new();
    let mut notes = Vec::new();
    for file in &receipt.files {
        let name = file.path.display().to_string();
        let before = read(&file.path);
        let Some(current) = before.as_deref() else {
            notes.push(format!("`{name}` is gone already"));
            continue;
        };
        let after = if let Some(Change::Owned { content, previous }) = file.changes.last() {
            if current == content {
                previous.clone()
            } else {
                notes.push(format!("left `{name}` as it is: it was changed after install"));
                Some(current.to_owned())
            }
        } else if file.changes.iter().any(|c| matches!(c, Change::CodexServer { .. } | Change::CodexSetting { .. })) {
            let (text, mut left) = codex::uninstall(&name, current, &file.changes)?;
            notes.append(&mut left);
            if file.created && text.trim().is_empty() { None } else { Some(text) }
        } else {
            let mut doc = JsonDoc::parse(&name, Some(current))?;
            let original = doc.root.clone();
            notes.extend(json::undo(&name, &mut doc.root, &file.changes));
            let empty = doc.root.as_object().is_some_and(serde_json::Map::is_empty);
            if file.created && empty {
                None
            } else if doc.root == original {
                Some(current.to_owned())
            } else {
                Some(json::render(&doc.root, Some(current)))
            }
        };
        files.push(FilePlan { path: file.path.clone(), before, after, customised: Vec::new(), changes: Vec::new() });
    }
    Ok(Plan { harness, scope: receipt.scope, files, notes })
}

#[cfg(test)]
mod tests;
