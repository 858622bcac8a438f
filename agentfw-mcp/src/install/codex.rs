//! Codex's `config.toml`: `[mcp_servers.agentfw]`, edited with `toml_edit` so comments,
//! order and formatting of everything else stay as they are.

use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, value};

use super::overlay::OUR_TOOLS;
use super::{Change, Context, InstallError};

/// The table agentfw writes: the server, `required = true` and a 60-second start timeout
/// (Codex otherwise goes on without a server that takes over a second to start), and
/// `approval_mode = "approve"` for each of agentfw's tools (needed when Codex runs with
/// `approval_policy = "never"`; agentfw judges these calls itself).
fn server_table(ctx: &Context) -> Table {
    let mut t = Table::new();
    t.insert("command", value(ctx.exe.as_str()));
    let mut args = Array::new();
    args.push("mcp");
    t.insert("args", value(args));
    if let Some(home) = &ctx.agentfw_home {
        let mut env = InlineTable::new();
        env.insert("AGENTFW_HOME", home.as_str().into());
        t.insert("env", value(env));
    }
    t.insert("required", value(true));
    t.insert("startup_timeout_sec", value(60));
    let mut tools = Table::new();
    tools.set_implicit(true);
    for tool in OUR_TOOLS {
        let mut approve = Table::new();
        approve.insert("approval_mode", value("approve"));
        tools.insert(tool, Item::Table(approve));
    }
    t.insert("tools", Item::Table(tools));
    t
}

/// `item` as a document of its own, under `[mcp_servers.agentfw]`.
fn standalone(mut item: Item) -> String {
    if let Item::Table(t) = &mut item {
        clear_positions(t);
    }
    let mut servers = Table::new();
    servers.set_implicit(true);
    servers.insert("agentfw", item);
    let mut doc = DocumentMut::new();
    doc.insert("mcp_servers", Item::Table(servers));
    doc.to_string()
}

/// Forget where a table sat in its old document, so it is placed anew in the next one.
fn clear_positions(t: &mut Table) {
    t.set_position(None);
    for (_, item) in t.iter_mut() {
        if let Item::Table(sub) = item {
            clear_positions(sub);
        }
    }
}

/// The value of `mcp_servers.agentfw` in `text`, for comparing by meaning, not layout.
fn meaning(text: &str) -> Option<toml::Value> {
    let table: toml::Table = toml::from_str(text).ok()?;
    table.get("mcp_servers")?.get("agentfw").cloned()
}

fn parse(name: &str, text: &str) -> Result<DocumentMut, InstallError> {
    text.parse::<DocumentMut>()
        .map_err(|e| InstallError::Parse { path: name.to_owned(), problem: format!("not valid TOML: {e}") })
}

fn servers_mut<'d>(name: &str, doc: &'d mut DocumentMut) -> Result<&'d mut Table, InstallError> {
    let found = doc.get("mcp_servers").map_or("nothing", Item::type_name);
    doc.get_mut("mcp_servers").and_then(Item::as_table_mut).ok_or_else(|| InstallError::Shape {
        path: name.to_owned(),
        at: "`mcp_servers`".to_owned(),
        want: "a table (`[mcp_servers.NAME]` sections)",
        found: if found == "inline table" { "an inline table" } else { "a value" },
    })
}

type Planned = (Option<String>, Vec<Change>, Vec<String>);

/// The sandbox settings agentfw asks of Codex (see `docs/threat-model.md`): `(table, key,
/// value)`. `workspace-write` lets the model's commands write only the workspace (and the
/// temporary directories), so agentfw's home stays read-only to them; when that home is
/// itself under `/tmp`, the temporary directories are left out too.
fn sandbox_settings(ctx: &Context) -> Vec<(Option<&'static str>, &'static str, toml_edit::Value)> {
    let mut settings = vec![(None, "sandbox_mode", "workspace-write".into())];
    if ctx.state().starts_with("/tmp/") {
        settings.push((Some("sandbox_workspace_write"), "exclude_slash_tmp", true.into()));
        settings.push((Some("sandbox_workspace_write"), "exclude_tmpdir_env_var", true.into()));
    }
    settings
}

/// Apply the sandbox settings to `doc`: what changed, and the customisations replaced. A
/// `sandbox_mode` of `read-only` is stricter and stays.
fn apply_sandbox(name: &str, doc: &mut DocumentMut, ctx: &Context) -> Result<(Vec<Change>, Vec<String>), InstallError> {
    let mut changes = Vec::new();
    let mut customised = Vec::new();
    for (table, key, want) in sandbox_settings(ctx) {
        let holder = match table {
            None => doc.as_table_mut(),
            Some(t) => {
                if doc.get(t).is_none() {
                    let mut new = Table::new();
                    new.set_implicit(false);
                    doc.insert(t, Item::Table(new));
                }
                doc.get_mut(t).and_then(Item::as_table_mut).ok_or_else(|| InstallError::Shape {
                    path: name.to_owned(),
                    at: format!("`{t}`"),
                    want: "a table",
                    found: "a value",
                })?
            }
        };
        let have = holder.get(key).and_then(Item::as_value).map(|v| v.to_string().trim().to_owned());
        let wanted = want.to_string().trim().to_owned();
        if have.as_deref() == Some(wanted.as_str())
            || (key == "sandbox_mode" && have.as_deref() == Some("\"read-only\""))
        {
            continue;
        }
        if let Some(old) = &have {
            customised.push(format!(
                "`{key}` in `{name}` is {old}; agentfw sets it to {wanted} so that the model's commands cannot write agentfw's home (uninstall puts it back)"
            ));
        }
        holder.insert(key, value(want));
        changes.push(Change::CodexSetting {
            table: table.map(str::to_owned),
            key: key.to_owned(),
            written: wanted,
            previous: have,
        });
    }
    Ok((changes, customised))
}

pub(super) fn install(name: &str, before: Option<&str>, ctx: &Context) -> Result<Planned, InstallError> {
    let text = before.unwrap_or("");
    let mut doc = parse(name, text)?;
    let (mut sandbox, mut sandbox_customised) = apply_sandbox(name, &mut doc, ctx)?;
    let desired = server_table(ctx);
    let written = standalone(Item::Table(desired.clone()));
    if before.and_then(meaning).is_some_and(|have| Some(have) == meaning(&written)) {
        if sandbox.is_empty() {
            return Ok((before.map(str::to_owned), Vec::new(), Vec::new()));
        }
        return Ok((Some(doc.to_string()), sandbox, sandbox_customised));
    }
    let created_parent = doc.get("mcp_servers").is_none();
    if created_parent {
        let mut t = Table::new();
        t.set_implicit(true);
        doc.insert("mcp_servers", Item::Table(t));
    }
    let servers = servers_mut(name, &mut doc)?;
    let old = servers.remove("agentfw");
    let mut desired = desired;
    // A replaced table keeps its place in the file.
    desired.set_position(old.as_ref().and_then(Item::as_table).and_then(Table::position));
    let previous = old.map(standalone);
    let mut customised = std::mem::take(&mut sandbox_customised);
    if previous.is_some() {
        customised.push(format!(
            "`[mcp_servers.agentfw]` in `{name}` is already set to something else; it will be replaced \
             (uninstall puts it back)"
        ));
    }
    servers.insert("agentfw", Item::Table(desired));
    let mut after = doc.to_string();
    if !text.is_empty() && !text.ends_with('\n') {
        // toml_edit keeps a missing final line break; the new table must start on its own line.
        after = after.replacen(text, &format!("{text}\n"), 1);
    }
    sandbox.push(Change::CodexServer { written, previous, created_parent });
    Ok((Some(after), sandbox, customised))
}

/// Put back a sandbox setting install changed, if it is still as install wrote it.
fn undo_setting(
    name: &str,
    doc: &mut DocumentMut,
    table: Option<&str>,
    key: &str,
    written: &str,
    previous: Option<&str>,
) -> Result<Option<String>, InstallError> {
    let holder = match table {
        None => Some(doc.as_table_mut()),
        Some(t) => doc.get_mut(t).and_then(Item::as_table_mut),
    };
    let Some(holder) = holder else { return Ok(None) };
    let have = holder.get(key).and_then(Item::as_value).map(|v| v.to_string().trim().to_owned());
    if have.as_deref() != Some(written) {
        return Ok(Some(format!("left `{key}` in `{name}` as it is: it was changed after install")));
    }
    match previous {
        Some(text) => {
            let old: toml_edit::Value = text.parse().map_err(|e| InstallError::Parse {
                path: name.to_owned(),
                problem: format!("the recorded `{key}` is not a TOML value: {e}"),
            })?;
            holder.insert(key, value(old));
        }
        None => {
            holder.remove(key);
        }
    }
    if let Some(t) = table
        && doc.get(t).and_then(Item::as_table).is_some_and(Table::is_empty)
    {
        doc.remove(t);
    }
    Ok(None)
}

pub(super) fn uninstall(name: &str, current: &str, changes: &[Change]) -> Result<(String, Vec<String>), InstallError> {
    let mut doc = parse(name, current)?;
    let mut notes = Vec::new();
    for change in changes.iter().rev() {
        if let Change::CodexSetting { table, key, written, previous } = change {
            notes.extend(undo_setting(name, &mut doc, table.as_deref(), key, written, previous.as_deref())?);
            continue;
        }
        let Change::CodexServer { written, previous, created_parent } = change else { continue };
        if meaning(&doc.to_string()) != meaning(written) {
            notes.push(format!("left `[mcp_servers.agentfw]` in `{name}` as it is: it was changed after install"));
            continue;
        }
        let servers = servers_mut(name, &mut doc)?;
        let position = servers.remove("agentfw").as_ref().and_then(Item::as_table).and_then(Table::position);
        let restored = match previous {
            Some(text) => {
                let mut item = parse(name, text)?
                    .get_mut("mcp_servers")
                    .and_then(Item::as_table_mut)
                    .and_then(|t| t.remove("agentfw"));
                if let Some(Item::Table(t)) = &mut item {
                    clear_positions(t);
                    t.set_position(position);
                }
                item
            }
            None => None,
        };
        let empty = match restored {
            Some(item) => {
                servers.insert("agentfw", item);
                false
            }
            None => servers.is_empty(),
        };
        if *created_parent && empty {
            doc.remove("mcp_servers");
        }
    }
    Ok((doc.to_string(), notes))
}
