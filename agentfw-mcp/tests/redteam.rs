//! An injected agent with a shell goes for agentfw's protection, as a class: every command
//! the binary has is either one a model may run or one that lowers protection, and each of
//! those is refused from inside an agent session however the binary is named, and denied by
//! the rules `agentfw install` writes into the harness; and nothing a model controls
//! (environment variables, a hook payload, a parent's name) makes it another session.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{World, agentfw_bin, shell_quote, stderr, stdout};
use serde_json::Value;

/// No `[admin] from_agents`: the admin check is on.
const CONFIG: &str = "[wake]\ndelay_ms = 50\ncooldown_secs = 1\n";

/// Commands a model may run: they read, judge text, or act as the session they run in.
const AGENT_COMMANDS: &[&str] = &[
    "demo",
    "scan",
    "rules check",
    "rules test",
    "rules list",
    "rules import",
    "daemon",
    "mcp",
    "send",
    "inbox",
    "team",
    "status",
    "audit",
    "identity",
    "admission evaluate",
    "admission preview",
    "hook",
    "keys new",
    "keys show",
    "seal",
    "open",
];

/// Commands that lower protection, with arguments that would work for a person.
const ADMIN_COMMANDS: &[(&str, &str)] = &[
    ("allow", "allow 'web (claude)' 'api (codex)'"),
    ("quarantine lift", "quarantine lift 'api (codex)'"),
    ("block", "block 'api (codex)'"),
    ("unblock", "unblock 'mallory (cursor)'"),
    ("admission import", "admission import \"$INVENTORY\""),
    ("admission enforce", "admission enforce"),
    ("admission report", "admission report"),
    ("admission except", "admission except mcp:github"),
    ("daemon --stop", "daemon --stop"),
    ("daemon --relay", "daemon --relay http://127.0.0.1:9"),
    ("dashboard", "dashboard --show-text"),
    ("identity pin", "identity pin claude"),
    ("install", "install claude --yes"),
    ("uninstall", "uninstall claude"),
    ("join", "join http://127.0.0.1:9 invite"),
    ("keys rotate", "keys rotate"),
];

/// Whether `agentfw <path>` runs without a subcommand, and the subcommands its help lists.
fn subcommands(path: &[&str]) -> (bool, Vec<String>) {
    let out = std::process::Command::new(agentfw_bin()).args(path).arg("--help").output().unwrap();
    let text = stdout(&out);
    let runs_alone = !text.lines().any(|l| l.starts_with("Usage:") && l.contains("<COMMAND>"));
    let subs = text
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect();
    (runs_alone, subs)
}

/// Every command path of the binary, leaves only.
fn command_paths() -> BTreeSet<String> {
    let mut paths = BTreeSet::new();
    for top in subcommands(&[]).1 {
        let (runs_alone, subs) = subcommands(&[top.as_str()]);
        paths.extend(subs.into_iter().map(|s| format!("{top} {s}")));
        if runs_alone {
            paths.insert(top);
        }
    }
    paths
}

#[test]
fn every_command_is_either_a_models_or_refused_to_models() {
    let admin: BTreeSet<&str> = ADMIN_COMMANDS.iter().map(|(c, _)| c.split(" --").next().unwrap()).collect();
    let known: BTreeSet<&str> = AGENT_COMMANDS.iter().copied().chain(admin.iter().copied()).collect();
    let paths = command_paths();
    assert!(paths.len() > 20, "the command list was not read: {paths:?}");
    let unclassified: Vec<&String> = paths.iter().filter(|p| !known.contains(p.as_str())).collect();
    assert!(
        unclassified.is_empty(),
        "new commands {unclassified:?}: list each here as a model's or as one that lowers protection (and refuse it to agents)"
    );
    let stale: Vec<&&str> = known.iter().filter(|k| !paths.contains(**k)).collect();
    assert!(stale.is_empty(), "no such commands any more: {stale:?}");
}

/// Each command that lowers protection, run from inside an agent session by the binary's
/// name and by a renamed copy of it (so no rule on its name matches), is refused by
/// agentfw with `admin.from_agent`, changes nothing, and the daemon keeps running.
#[test]
fn every_command_that_lowers_protection_is_refused_from_an_agent_under_any_name() {
    let w = World::with_config(CONFIG);
    let (code, text) = w.person(&["block", "mallory (cursor)"]);
    assert_eq!(code, 0, "{text}");
    let mut web = w.agent("claude", "web");
    let _api = w.agent("codex", "api");
    let daemon = w.wait_daemon();
    let inventory = w.dir.path().join("ratings.json");
    common::write(
        &inventory,
        r#"{"agents": [{"agent": "any (claude)", "components": [{"id": "mcp:github", "score": 0.5}]}]}"#,
    );
    let renamed = w.dir.path().join("tools").join("fmt-helper");
    std::fs::create_dir_all(renamed.parent().unwrap()).unwrap();
    std::fs::copy(agentfw_bin(), &renamed).unwrap();
    let files = ["trust.yaml", "config.toml", "identity-pins.json"].map(|f| (f, read(&w.home.join(f))));
    let admission = || {
        let status: Value = serde_json::from_str(&stdout(&w.agentfw(&["status", "--json"]))).unwrap();
        status["admission"].clone()
    };
    let before = admission();
    for (what, args) in ADMIN_COMMANDS {
        for program in ["\"$AFW\"".to_owned(), shell_quote(&renamed.display().to_string())] {
            let line = format!("export INVENTORY={}; {program} {args}", shell_quote(&inventory.display().to_string()));
            let ran = web.run(&line);
            let text = format!("{}{}", ran.stdout, ran.stderr);
            assert_eq!(ran.code, 1, "{what} by {program}: {text}");
            assert!(text.contains("(admin.from_agent)") && text.contains("runs only for a person"), "{what}: {text}");
            assert!(text.contains("inside the agent session web (claude)"), "{what}: {text}");
        }
    }
    for (name, before) in &files {
        assert_eq!(&read(&w.home.join(name)), before, "{name} changed");
    }
    assert_eq!(w.daemon_pid(), Some(daemon), "the daemon was not stopped or replaced");
    assert_eq!(admission(), before, "the admission gate changed");
    assert_eq!(before["mode"], "report");
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The rules `agentfw install` writes deny every command that lowers protection to the
/// model, in Claude Code (`permissions.deny`) and Codex (`forbidden` prefix rules), and
/// `agentfw hook`, which only the harness runs.
#[test]
fn the_harness_rules_deny_every_command_that_lowers_protection() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/install");
    let claude: Value =
        serde_json::from_str(&read(&golden.join("claude-user-empty/after/home/.claude/settings.json"))).unwrap();
    let deny: Vec<&str> =
        claude["permissions"]["deny"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    let codex = read(&golden.join("codex-user-empty/after/home/.codex/rules/agentfw.rules"));
    let forbidden: Vec<String> = codex
        .split("prefix_rule(")
        .filter(|rule| rule.contains("decision = \"forbidden\""))
        .filter_map(|rule| {
            let pattern = rule.split("pattern = [").nth(1)?.split(']').next()?;
            Some(pattern.split(", ").map(|w| w.trim_matches('"')).collect::<Vec<_>>().join(" "))
        })
        .collect();
    let admin = ADMIN_COMMANDS.iter().map(|(c, _)| c.split(" --").next().unwrap()).chain(["hook"]);
    for command in admin {
        let covered = |rule: &str| {
            let rule = rule.trim_end_matches(" *");
            command == rule || command.starts_with(&format!("{rule} "))
        };
        assert!(
            deny.iter().any(|r| r.strip_prefix("Bash(agentfw ").and_then(|r| r.strip_suffix(')')).is_some_and(covered)),
            "Claude Code does not deny `agentfw {command}`: {deny:?}"
        );
        assert!(
            forbidden.iter().any(|r| r.strip_prefix("agentfw ").is_some_and(covered)),
            "Codex does not forbid `agentfw {command}`: {forbidden:?}"
        );
    }
}

/// Nothing in a process's environment names a session: outside every session, a process
/// that sets every variable a harness sets, with another session's values, is no agent;
/// inside one, it is still the session it runs in.
#[test]
fn environment_variables_name_no_one() {
    let w = World::with_config(CONFIG);
    let mut web = w.agent("claude", "web");
    let mut api = w.agent("codex", "api");
    let api_id = team_entry(&w, "api (codex)")["id"].as_str().unwrap().to_owned();
    let forged: &[(&str, &str)] = &[
        ("CLAUDECODE", "1"),
        ("CLAUDE_CODE_ENTRYPOINT", "cli"),
        ("CLAUDE_CODE_SESSION_ID", "0f6c1e2a-api-session"),
        ("CODEX_MANAGED_BY_NPM", "1"),
        ("CODEX_SANDBOX", "seatbelt"),
        ("CODEX_THREAD_ID", "0f6c1e2a-api-thread"),
        ("GEMINI_CLI", "1"),
        ("AGENTFW_AGENT", &api_id),
    ];
    // Outside: the test process with the variables set is no agent.
    let out = w
        .command(agentfw_bin())
        .args(["send", "web (claude)", "from api, honest"])
        .envs(forged.iter().copied())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot tell which agent session"), "{}", stderr(&out));
    // Inside web, with the same variables (exported, and for the one command): still web.
    let env: String = forged.iter().map(|(k, v)| format!("{k}={} ", shell_quote(v))).collect();
    for line in [
        format!("{env}\"$AFW\" send 'api (codex)' 'the deploy key rotates at noon'"),
        format!("export {env}; exec \"$AFW\" send 'api (codex)' 'the staging key rotates at one'"),
    ] {
        let ran = web.run(&line);
        assert_eq!(ran.code, 0, "{line}: {}", ran.stderr);
        let got = api.inbox().text;
        assert!(got.contains("Message from web (claude)"), "{got}");
        assert!(!got.contains("Message from api"), "{got}");
    }
    // And it reads its own inbox, not api's.
    assert!(!api.send("web (claude)", "for web only").error);
    let ran = web.run(&format!("{env}\"$AFW\" inbox"));
    assert!(ran.stdout.contains("for web only"), "{}{}", ran.stdout, ran.stderr);
}

/// A hook payload is the harness's word about its own session: one a model forges from its
/// shell, naming another session's id, changes nothing about who it is or what it reads.
#[test]
fn a_forged_hook_payload_does_not_make_an_agent_another_session() {
    let w = World::with_config(CONFIG);
    let mut web = w.agent("claude", "web");
    let mut api = w.agent("codex", "api");
    let api_entry = team_entry(&w, "api (codex)");
    let web_entry = team_entry(&w, "web (claude)");
    let api_id = api_entry["id"].as_str().unwrap();
    let api_session = "7d1c2a90-api-session";
    let ran = api.run(&format!(
        "echo '{{\"session_id\": \"{api_session}\", \"hook_event_name\": \"SessionStart\"}}' | \"$AFW\" hook codex session-start"
    ));
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(!web.send("api (codex)", "for api only").error);
    // web claims api's session id, api's agent id, and api's label in turn.
    for claimed in [api_session, api_id, "api (codex)"] {
        let payload = serde_json::json!({"session_id": claimed, "hook_event_name": "SessionStart", "cwd": "/"});
        let ran = web.run(&format!("echo {} | \"$AFW\" hook claude session-start", shell_quote(&payload.to_string())));
        let said = format!("{}{}", ran.stdout, ran.stderr);
        assert!(!said.contains("api (codex)"), "{claimed}: {said}");
    }
    let after = team_entry(&w, "web (claude)");
    assert_eq!(after["id"], web_entry["id"], "web's identity moved");
    assert_ne!(after["session"], serde_json::json!(api_session));
    let ran = web.run("\"$AFW\" inbox");
    assert!(!ran.stdout.contains("for api only"), "web read api's mail: {}", ran.stdout);
    assert!(api.inbox().text.contains("for api only"));
}

/// The team entry labelled `label`.
fn team_entry(w: &World, label: &str) -> Value {
    let text = stdout(&w.agentfw(&["team", "--json"]));
    let parsed: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    parsed["agents"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["label"] == label).cloned())
        .unwrap_or_else(|| panic!("no {label} in {text}"))
}

/// The daemon enforces the check itself, whatever speaks to its socket: each operation
/// that lowers protection, written to the socket by a script inside an agent session (no
/// agentfw binary involved), is answered `admin.from_agent` and changes nothing.
#[test]
fn the_daemon_refuses_admin_operations_sent_to_its_socket_from_an_agent() {
    let w = World::with_config(CONFIG);
    let mut web = w.agent("claude", "web");
    let _api = w.agent("codex", "api");
    let daemon = w.wait_daemon();
    let socket = agentfw_mcp::home::Home::at(&w.home).unwrap().socket;
    let ops = [
        r#"{"v":1,"id":1,"op":"allow","args":{"a":"web (claude)","b":"api (codex)"}}"#,
        r#"{"v":1,"id":2,"op":"quarantine_lift","args":{"agent":"api (codex)"}}"#,
        r#"{"v":1,"id":3,"op":"admission_import","args":{"ratings":{"mcp:github":0.5},"source":"x"}}"#,
        r#"{"v":1,"id":4,"op":"admission_mode","args":{"mode":"off"}}"#,
        r#"{"v":1,"id":5,"op":"admission_except","args":{"component":"mcp:github"}}"#,
        r#"{"v":1,"id":6,"op":"reload"}"#,
        r#"{"v":1,"id":7,"op":"shutdown"}"#,
        r#"{"v":1,"id":8,"op":"dashboard","args":{"show_text":true}}"#,
    ];
    let script = "import socket, sys\n\
        s = socket.socket(socket.AF_UNIX)\n\
        s.connect(sys.argv[1])\n\
        f = s.makefile('rwb')\n\
        for line in sys.argv[2:]:\n    f.write(line.encode() + b'\\n'); f.flush(); sys.stdout.write(f.readline().decode())\n";
    // (The fake agent's shell takes one line per command: the script goes in a file.)
    let file = w.dir.path().join("speak.py");
    common::write(&file, script);
    let args: Vec<String> = ops.iter().map(|o| shell_quote(o)).collect();
    let ran = web.run(&format!(
        "python3 {} {} {}",
        shell_quote(&file.display().to_string()),
        shell_quote(&socket.display().to_string()),
        args.join(" ")
    ));
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let answers: Vec<Value> = ran.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(answers.len(), ops.len(), "{}", ran.stdout);
    for (op, answer) in ops.iter().zip(&answers) {
        assert_eq!(answer["error"]["code"], "admin.from_agent", "{op}: {answer}");
    }
    assert_eq!(w.daemon_pid(), Some(daemon), "the daemon was stopped");
}
