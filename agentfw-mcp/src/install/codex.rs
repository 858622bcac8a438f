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

pub(super) fn install(name: &str, before: Option<&str>, ctx: &Context) -> Result<Planned, InstallError> {
    let text = before.unwrap_or("");
    let mut doc = parse(name, text)?;
    let desired = server_table(ctx);
    let written = standalone(Item::Table(desired.clone()));
    if before.and_then(meaning).is_some_and(|have| Some(have) == meaning(&written)) {
        return Ok((before.map(str::to_owned), Vec::new(), Vec::new()));
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
    let mut customised = Vec::new();
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
    Ok((Some(after), vec![Change::CodexServer { written, previous, created_parent }], customised))
}

pub(super) fn uninstall(name: &str, current: &str, changes: &[Change]) -> Result<(String, Vec<String>), InstallError> {
    let mut doc = parse(name, current)?;
    let mut notes = Vec::new();
    for change in changes.iter().rev() {
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
