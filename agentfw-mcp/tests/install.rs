//! `agentfw install`, `uninstall`, `block`, `unblock` and `hook` as a person runs them, in a
//! temporary home: dry runs, refusals, backups, permissions, receipts and round trips.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

/// A home, a project and an agentfw state directory of one test's own.
struct Env {
    /// Removed with everything in it when the test ends.
    _root: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    state: PathBuf,
}

impl Env {
    fn new(name: &str) -> Self {
        let root = tempfile::Builder::new().prefix(&format!("agentfw-install-{name}-")).tempdir().unwrap();
        let path = root.path();
        let env =
            Env { home: path.join("home"), project: path.join("project"), state: path.join("state"), _root: root };
        fs::create_dir_all(&env.home).unwrap();
        fs::create_dir_all(&env.project).unwrap();
        // The test process has no terminal: this home lets admin commands run from anywhere
        // (the check itself is tested in admin.rs).
        fs::create_dir_all(&env.state).unwrap();
        fs::write(env.state.join("config.toml"), "[admin]\nfrom_agents = true\n").unwrap();
        env
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, "")
    }

    fn run_with(&self, args: &[&str], stdin: &str) -> Output {
        Command::cargo_bin("agentfw")
            .unwrap()
            .args(args)
            .current_dir(&self.project)
            .env("HOME", &self.home)
            .env("AGENTFW_HOME", &self.state)
            .env_remove("XDG_DATA_HOME")
            .write_stdin(stdin)
            .output()
            .unwrap()
    }

    /// What is in the state directory besides the configuration the test wrote.
    fn state_written(&self) -> Vec<String> {
        let entries = fs::read_dir(&self.state).map(|d| d.map(|e| e.unwrap().file_name()).collect::<Vec<_>>());
        let mut names: Vec<String> =
            entries.unwrap_or_default().iter().map(|n| n.to_string_lossy().into_owned()).collect();
        names.retain(|n| n != "config.toml");
        names
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.home.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        path
    }

    fn read(&self, rel: &str) -> Option<String> {
        fs::read_to_string(self.home.join(rel)).ok()
    }

    /// Every backup file, with its contents.
    fn backups(&self) -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        let mut stack = vec![self.state.join("backups")];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = fs::read_dir(&dir) else { continue };
            for e in entries {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    let text = fs::read_to_string(&p).unwrap();
                    out.push((p, text));
                }
            }
        }
        out.sort();
        out
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

const CUSTOM_SETTINGS: &str =
    "{\n  \"model\": \"opus\",\n  \"permissions\": {\n    \"allow\": [\n      \"Bash(curl *)\"\n    ]\n  }\n}\n";

#[test]
fn dry_run_prints_the_diff_and_changes_nothing() {
    let env = Env::new("dry-run");
    let out = env.run(&["install", "claude", "--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("--- /dev/null\n+++ b"), "{text}");
    assert!(text.contains("+      \"command\": \""), "{text}");
    assert!(text.ends_with("dry run: nothing was changed.\n"), "{text}");
    assert!(fs::read_dir(&env.home).unwrap().next().is_none(), "no file written");
    assert_eq!(env.state_written(), Vec::<String>::new(), "no state written");
}

#[test]
fn install_is_idempotent_and_uninstall_removes_what_it_created() {
    let env = Env::new("fresh");
    let out = env.run(&["install", "codex"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("installed agentfw for Codex (user scope)."), "{text}");
    assert!(text.contains("`sandbox_mode = \"workspace-write\"` unless you chose `read-only`"), "{text}");
    let config = env.read(".codex/config.toml").unwrap();
    let exe = fs::canonicalize(assert_cmd::cargo::cargo_bin("agentfw")).unwrap();
    assert!(config.contains(&format!("command = \"{}\"", exe.display())), "{config}");
    assert!(config.contains("required = true\nstartup_timeout_sec = 60\n"), "{config}");
    assert!(config.contains(&format!("AGENTFW_HOME = \"{}\"", env.state.display())), "{config}");
    assert!(env.read(".codex/hooks.json").unwrap().contains(" hook codex stop\""));
    assert!(env.read(".codex/rules/agentfw.rules").unwrap().contains("decision = \"forbidden\""));
    assert!(env.state.join("install/codex-user.json").exists());
    assert!(env.backups().is_empty(), "nothing existed, nothing to back up");

    let again = env.run(&["install", "codex"]);
    assert_eq!(again.status.code(), Some(0));
    assert!(stdout(&again).starts_with("agentfw is already installed for Codex (user scope): nothing to change.\n"));

    let out = env.run(&["uninstall", "codex"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("removed agentfw from Codex (user scope)."));
    for f in [".codex/config.toml", ".codex/hooks.json", ".codex/rules/agentfw.rules"] {
        assert_eq!(env.read(f), None, "{f} removed");
    }
    assert!(!env.state.join("install/codex-user.json").exists());
    let out = env.run(&["uninstall", "codex"]);
    assert_eq!(stdout(&out), "agentfw has no record of installing into Codex (user scope): nothing to change.\n");
}

#[test]
fn customisations_need_consent_then_are_backed_up_and_restored() {
    let env = Env::new("custom");
    let settings = env.write(".claude/settings.json", CUSTOM_SETTINGS);
    fs::set_permissions(&settings, fs::Permissions::from_mode(0o640)).unwrap();

    // No terminal to ask on and no --yes: nothing happens.
    let out = env.run(&["install", "claude"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains("This replaces settings you customised:\n  - `"), "{text}");
    assert!(
        text.contains("has `Bash(curl *)` in `permissions.allow`; agentfw's overlay moves it to `permissions.deny`")
    );
    assert!(text.contains("nothing was changed: run `agentfw install claude --scope user --yes`"), "{text}");
    assert_eq!(env.read(".claude/settings.json").unwrap(), CUSTOM_SETTINGS);
    assert_eq!(env.read(".claude.json"), None);
    assert_eq!(env.state_written(), Vec::<String>::new());

    let out = env.run(&["install", "claude", "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let after = env.read(".claude/settings.json").unwrap();
    assert!(after.contains("\"Bash(curl *)\""));
    assert!(after.find("\"deny\"").unwrap() < after.find("\"Bash(curl *)\"").unwrap(), "moved to deny");
    assert_eq!(mode(&settings), 0o640, "permissions kept");
    let backups = env.backups();
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert!(backups[0].0.ends_with("home/.claude/settings.json"));
    assert_eq!(backups[0].1, CUSTOM_SETTINGS);
    assert_eq!(mode(&backups[0].0), 0o600, "backups are owner-only");
    let stamp = fs::read_dir(env.state.join("backups")).unwrap().next().unwrap().unwrap().path();
    assert_eq!((mode(&env.state.join("backups")), mode(&stamp)), (0o700, 0o700));
    assert!(stdout(&out).contains(&format!("(backup: {})", backups[0].0.display())));

    let out = env.run(&["uninstall", "claude"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(env.read(".claude/settings.json").unwrap(), CUSTOM_SETTINGS, "byte for byte");
    assert_eq!(env.read(".claude.json"), None);
    assert_eq!(mode(&settings), 0o640);
}

#[test]
fn project_scope_writes_under_the_current_directory() {
    let env = Env::new("project");
    let out = env.run(&["install", "cursor", "--scope", "project"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for f in [".cursor/mcp.json", ".cursor/hooks.json", ".cursor/cli.json"] {
        assert!(env.project.join(f).exists(), "{f}");
    }
    assert!(!env.home.join(".cursor").exists());
    assert!(stdout(&out).contains("match a command's first word only"));
    let out = env.run(&["install", "cursor", "--scope", "project"]);
    assert!(stdout(&out).contains("already installed for Cursor (project scope)"));
    let out = env.run(&["uninstall", "cursor"]);
    assert!(stdout(&out).contains("no record of installing into Cursor (user scope)"), "scopes are separate");
    let out = env.run(&["uninstall", "cursor", "--scope", "project", "--dry-run"]);
    assert!(stdout(&out).contains("+++ /dev/null"));
    assert!(env.project.join(".cursor/mcp.json").exists(), "dry run");
    env.run(&["uninstall", "cursor", "--scope", "project"]);
    assert!(!env.project.join(".cursor/mcp.json").exists());
}

#[test]
fn a_symlinked_dotfile_stays_a_symlink() {
    let env = Env::new("symlink");
    let real = env.home.join("dotfiles/gemini-settings.json");
    fs::create_dir_all(real.parent().unwrap()).unwrap();
    fs::write(&real, "{\n  \"ui\": {\n    \"theme\": \"GitHub\"\n  }\n}\n").unwrap();
    fs::create_dir_all(env.home.join(".gemini")).unwrap();
    std::os::unix::fs::symlink(&real, env.home.join(".gemini/settings.json")).unwrap();
    let out = env.run(&["install", "gemini"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(fs::symlink_metadata(env.home.join(".gemini/settings.json")).unwrap().file_type().is_symlink());
    assert!(fs::read_to_string(&real).unwrap().contains("\"agentfw\""));
    assert!(env.read(".gemini/policies/agentfw.toml").unwrap().contains("decision = \"deny\""));
}

#[test]
fn an_unreadable_or_broken_file_stops_everything() {
    let env = Env::new("unreadable");
    fs::create_dir_all(env.home.join(".claude.json")).unwrap();
    let out = env.run(&["install", "claude", "--yes"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).starts_with("error: cannot read `"), "{}", stderr(&out));
    assert!(!env.home.join(".claude/settings.json").exists(), "nothing written");

    let env = Env::new("broken");
    env.write(".cursor/mcp.json", "{\"mcpServers\": ");
    let out = env.run(&["install", "cursor", "--yes"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("mcp.json`: not valid JSON"), "{}", stderr(&out));
    assert!(stderr(&out).contains("fix it by hand (or move it aside) and run again"));
    assert!(!env.home.join(".cursor/hooks.json").exists());
}

#[test]
fn block_and_unblock_edit_an_owner_only_trust_file() {
    let env = Env::new("block");
    let out = env.run(&["block", "web (claude)"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let trust = env.state.join("trust.yaml");
    assert!(stdout(&out).starts_with("blocked `web (claude)`: its messages are refused on this machine"));
    assert_eq!(mode(&trust), 0o600);
    assert_eq!(mode(&env.state), 0o700);
    let text = fs::read_to_string(&trust).unwrap();
    assert!(text.contains("unknown_teammates:\n  policy: reject"), "{text}");
    assert!(text.contains("blocked:\n  - \"web (claude)\""), "{text}");
    assert!(stdout(&env.run(&["block", "web (claude)"])).starts_with("`web (claude)` is already blocked"));

    let out = env.run(&["unblock", "web (claude)"]);
    assert!(stdout(&out).starts_with("unblocked `web (claude)`"));
    assert!(fs::read_to_string(&trust).unwrap().contains("blocked: []"));
    assert!(stdout(&env.run(&["unblock", "web (claude)"])).starts_with("`web (claude)` is not blocked"));

    fs::write(&trust, "version: 1\nblokced: []\n").unwrap();
    let out = env.run(&["block", "x"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("error[trust.unknown_field]: the trust file has no field `blokced`"), "{err}");
    assert!(err.contains("= help: did you mean `blocked`?"), "{err}");
    assert_eq!(fs::read_to_string(&trust).unwrap(), "version: 1\nblokced: []\n", "left alone");

    let out = env.run(&["block", " "]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("is not a teammate"));
}

#[test]
fn hooks_never_break_the_harness() {
    let env = Env::new("hook");
    let out = env.run_with(&["hook", "claude", "stop"], r#"{"session_id":"s","stop_hook_active":false}"#);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "");
    // No daemon runs in this home, and a Stop hook does not start one.
    let err = stderr(&out);
    assert!(
        err.starts_with("agentfw hook claude: cannot fetch waiting messages: the agentfw daemon is not running"),
        "{err}"
    );

    let out = env.run_with(&["hook", "cursor", "before-submit-prompt"], "not json");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), "{\"continue\":true}\n");
    assert!(stderr(&out).contains("cannot read the hook input: stdin is not JSON"));

    let out = env.run_with(&["hook", "gemini", "AfterAgent"], "{}");
    assert_eq!((out.status.code(), stdout(&out)), (Some(0), "{}\n".to_owned()));

    let out = env.run_with(&["hook", "codex", "teatime"], "{}");
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("`teatime` is not a codex event agentfw hooks"));
}
