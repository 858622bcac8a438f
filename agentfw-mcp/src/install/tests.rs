//! Golden tests of the install plan for every harness and scope, from missing files and from
//! files a person customised, with idempotence and the uninstall round trip.
//!
//! Each case is a folder under `tests/golden/install/<harness>-<scope>-<case>/`: `before/`
//! holds the files as they are (`home/…` under the home directory, `project/…` under the
//! project), `after/` the files after install, and `plan.txt` the customisations the plan
//! replaces and the notes it prints. `AGENTFW_BLESS=1 cargo test` rewrites `after/` and
//! `plan.txt` from the current code; review the diff before committing it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::*;

const HOME: &str = "/home/dev";
const PROJECT: &str = "/srv/web";
const EXE: &str = "/opt/agentfw/bin/agentfw";

fn ctx() -> Context {
    Context { exe: EXE.into(), home: HOME.into(), project: PROJECT.into(), agentfw_home: None }
}

fn golden_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/install")
}

/// The files of a fixture folder, by the absolute path they stand for.
fn read_tree(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    for (prefix, real) in [("home", HOME), ("project", PROJECT)] {
        let base = dir.join(prefix);
        let mut stack = vec![base.clone()];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else { continue };
            for entry in entries {
                let p = entry.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    let rel = p.strip_prefix(&base).unwrap();
                    out.insert(Path::new(real).join(rel), std::fs::read_to_string(&p).unwrap());
                }
            }
        }
    }
    out
}

fn write_tree(dir: &Path, files: &BTreeMap<PathBuf, String>) {
    let _ = std::fs::remove_dir_all(dir);
    for (path, text) in files {
        let (prefix, rel) = match path.strip_prefix(PROJECT) {
            Ok(rel) => ("project", rel),
            Err(_) => ("home", path.strip_prefix(HOME).unwrap()),
        };
        let target = dir.join(prefix).join(rel);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(target, text).unwrap();
    }
}

fn apply(files: &BTreeMap<PathBuf, String>, plan: &Plan) -> BTreeMap<PathBuf, String> {
    let mut out = files.clone();
    for f in &plan.files {
        match &f.after {
            Some(text) => out.insert(f.path.clone(), text.clone()),
            None => out.remove(&f.path),
        };
    }
    out
}

fn summary(plan: &Plan) -> String {
    let mut s = String::from("customised:\n");
    for c in plan.customised() {
        s.push_str(&format!("- {c}\n"));
    }
    s.push_str("notes:\n");
    for n in &plan.notes {
        s.push_str(&format!("- {n}\n"));
    }
    s
}

fn check_case(name: &str, harness: Harness, scope: Scope) {
    let dir = golden_root().join(name);
    let before = read_tree(&dir.join("before"));
    let plan = plan_install(harness, scope, &ctx(), |p| before.get(p).cloned()).unwrap();
    let after = apply(&before, &plan);
    if std::env::var_os("AGENTFW_BLESS").is_some() {
        write_tree(&dir.join("after"), &after);
        std::fs::write(dir.join("plan.txt"), summary(&plan)).unwrap();
    }
    let want = read_tree(&dir.join("after"));
    for (path, text) in &after {
        assert_eq!(Some(text), want.get(path), "{name}: {}", path.display());
    }
    assert_eq!(after.len(), want.len(), "{name}: the same files");
    assert_eq!(summary(&plan), std::fs::read_to_string(dir.join("plan.txt")).unwrap(), "{name}: plan.txt");

    // Every file of the plan is one install touches, and nothing else is touched.
    let touched: Vec<PathBuf> = plan.files.iter().map(|f| f.path.clone()).collect();
    assert_eq!(touched, install_paths(harness, scope, &ctx()));

    // A second run changes nothing.
    let again = plan_install(harness, scope, &ctx(), |p| after.get(p).cloned()).unwrap();
    assert!(again.is_noop(), "{name}: second install changes\n{}", again.diff());
    assert!(again.customised().next().is_none(), "{name}: nothing customised the second time");

    // Uninstall puts every file back as it was.
    let mut receipt = Receipt::new(harness, scope);
    receipt.record(&plan);
    receipt.record(&again);
    let json = serde_json::to_string(&receipt).unwrap();
    let receipt: Receipt = serde_json::from_str(&json).unwrap();
    let undo = plan_uninstall(harness, &receipt, |p| after.get(p).cloned()).unwrap();
    let restored = apply(&after, &undo);
    assert_eq!(restored, before, "{name}: uninstall restores the files");
    assert!(undo.notes.is_empty(), "{name}: {:?}", undo.notes);
}

macro_rules! golden {
    ($($test:ident: $name:literal, $harness:ident, $scope:ident;)*) => {$(
        #[test]
        fn $test() {
            check_case($name, Harness::$harness, Scope::$scope);
        }
    )*};
}

golden! {
    claude_user_empty: "claude-user-empty", Claude, User;
    claude_user_custom: "claude-user-custom", Claude, User;
    claude_project_empty: "claude-project-empty", Claude, Project;
    claude_project_custom: "claude-project-custom", Claude, Project;
    codex_user_empty: "codex-user-empty", Codex, User;
    codex_user_custom: "codex-user-custom", Codex, User;
    codex_project_empty: "codex-project-empty", Codex, Project;
    cursor_user_empty: "cursor-user-empty", Cursor, User;
    cursor_user_custom: "cursor-user-custom", Cursor, User;
    cursor_project_empty: "cursor-project-empty", Cursor, Project;
    gemini_user_empty: "gemini-user-empty", Gemini, User;
    gemini_user_custom: "gemini-user-custom", Gemini, User;
    gemini_project_empty: "gemini-project-empty", Gemini, Project;
}

#[test]
fn agentfw_home_reaches_the_server_and_the_hooks() {
    let ctx = Context { agentfw_home: Some("/var/lib/agent fw".into()), ..ctx() };
    let plan = plan_install(Harness::Codex, Scope::User, &ctx, |_| None).unwrap();
    let config = plan.files[0].after.as_deref().unwrap();
    assert!(config.contains("env = { AGENTFW_HOME = \"/var/lib/agent fw\" }"), "{config}");
    let hooks = plan.files[1].after.as_deref().unwrap();
    assert!(
        hooks.contains(r#""command": "AGENTFW_HOME='/var/lib/agent fw' /opt/agentfw/bin/agentfw hook codex stop""#),
        "{hooks}"
    );
    let plan = plan_install(Harness::Claude, Scope::User, &ctx, |_| None).unwrap();
    assert!(plan.files[0].after.as_deref().unwrap().contains(r#""AGENTFW_HOME": "/var/lib/agent fw""#));
}

#[test]
fn hook_commands_quote_odd_paths() {
    let ctx = Context { exe: "/Users/me/My Tools/agentfw".into(), ..ctx() };
    assert_eq!(hook_command(Harness::Claude, Event::Stop, &ctx), "'/Users/me/My Tools/agentfw' hook claude stop");
    assert_eq!(shell_word("it's"), r"'it'\''s'");
    assert!(is_agentfw_hook("'/Users/me/My Tools/agentfw' hook claude stop", Harness::Claude, Event::Stop));
    assert!(is_agentfw_hook("/usr/bin/agentfw hook gemini after-agent", Harness::Gemini, Event::Stop));
    assert!(!is_agentfw_hook("/usr/bin/other hook claude stop", Harness::Claude, Event::Stop));
    assert!(!is_agentfw_hook("/usr/bin/agentfw hook claude stop", Harness::Codex, Event::Stop));
}

#[test]
fn broken_files_are_errors_that_say_what_to_fix() {
    let bad = |harness, text: &'static str| {
        plan_install(harness, Scope::User, &ctx(), |p| p.ends_with(".claude.json").then(|| text.to_owned()))
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        bad(Harness::Claude, "{\"mcpServers\": [1]}"),
        "`mcpServers` in `/home/dev/.claude.json` must be an object, found a list; fix it by hand and run again"
    );
    assert!(bad(Harness::Claude, "{ // note\n}").contains("not valid JSON (if it has comments"));
    assert_eq!(
        bad(Harness::Claude, "[]"),
        "the top level in `/home/dev/.claude.json` must be an object, found a list; fix it by hand and run again"
    );
    let toml = plan_install(Harness::Codex, Scope::User, &ctx(), |p| {
        p.ends_with("config.toml").then(|| "mcp_servers = 3\n".to_owned())
    })
    .unwrap_err();
    assert_eq!(
        toml.to_string(),
        "`mcp_servers` in `/home/dev/.codex/config.toml` must be a table (`[mcp_servers.NAME]` sections), found a \
         value; fix it by hand and run again"
    );
    let settings = plan_install(Harness::Claude, Scope::User, &ctx(), |p| {
        p.ends_with("settings.json").then(|| r#"{"permissions": {"deny": "all"}}"#.to_owned())
    })
    .unwrap_err();
    assert!(
        settings
            .to_string()
            .starts_with("`permissions.deny` in `/home/dev/.claude/settings.json` must be a list, found a string")
    );
}

#[test]
fn legacy_rule_spelling_counts_as_the_same_rule() {
    let before = r#"{"permissions": {"allow": ["Bash(curl:*)"], "deny": ["Bash(git push:*)"]}}"#;
    let plan =
        plan_install(Harness::Claude, Scope::User, &ctx(), |p| p.ends_with("settings.json").then(|| before.to_owned()))
            .unwrap();
    let customised: Vec<&str> = plan.customised().collect();
    assert_eq!(
        customised,
        vec![
            "`/home/dev/.claude/settings.json` has `Bash(curl:*)` in `permissions.allow`; agentfw's overlay moves it to `permissions.deny`"
        ]
    );
    let after: Value = serde_json::from_str(plan.files[1].after.as_deref().unwrap()).unwrap();
    let deny = after["permissions"]["deny"].as_array().unwrap();
    assert!(deny.contains(&json!("Bash(git push:*)")) && !deny.contains(&json!("Bash(git push *)")), "kept as written");
}

#[test]
fn uninstall_leaves_what_was_changed_after_install() {
    let plan = plan_install(Harness::Cursor, Scope::User, &ctx(), |_| None).unwrap();
    let mut receipt = Receipt::new(Harness::Cursor, Scope::User);
    receipt.record(&plan);
    let mut files: BTreeMap<PathBuf, String> = BTreeMap::new();
    for f in &plan.files {
        files.insert(f.path.clone(), f.after.clone().unwrap());
    }
    // The person points the server elsewhere and adds a server of their own.
    let mcp = PathBuf::from("/home/dev/.cursor/mcp.json");
    let edited =
        r#"{"mcpServers": {"agentfw": {"command": "/elsewhere/agentfw", "args": ["mcp"]}, "mine": {"command": "x"}}}"#;
    files.insert(mcp.clone(), edited.to_owned());
    let undo = plan_uninstall(Harness::Cursor, &receipt, |p| files.get(p).cloned()).unwrap();
    let mcp_plan = undo.files.iter().find(|f| f.path == mcp).unwrap();
    assert_eq!(mcp_plan.after.as_deref(), Some(edited), "nothing to undo there");
    assert_eq!(
        undo.notes,
        vec!["left `mcpServers.agentfw` in `/home/dev/.cursor/mcp.json` as it is: it was changed after install"]
    );
    // The other files were created by install and are removed whole.
    assert!(undo.files.iter().filter(|f| f.path != mcp).all(|f| f.after.is_none()));
}

#[test]
fn diffs_are_unified_with_headers() {
    let plan = plan_install(Harness::Cursor, Scope::Project, &ctx(), |_| None).unwrap();
    let diff = plan.files[0].diff();
    assert!(diff.starts_with("--- /dev/null\n+++ b/srv/web/.cursor/mcp.json\n@@ -0,0 +1,"), "{diff}");
    assert!(diff.contains("+    \"agentfw\": {\n"), "{diff}");
}

#[test]
fn toml_without_a_final_line_break_gets_the_table_on_its_own_line() {
    let before = "model = \"gpt-5\" # mine";
    let plan =
        plan_install(Harness::Codex, Scope::User, &ctx(), |p| p.ends_with("config.toml").then(|| before.to_owned()))
            .unwrap();
    let after = plan.files[0].after.clone().unwrap();
    assert!(after.starts_with("model = \"gpt-5\" # mine\n"), "{after}");
    let parsed: toml::Table = toml::from_str(&after).unwrap();
    assert_eq!(parsed["mcp_servers"]["agentfw"]["startup_timeout_sec"].as_integer(), Some(60));
    let mut receipt = Receipt::new(Harness::Codex, Scope::User);
    receipt.record(&plan);
    let undo = plan_uninstall(Harness::Codex, &receipt, |p| p.ends_with("config.toml").then(|| after.clone())).unwrap();
    let back: toml::Table = toml::from_str(undo.files[0].after.as_deref().unwrap()).unwrap();
    assert_eq!(back, toml::from_str::<toml::Table>(before).unwrap());
}

/// Codex's sandbox keeps agentfw's home read-only to the model's commands: a
/// `danger-full-access` sandbox is a customisation replaced with consent and put back on
/// uninstall; a stricter `read-only` stays; a home under `/tmp` takes `/tmp` out too.
#[test]
fn codex_gets_a_workspace_write_sandbox_and_gives_back_what_it_had() {
    let config = |text: &'static str| move |p: &Path| p.ends_with("config.toml").then(|| text.to_owned());
    let plan =
        plan_install(Harness::Codex, Scope::User, &ctx(), config("sandbox_mode = \"danger-full-access\"\n")).unwrap();
    let after = plan.files[0].after.clone().unwrap();
    assert!(after.starts_with("sandbox_mode = \"workspace-write\"\n"), "{after}");
    let customised: Vec<&str> = plan.customised().collect();
    assert!(
        customised.iter().any(|c| c.contains("`sandbox_mode`") && c.contains("\"danger-full-access\"")),
        "{customised:?}"
    );
    let mut receipt = Receipt::new(Harness::Codex, Scope::User);
    receipt.record(&plan);
    let undone =
        plan_uninstall(Harness::Codex, &receipt, |p| p.ends_with("config.toml").then(|| after.clone())).unwrap();
    assert_eq!(undone.files[0].after.as_deref(), Some("sandbox_mode = \"danger-full-access\"\n"));

    let strict = plan_install(Harness::Codex, Scope::User, &ctx(), config("sandbox_mode = \"read-only\"\n")).unwrap();
    assert!(strict.files[0].after.as_deref().unwrap().starts_with("sandbox_mode = \"read-only\"\n"));

    let ctx = Context { agentfw_home: Some("/tmp/afw/home".into()), ..ctx() };
    let plan = plan_install(Harness::Codex, Scope::User, &ctx, |_| None).unwrap();
    let after = plan.files[0].after.as_deref().unwrap();
    assert!(
        after.contains("[sandbox_workspace_write]\nexclude_slash_tmp = true\nexclude_tmpdir_env_var = true\n"),
        "{after}"
    );
}

/// Claude Code denies the model agentfw's admin commands and its home, by the binary's
/// path and its name.
#[test]
fn claude_denies_agentfw_admin_commands_and_its_home() {
    let plan = plan_install(Harness::Claude, Scope::User, &ctx(), |_| None).unwrap();
    let settings: Value = serde_json::from_str(plan.files[1].after.as_deref().unwrap()).unwrap();
    let deny: Vec<&str> =
        settings["permissions"]["deny"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    for rule in [
        "Bash(agentfw quarantine *)",
        "Bash(agentfw unblock *)",
        "Bash(/opt/agentfw/bin/agentfw daemon *)",
        "Edit(//home/dev/.local/share/agentfw/**)",
        "Read(//home/dev/.local/share/agentfw/**)",
    ] {
        assert!(deny.contains(&rule), "{rule} in {deny:?}");
    }
}
