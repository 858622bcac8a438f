//! The risk-tiered permission overlay (TR2), and how each harness writes it.
//!
//! | tier | what | policy |
//! |---|---|---|
//! | read | reading and searching files | allowed |
//! | test | running the project's tests | allowed |
//! | write | editing files, committing | ask the person |
//! | external | pushing, publishing, cloud CLIs, `curl`, `wget`, `ssh`, `scp` | denied |
//!
//! The harness enforces it, whatever a message from another agent asked for.

/// Test commands, allowed.
use std::path::PathBuf;

pub const TESTS: &[&str] = &[
    "cargo test",
    "go test",
    "npm test",
    "npm run test",
    "pnpm test",
    "yarn test",
    "pytest",
    "python -m pytest",
    "make test",
];

/// Commands that change the repository's history, asked about.
pub const WRITE_COMMANDS: &[&str] = &["git commit"];

/// Commands with effects outside this machine, denied.
pub const EXTERNAL: &[&str] = &[
    "git push",
    "npm publish",
    "pnpm publish",
    "yarn publish",
    "cargo publish",
    "twine upload",
    "gem push",
    "docker push",
    "aws",
    "gcloud",
    "az",
    "kubectl",
    "curl",
    "wget",
    "ssh",
    "scp",
];

/// agentfw's commands that lower its protection (AM6). agentfw refuses them from inside an
/// agent session itself; the harness's rules deny them before they run. `hook` is here too:
/// only the harness runs it, and a model that ran it could say a person spoke (resetting its
/// turn fuse, LM2), which agentfw cannot tell from the harness's own hook.
pub const ADMIN_COMMANDS: &[&str] = &[
    "allow",
    "quarantine",
    "block",
    "unblock",
    "admission import",
    "admission enforce",
    "admission report",
    "admission off",
    "admission except",
    "daemon",
    "dashboard",
    "identity pin",
    "install",
    "uninstall",
    "join",
    "keys",
    "hook",
];

/// agentfw's own MCP tools, allowed (they are judged by agentfw itself).
pub const OUR_TOOLS: &[&str] = &["list_team", "send_message", "check_inbox"];

/// The reason a harness shows when it refuses a denied command.
pub const DENY_REASON: &str = "agentfw's permission overlay denies commands with effects outside this machine \
     (pushes, publishes, cloud CLIs, curl, wget, ssh): ask your user to run it";

/// The reason a harness shows when it refuses one of agentfw's admin commands.
pub const ADMIN_REASON: &str =
    "agentfw's admin commands lower its protection: only your user runs them, in a terminal of their own";

/// Claude Code `permissions` rules: `(list, rule)` in the order written.
pub fn claude() -> Vec<(&'static str, String)> {
    let mut rules: Vec<(&'static str, String)> = Vec::new();
    for tool in ["Read", "Grep", "Glob"] {
        rules.push(("allow", tool.to_owned()));
    }
    rules.extend(TESTS.iter().map(|c| ("allow", format!("Bash({c} *)"))));
    rules.extend(OUR_TOOLS.iter().map(|t| ("allow", format!("mcp__agentfw__{t}"))));
    for tool in ["Edit", "Write", "NotebookEdit"] {
        rules.push(("ask", tool.to_owned()));
    }
    rules.extend(WRITE_COMMANDS.iter().map(|c| ("ask", format!("Bash({c} *)"))));
    // A trailing ` *` also matches the bare command: `Bash(git push *)` denies `git push`.
    rules.extend(EXTERNAL.iter().map(|c| ("deny", format!("Bash({c} *)"))));
    rules
}

/// Claude Code `permissions.deny` rules that keep agentfw's protection out of the model's
/// reach (see `docs/threat-model.md`): its admin commands, by name and by the path of the
/// binary `exe`; its home `state` (trust file, configuration, pins, database) for the file
/// tools; and edits of the harness files the install wrote (`installed`: the settings that
/// hold these rules and the hooks, the server's registration), which would take agentfw out.
/// `//` starts an absolute path in a Claude Code path rule; `Edit` rules cover every tool
/// that writes files.
pub fn claude_guard(exe: &str, state: &str, installed: &[PathBuf]) -> Vec<(&'static str, String)> {
    let mut rules: Vec<(&'static str, String)> = Vec::new();
    for program in ["agentfw", exe] {
        rules.extend(ADMIN_COMMANDS.iter().map(|c| ("deny", format!("Bash({program} {c} *)"))));
    }
    let state = state.trim_end_matches('/');
    for tool in ["Edit", "Read"] {
        rules.push(("deny", format!("{tool}(/{state}/**)")));
    }
    rules.extend(installed.iter().map(|file| ("deny", format!("Edit(/{})", file.display()))));
    rules
}

/// Cursor CLI `permissions` rules. Its shell rules match only a command's first word, so
/// only whole programs can be denied or allowed; it has no "ask" list.
pub fn cursor() -> Vec<(&'static str, String)> {
    let mut rules: Vec<(&'static str, String)> = vec![("allow", "Read(**)".to_owned())];
    rules.extend(single_word(TESTS).map(|c| ("allow", format!("Shell({c})"))));
    rules.extend(OUR_TOOLS.iter().map(|t| ("allow", format!("Mcp(agentfw, {t})"))));
    rules.extend(single_word(EXTERNAL).map(|c| ("deny", format!("Shell({c})"))));
    rules
}

fn single_word(commands: &'static [&'static str]) -> impl Iterator<Item = &'static str> {
    commands.iter().copied().filter(|c| !c.contains(' '))
}

/// What Cursor's rules cannot express, for the install summary.
pub fn cursor_gaps() -> String {
    let multi: Vec<&str> = EXTERNAL.iter().copied().filter(|c| c.contains(' ')).collect();
    format!(
        "Cursor's permission rules match a command's first word only, so {} cannot be denied without denying \
         the whole program; Cursor asks before running them. It has no \"ask\" list: file writes that are not \
         allowed are asked about by default. These rules apply to the Cursor CLI (`cursor-agent`).",
        multi.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
    )
}

fn quoted(items: &[&str]) -> String {
    items.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(", ")
}

/// Codex command rules (`rules/agentfw.rules`). Codex decides file reads and edits with
/// its sandbox (set to `workspace-write` by the installer) and its approval policy.
pub fn codex_rules() -> String {
    let mut out = String::from(
        "# Written by `agentfw install codex`: the permission overlay for commands.\n\
         # `agentfw uninstall codex` removes this file. Edits here are kept as yours.\n",
    );
    let mut rule = |words: &str, decision: &str, why: &str| {
        let pattern: Vec<&str> = words.split(' ').collect();
        out.push_str(&format!(
            "\nprefix_rule(\n    pattern = [{}],\n    decision = \"{decision}\",\n    justification = \"{why}\",\n)\n",
            quoted(&pattern)
        ));
    };
    for c in TESTS {
        rule(c, "allow", "running the project's tests is allowed");
    }
    for c in WRITE_COMMANDS {
        rule(c, "prompt", "changes to the repository are asked about");
    }
    for c in EXTERNAL {
        rule(c, "forbidden", DENY_REASON);
    }
    for c in ADMIN_COMMANDS {
        rule(&format!("agentfw {c}"), "forbidden", ADMIN_REASON);
    }
    out
}

/// Gemini CLI policy rules (`policies/agentfw.toml`).
pub fn gemini_policy() -> String {
    format!(
        "# Written by `agentfw install gemini`: the permission overlay.\n\
         # `agentfw uninstall gemini` removes this file. Edits here are kept as yours.\n\
         \n\
         [[rule]]\n\
         toolName = [\"read_file\", \"read_many_files\", \"list_directory\", \"glob\", \"search_file_content\", \"grep_search\"]\n\
         decision = \"allow\"\n\
         priority = 100\n\
         \n\
         [[rule]]\n\
         toolName = \"run_shell_command\"\n\
         commandPrefix = [{tests}]\n\
         decision = \"allow\"\n\
         priority = 100\n\
         \n\
         [[rule]]\n\
         mcpName = \"agentfw\"\n\
         decision = \"allow\"\n\
         priority = 100\n\
         \n\
         [[rule]]\n\
         toolName = [\"write_file\", \"replace\"]\n\
         decision = \"ask_user\"\n\
         priority = 100\n\
         \n\
         [[rule]]\n\
         toolName = \"run_shell_command\"\n\
         commandPrefix = [{writes}]\n\
         decision = \"ask_user\"\n\
         priority = 100\n\
         \n\
         [[rule]]\n\
         toolName = \"run_shell_command\"\n\
         commandPrefix = [{external}]\n\
         decision = \"deny\"\n\
         priority = 900\n\
         denyMessage = \"{DENY_REASON}\"\n",
        tests = quoted(TESTS),
        writes = quoted(WRITE_COMMANDS),
        external = quoted(EXTERNAL),
    )
}
