//! The admission gate (AD1–AD8): the shared vectors under `vectors/admission/`, the gate in
//! the firewall on send and delivery, harness config parsing, and bad input.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use agentfw_core::admission::{
    Admission, AdmissionConfig, Component, ComponentId, HarnessFile, Inventory, Mode, Score, configured_servers,
    import_cisco_mcp_scanner,
};
use agentfw_core::firewall::{AdminAction, Config, Event, Firewall, Output, Verdict};
use agentfw_core::message::Agent;
use agentfw_core::sim::Sim;
use agentfw_core::time::Timestamp;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::Value;

fn vector_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("vectors").join("admission").join(name)
}

fn load(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(vector_path(name)).unwrap()).unwrap()
}

fn gate(inventory: &Value, threshold: &Value, mode: &str, exceptions: &Value) -> Admission {
    let exceptions: BTreeSet<ComponentId> =
        exceptions.as_array().unwrap().iter().map(|e| ComponentId::new(e.as_str().unwrap()).unwrap()).collect();
    let config = AdmissionConfig {
        mode: mode.parse().unwrap(),
        threshold: Score::new(threshold.as_f64().unwrap()).unwrap(),
        exceptions,
        ..AdmissionConfig::default()
    };
    let mut admission = Admission::new(config);
    admission.set_inventory(Inventory::from_json(&inventory.to_string()).unwrap());
    admission
}

#[test]
fn vectors_verdicts() {
    let file = load("verdicts.json");
    let mut failures = Vec::new();
    for case in file["cases"].as_array().unwrap() {
        let a = gate(&case["inventory"], &case["threshold"], case["mode"].as_str().unwrap(), &case["exceptions"]);
        let got: Vec<Value> = a
            .evaluate_all()
            .iter()
            .map(|e| serde_json::json!({"agent": e.agent, "admitted": e.admitted, "line": e.line(a.mode())}))
            .collect();
        if got != case["want"].as_array().unwrap().as_slice() {
            failures.push(format!("{}:\n  got  {}\n  want {}", case["note"], Value::from(got), case["want"]));
        }
    }
    for case in file["previews"].as_array().unwrap() {
        let a = gate(&case["inventory"], &case["current"], "enforce", &case["exceptions"]);
        let got = a.preview(Score::new(case["threshold"].as_f64().unwrap()).unwrap()).to_string();
        if got != case["want"].as_str().unwrap() {
            failures.push(format!("{}:\n  got  {got:?}\n  want {:?}", case["note"], case["want"]));
        }
    }
    for case in file["errors"].as_array().unwrap() {
        let got = Inventory::from_json(case["text"].as_str().unwrap()).map(|_| ()).unwrap_err().to_string();
        if got != case["error"].as_str().unwrap() {
            failures.push(format!("{}:\n  got  {got:?}\n  want {:?}", case["note"], case["error"]));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn vectors_import() {
    let file = load("import.json");
    let mut failures = Vec::new();
    for case in file["cases"].as_array().unwrap() {
        let text = match case["report"].as_str() {
            Some(name) => std::fs::read_to_string(vector_path(name)).unwrap(),
            None => case["report_text"].as_str().unwrap().to_owned(),
        };
        let got = import_cisco_mcp_scanner(&text, case["server"].as_str()).unwrap();
        let ratings: serde_json::Map<String, Value> = got
            .ratings
            .iter()
            .map(|(id, s)| (id.to_string(), s.map_or(Value::Null, |s| Value::from(s.as_f64()))))
            .collect();
        if Value::Object(ratings.clone()) != case["ratings"] || Value::from(got.notes.clone()) != case["notes"] {
            failures.push(format!("{}: got {} {:?}", case["note"], Value::Object(ratings), got.notes));
        }
    }
    for case in file["errors"].as_array().unwrap() {
        let got = import_cisco_mcp_scanner(case["report_text"].as_str().unwrap(), case["server"].as_str())
            .map(|_| ())
            .unwrap_err()
            .to_string();
        if got != case["error"].as_str().unwrap() {
            failures.push(format!("{}:\n  got  {got:?}\n  want {:?}", case["note"], case["error"]));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---- The gate in the firewall -------------------------------------------------------------

const INVENTORY: &str = r#"{"agents": [
  {"agent": "web (claude)", "components": [{"id": "mcp:github", "score": 7.5}, {"id": "skill:deploy", "score": 2.0}]},
  {"agent": "api (codex)", "components": [{"id": "mcp:filesystem", "score": 2.0}]}]}"#;

const T0: u64 = 1_796_047_500_000;

fn web() -> Agent {
    Agent::new("claude:4242:1796047400000", "claude", "web")
}

fn api() -> Agent {
    Agent::new("codex:4343:1796047410000", "codex", "api")
}

fn newcomer() -> Agent {
    Agent::new("gemini:5151:1796047490000", "gemini", "docs")
}

fn sim(mode: Mode) -> Sim<ChaCha20Rng> {
    let config = Config { admission: AdmissionConfig { mode, ..AdmissionConfig::default() }, ..Config::default() };
    let mut sim = Sim::new(Firewall::new(config), Timestamp::from_millis(T0), ChaCha20Rng::seed_from_u64(4));
    sim.admin(AdminAction::SetInventory { inventory: Inventory::from_json(INVENTORY).unwrap() });
    sim
}

fn refusal(out: &Output) -> (&str, String) {
    match out {
        Output::Refused(r) => (r.reason.code.as_str(), r.message()),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn an_agent_with_a_high_component_is_refused_on_send_and_admitted_with_a_warning_in_report_mode() {
    // Enforcing: refused, and the refusal names the component (AD2, AD3).
    let mut s = sim(Mode::Enforce);
    let out = s.send(&web(), &api(), "What JSON should /health return?");
    assert_eq!(
        refusal(&out),
        (
            "admission.refused",
            "refused: your agent is not admitted to the network: mcp:github is HIGH (7.5)".to_owned()
        )
    );
    assert_eq!(s.waiting(&api()), 0);
    let denied = s.events().iter().any(|e| {
        matches!(e, Event::Decision(d) if d.verdict == Verdict::Deny
        && d.reason.as_ref().is_some_and(|r| r.code == "admission.refused"))
    });
    assert!(denied, "the refusal is in the audit log");

    // Report-only: admitted, with the warning shown and recorded (AD6).
    let mut s = sim(Mode::Report);
    let Output::Accepted { warnings, .. } = s.send(&web(), &api(), "What JSON should /health return?") else {
        panic!("report mode admits")
    };
    assert_eq!(warnings.len(), 1);
    assert_eq!(warnings[0].code, "admission.would_refuse");
    assert_eq!(warnings[0].text, "would refuse: your agent is not admitted to the network: mcp:github is HIGH (7.5)");
    assert!(s.events().iter().any(|e| matches!(e, Event::WouldRefuse { agent, .. } if *agent == web().id)));
    // On delivery the recipient's side warns about the sender too.
    let outs = s.read(&api());
    let Output::Delivered { warnings, .. } = &outs[0] else { panic!("{outs:?}") };
    assert_eq!(
        warnings.iter().map(|w| w.text.as_str()).collect::<Vec<_>>(),
        ["would refuse: the sender, web (claude), is not admitted to the network: mcp:github is HIGH (7.5)"]
    );
}

#[test]
fn an_admitted_agent_gets_through_without_warnings() {
    let mut s = sim(Mode::Enforce);
    let Output::Accepted { warnings, .. } = s.send(&api(), &newcomer(), "hi") else { panic!() };
    assert!(warnings.is_empty());
}

#[test]
fn exceptions_are_per_component_and_the_threshold_stays() {
    let mut s = sim(Mode::Enforce);
    let github = ComponentId::mcp("github").unwrap();
    s.admin(AdminAction::Except { component: github.clone() });
    assert!(matches!(s.send(&web(), &api(), "hello"), Output::Accepted { .. }));
    assert_eq!(s.firewall.admission().threshold(), Score::DEFAULT_THRESHOLD);
    // Another component of the same agent over the threshold still keeps it out.
    s.admin(AdminAction::SetComponents {
        agent: "web (claude)".into(),
        components: vec![
            Component::rated(github.clone(), Score::new(7.5).unwrap()),
            Component::rated(ComponentId::skill("deploy").unwrap(), Score::new(9.5).unwrap()),
        ],
    });
    assert_eq!(
        refusal(&s.send(&web(), &api(), "hello again")).1,
        "refused: your agent is not admitted to the network: skill:deploy is CRITICAL (9.5)"
    );
    s.admin(AdminAction::Unexcept { component: github });
    assert_eq!(
        refusal(&s.send(&web(), &api(), "and again")).1,
        "refused: your agent is not admitted to the network: skill:deploy is CRITICAL (9.5)"
    );
}

#[test]
fn the_threshold_and_mode_are_admin_inputs() {
    let mut s = sim(Mode::Enforce);
    s.admin(AdminAction::SetAdmissionThreshold { threshold: Score::new(8.0).unwrap() });
    assert!(matches!(s.send(&web(), &api(), "one"), Output::Accepted { .. }));
    s.admin(AdminAction::SetAdmissionThreshold { threshold: Score::parse_threshold("high").unwrap() });
    assert_eq!(refusal(&s.send(&web(), &api(), "two")).0, "admission.refused");
    s.admin(AdminAction::SetAdmissionMode { mode: Mode::Off });
    assert!(matches!(s.send(&web(), &api(), "three"), Output::Accepted { warnings, .. } if warnings.is_empty()));
}

#[test]
fn unknown_means_no_after_one_refresh_on_the_first_send() {
    let mut s = sim(Mode::Enforce);
    // First send of a brand-new session: refused for now, and the adapter is asked to refresh.
    let out = s.send(&newcomer(), &api(), "hello");
    assert_eq!(
        refusal(&out),
        (
            "admission.refresh",
            "refused: your agent is not admitted to the network yet: agentfw is looking up its components; retry in a few seconds"
                .to_owned()
        )
    );
    let refreshes: Vec<_> = s.events().iter().filter(|e| matches!(e, Event::AdmissionRefresh { .. })).collect();
    assert_eq!(refreshes, [&Event::AdmissionRefresh { agent: newcomer() }]);
    // Still unknown on the retry: the reason says so and to retry in a few seconds.
    let out = s.send(&newcomer(), &api(), "hello");
    assert_eq!(
        refusal(&out),
        (
            "admission.unknown",
            "refused: your agent is not admitted to the network: it is not in the admission inventory yet; retry in a few seconds, and if it persists ask your user"
                .to_owned()
        )
    );
    assert_eq!(s.events().iter().filter(|e| matches!(e, Event::AdmissionRefresh { .. })).count(), 1, "one refresh");
    // The refresh lands (the adapter sets the agent's components): admitted.
    s.admin(AdminAction::SetComponents {
        agent: "docs (gemini)".into(),
        components: vec![Component::rated(ComponentId::mcp("docs").unwrap(), Score::new(1.0).unwrap())],
    });
    assert!(matches!(s.send(&newcomer(), &api(), "hello"), Output::Accepted { .. }));
}

#[test]
fn an_unrated_component_is_unknown_too() {
    let mut s = sim(Mode::Enforce);
    s.admin(AdminAction::SetComponents {
        agent: "docs (gemini)".into(),
        components: vec![Component::unrated(ComponentId::mcp("mystery").unwrap())],
    });
    assert_eq!(refusal(&s.send(&newcomer(), &api(), "x")).0, "admission.refresh");
    assert_eq!(
        refusal(&s.send(&newcomer(), &api(), "x")).1,
        "refused: your agent is not admitted to the network: mcp:mystery has no risk rating yet; retry in a few seconds, and if it persists ask your user"
    );
}

#[test]
fn the_one_refresh_is_remembered_for_an_hour() {
    let mut s = sim(Mode::Enforce);
    s.send(&newcomer(), &api(), "x");
    assert_eq!(s.firewall.poll_timeout(), Some(Timestamp::from_millis(T0) + Duration::from_secs(3600)));
    s.advance(Duration::from_secs(3600));
    assert_eq!(refusal(&s.send(&newcomer(), &api(), "x")).0, "admission.refresh", "a new hour, a new refresh");
}

#[test]
fn delivery_checks_the_recipient_and_the_sender_again() {
    // The recipient: not checked on send (its daemon may not know it), refused on delivery.
    let mut s = sim(Mode::Enforce);
    assert!(matches!(s.send(&api(), &web(), "hi web"), Output::Accepted { .. }));
    let outs = s.read(&web());
    assert_eq!(
        refusal(&outs[0]),
        (
            "admission.refused",
            "refused: your agent is not admitted to the network: mcp:github is HIGH (7.5)".to_owned()
        )
    );

    // The sender: admitted on send, then the verdict changed before delivery (AD8).
    let mut s = sim(Mode::Enforce);
    let github = ComponentId::mcp("github").unwrap();
    s.admin(AdminAction::Except { component: github.clone() });
    assert!(matches!(s.send(&web(), &api(), "hi api"), Output::Accepted { .. }));
    s.admin(AdminAction::Unexcept { component: github });
    let outs = s.read(&api());
    assert_eq!(
        refusal(&outs[0]).1,
        "refused: the sender, web (claude), is not admitted to the network: mcp:github is HIGH (7.5)"
    );
}

#[test]
fn delivery_to_an_unknown_recipient_waits_once_for_its_refresh() {
    let mut s = sim(Mode::Enforce);
    assert!(matches!(s.send(&api(), &newcomer(), "welcome"), Output::Accepted { .. }));
    let outs = s.read(&newcomer());
    let Output::Held { until, reason, .. } = &outs[0] else { panic!("{outs:?}") };
    assert_eq!(reason.code, "admission.refresh");
    assert_eq!(*until, Timestamp::from_millis(T0) + Duration::from_secs(5));
    assert!(s.events().iter().any(|e| matches!(e, Event::AdmissionRefresh { agent } if *agent == newcomer())));
    assert_eq!(s.waiting(&newcomer()), 1, "held, not lost");
    // The refresh found nothing: the next attempt refuses.
    s.advance(Duration::from_secs(5));
    let outs = s.read(&newcomer());
    assert_eq!(refusal(&outs[0]).0, "admission.unknown");
}

#[test]
fn the_inventory_finds_an_agent_by_id_before_its_label() {
    let mut s = sim(Mode::Enforce);
    s.admin(AdminAction::SetComponents { agent: web().id.to_string(), components: vec![] });
    assert!(matches!(s.send(&web(), &api(), "x"), Output::Accepted { .. }), "this session's own entry wins");
    let other_web = Agent::new("claude:9999:1796047499000", "claude", "web");
    assert_eq!(refusal(&s.send(&other_web, &api(), "x")).0, "admission.refused", "other sessions go by the label");
}

#[test]
fn admission_is_off_by_default_for_embedders() {
    let mut fw = Sim::new(Firewall::new(Config::default()), Timestamp::from_millis(T0), ChaCha20Rng::seed_from_u64(1));
    assert!(matches!(fw.send(&newcomer(), &api(), "x"), Output::Accepted { warnings, .. } if warnings.is_empty()));
    assert!(!fw.events().iter().any(|e| matches!(e, Event::AdmissionRefresh { .. } | Event::WouldRefuse { .. })));
}

#[test]
fn admission_state_survives_a_snapshot() {
    let mut s = sim(Mode::Enforce);
    s.admin(AdminAction::Except { component: ComponentId::mcp("github").unwrap() });
    s.send(&newcomer(), &api(), "x"); // uses its refresh
    let json = serde_json::to_string(&s.firewall.snapshot()).unwrap();
    let restored = Firewall::restore(serde_json::from_str(&json).unwrap());
    assert_eq!(restored.admission(), s.firewall.admission());
    let mut s2 = Sim::new(restored, s.now, ChaCha20Rng::seed_from_u64(2));
    assert!(matches!(s2.send(&web(), &api(), "x"), Output::Accepted { .. }));
    assert_eq!(refusal(&s2.send(&newcomer(), &api(), "x")).0, "admission.unknown", "the refresh was spent");
}

#[test]
fn previews_count_agents_kept_out() {
    let s = sim(Mode::Report);
    let p = s.firewall.admission().preview(Score::new(2.0).unwrap());
    assert_eq!((p.total, p.kept_out.len(), p.newly_kept_out, p.newly_admitted), (2, 2, 1, 0));
    let p = s.firewall.admission().preview(Score::new(9.0).unwrap());
    assert_eq!((p.kept_out.len(), p.newly_admitted), (0, 1));
    assert_eq!(p.to_string(), "threshold 9.0 (CRITICAL) keeps out 0 of 2 agents (1 fewer than the current 7.0)");
}

// ---- Harness config files -----------------------------------------------------------------

fn ids(list: &[ComponentId]) -> Vec<&str> {
    list.iter().map(ComponentId::as_str).collect()
}

#[test]
fn claude_code_user_file_has_user_and_per_project_servers() {
    let text = r#"{
      "hasCompletedOnboarding": true,
      "mcpServers": {"agentfw": {"type": "stdio", "command": "agentfw", "args": ["mcp"], "env": {}},
                     "github": {"type": "http", "url": "https://example.invalid/mcp"}},
      "projects": {
        "/home/dev/src/web": {"hasTrustDialogAccepted": true, "mcpServers": {"db": {"command": "db-mcp"}}},
        "/home/dev/src/api": {"mcpServers": {"other": {"command": "x"}}}
      }
    }"#;
    let f = HarnessFile::ClaudeUser;
    assert_eq!(
        ids(&configured_servers(f, text, Some("/home/dev/src/web")).unwrap()),
        ["mcp:agentfw", "mcp:db", "mcp:github"]
    );
    assert_eq!(ids(&configured_servers(f, text, None).unwrap()), ["mcp:agentfw", "mcp:github"]);
    assert_eq!(ids(&configured_servers(f, text, Some("/elsewhere")).unwrap()), ["mcp:agentfw", "mcp:github"]);
    assert!(configured_servers(f, "{}", None).unwrap().is_empty());
}

#[test]
fn claude_code_project_file() {
    let text = r#"{"mcpServers": {"agentfw": {"type": "stdio", "command": "agentfw", "args": ["mcp"]}}}"#;
    assert_eq!(ids(&configured_servers(HarnessFile::ClaudeProject, text, None).unwrap()), ["mcp:agentfw"]);
}

#[test]
fn codex_config_toml_respects_enabled_false() {
    let text = r#"
model = "gpt-5"
[model_providers.fake]
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"

[mcp_servers.agentfw]
command = "/usr/local/bin/agentfw"
args = ["mcp"]
required = true
startup_timeout_sec = 60
[mcp_servers.agentfw.tools.send_message]
approval_mode = "approve"

[mcp_servers.old]
command = "old-mcp"
enabled = false

[mcp_servers.github]
url = "https://example.invalid/mcp"
enabled = true
"#;
    assert_eq!(ids(&configured_servers(HarnessFile::CodexConfig, text, None).unwrap()), ["mcp:agentfw", "mcp:github"]);
}

#[test]
fn cursor_and_gemini_files_may_carry_comments() {
    let cursor =
        "// my servers\n{\"mcpServers\": {\"linear\": {\"command\": \"npx\", \"args\": [\"-y\", \"linear-mcp\"]}}}";
    assert_eq!(ids(&configured_servers(HarnessFile::CursorMcp, cursor, None).unwrap()), ["mcp:linear"]);
    let gemini = r#"{
      /* trusted */ "mcpServers": {"agentfw": {"command": "agentfw", "args": ["mcp"]}},
      "hooks": {"SessionStart": []}
    }"#;
    assert_eq!(ids(&configured_servers(HarnessFile::GeminiSettings, gemini, None).unwrap()), ["mcp:agentfw"]);
}

#[test]
fn configured_servers_and_imported_ratings_make_an_inventory() {
    let claude = r#"{"mcpServers": {"github": {"command": "gh-mcp"}, "shell": {"command": "sh-mcp"}, "fresh": {"command": "f"}}}"#;
    let servers = configured_servers(HarnessFile::ClaudeProject, claude, None).unwrap();
    let report = std::fs::read_to_string(vector_path("cisco-mcp-scanner-report.json")).unwrap();
    let imported = import_cisco_mcp_scanner(&report, None).unwrap();
    let mut inventory = Inventory::default();
    inventory.insert_rated("web (claude)", servers, &imported.ratings);
    let mut gate = Admission::new(AdmissionConfig { mode: Mode::Enforce, ..AdmissionConfig::default() });
    gate.set_inventory(inventory.clone());
    assert_eq!(gate.evaluate("web (claude)").line(Mode::Enforce), "web (claude): refused: mcp:github is HIGH (7.0)");
    // The inventory written out reads back the same, in the spec's format.
    let json = inventory.to_json();
    assert!(json.contains("\"agent\": \"web (claude)\""), "{json}");
    assert_eq!(Inventory::from_json(&json).unwrap(), inventory);
}

// ---- Bad input ----------------------------------------------------------------------------

#[test]
fn malformed_harness_configs_name_the_file_and_the_problem() {
    let cases: [(HarnessFile, &str, &str); 9] = [
        (
            HarnessFile::ClaudeUser,
            "{\"mcpServers\": []}",
            "Claude Code `~/.claude.json`: `mcpServers` must be an object of servers, found an array",
        ),
        (
            HarnessFile::ClaudeUser,
            "{\"projects\": {\"/p\": {\"mcpServers\": {\"x\": 1}}}}",
            "Claude Code `~/.claude.json`: server `x` in `mcpServers` of project `/p` must be an object, found a number",
        ),
        (
            HarnessFile::ClaudeUser,
            "{\"projects\": [1]}",
            "Claude Code `~/.claude.json`: `projects` must be an object, found an array",
        ),
        (
            HarnessFile::ClaudeProject,
            "{\"mcpServers\": {\"a\": \"agentfw mcp\"}}",
            "Claude Code `.mcp.json`: server `a` in `mcpServers` must be an object, found a string",
        ),
        (
            HarnessFile::CodexConfig,
            "[mcp_servers.a]\ncommand = \"x\"\nenabled = \"no\"\n",
            "Codex `config.toml`: `mcp_servers.a.enabled` must be true or false, found string",
        ),
        (
            HarnessFile::CodexConfig,
            "[mcp_servers.a]\ncommand = x\n",
            "Codex `config.toml`: line 2, column 11: string values must be quoted, expected literal string",
        ),
        (
            HarnessFile::CodexConfig,
            "mcp_servers = 3\n",
            "Codex `config.toml`: `mcp_servers` must be a table, found integer",
        ),
        (
            HarnessFile::CursorMcp,
            "{\"mcpServers\": {",
            "Cursor `mcp.json`: line 1, column 16: EOF while parsing an object",
        ),
        (
            HarnessFile::GeminiSettings,
            "[]",
            "Gemini `settings.json`: expected a JSON object at the top, found an array",
        ),
    ];
    let mut failures = Vec::new();
    for (file, text, want) in cases {
        match configured_servers(file, text, Some("/p")) {
            Ok(list) => failures.push(format!("{file}: {text:?} gave {list:?}")),
            Err(e) if e.to_string() != want => {
                failures.push(format!("{file}:\n  got  {:?}\n  want {want:?}", e.to_string()))
            }
            Err(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_malformed_inventory_admits_nobody() {
    // The admin's bad file is an error, and the gate keeps what it had: a firewall without
    // a usable inventory refuses everyone as unknown.
    assert!(
        Inventory::from_json(
            r#"{"agents": [{"agent": "web (claude)", "components": [{"id": "mcp:x", "score": -1}]}]}"#
        )
        .is_err()
    );
    let mut s = Sim::new(
        Firewall::new(Config {
            admission: AdmissionConfig { mode: Mode::Enforce, ..AdmissionConfig::default() },
            ..Config::default()
        }),
        Timestamp::from_millis(T0),
        ChaCha20Rng::seed_from_u64(3),
    );
    assert_eq!(refusal(&s.send(&web(), &api(), "x")).0, "admission.refresh");
    assert_eq!(refusal(&s.send(&web(), &api(), "x")).0, "admission.unknown");
}

#[test]
fn scores_thresholds_and_modes_parse_with_clear_errors() {
    assert_eq!(
        Score::parse_threshold("severe").unwrap_err().to_string(),
        "`severe` is not a threshold: give a score from 0 to 10 or a level (LOW, MEDIUM, HIGH, CRITICAL)"
    );
    assert_eq!("11".parse::<Score>().unwrap_err().to_string(), "`11` is not a risk score: scores run from 0 to 10");
    assert_eq!(
        "strict".parse::<Mode>().unwrap_err().to_string(),
        "`strict` is not an admission mode: use `off`, `report` or `enforce`"
    );
    assert_eq!("Report".parse::<Mode>().unwrap(), Mode::Report);
}
