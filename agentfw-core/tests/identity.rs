//! The identity resolver over realistic process snapshots of every harness shape in
//! `shared/HARNESSES.md`, and over corrupted ones.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use agentfw_core::identity::{IdentityConfig, IdentityError, Process, Resolver, Snapshot, StepRole, Unverified};
use agentfw_core::time::Timestamp;
use proptest::prelude::*;

const HOME: &str = "/home/dev";
const CLAUDE_EXE: &str = "/usr/lib/node_modules/@anthropic-ai/claude-code/bin/claude.exe";
const CODEX_EXE: &str = "/usr/lib/node_modules/@openai/codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/codex/codex";
const AGENTFW: &str = "/usr/local/bin/agentfw";
const BOOT: u64 = 1_796_040_000_000;

fn at(ms: u64) -> Timestamp {
    Timestamp::from_millis(BOOT + ms)
}

/// A process started `t` ms after boot.
fn proc(pid: u32, ppid: u32, t: u64, exe: &str, argv: &[&str]) -> Process {
    Process {
        pid,
        ppid,
        exe: Some(exe.to_owned()),
        argv: argv.iter().map(|a| (*a).to_owned()).collect(),
        cwd: Some(format!("{HOME}/src/web")),
        started_at: at(t),
        git_root: Some(format!("{HOME}/src/web")),
        ..Process::default()
    }
}

fn with_env(mut p: Process, k: &str, v: &str) -> Process {
    p.env.insert(k.to_owned(), v.to_owned());
    p
}

/// The desktop the agents run in: systemd, a terminal's shell.
fn desktop() -> Vec<Process> {
    let mut init = proc(1, 0, 0, "/usr/lib/systemd/systemd", &["/sbin/init"]);
    init.cwd = Some("/".into());
    init.git_root = None;
    vec![
        init,
        proc(900, 1, 100, "/usr/bin/tmux", &["tmux", "new-session"]),
        proc(901, 900, 200, "/usr/bin/bash", &["-bash"]),
    ]
}

fn resolver() -> Resolver {
    Resolver::new(IdentityConfig::default().with_home(HOME)).unwrap()
}

fn snapshot(extra: Vec<Process>) -> Snapshot {
    desktop().into_iter().chain(extra).collect()
}

#[test]
fn claude_native_with_the_server_as_its_direct_child() {
    let snap = snapshot(vec![
        proc(4242, 901, 1_000, CLAUDE_EXE, &["claude"]),
        with_env(proc(4300, 4242, 2_000, AGENTFW, &["agentfw", "mcp"]), "CLAUDE_CODE_SESSION_ID", "5b1f0c9e-1"),
    ]);
    let id = resolver().resolve(&snap, 4300).unwrap();
    assert_eq!(id.agent, "claude");
    assert_eq!((id.pid, id.started_at), (4242, at(1_000)));
    assert_eq!(id.exe.as_deref(), Some(CLAUDE_EXE));
    assert_eq!(id.label, "web (claude)");
    assert!(id.verified, "{:?}", id.unverified);
    assert!(!id.shared_host);
    assert_eq!(id.session.as_ref().unwrap().id, "5b1f0c9e-1");
    assert_eq!(
        id.agent_id().as_str(),
        format!("claude:4242:{}", BOOT + 1_000),
        "a single-session process is not refined"
    );
    let agent = id.to_agent();
    assert_eq!(
        (agent.kind.as_str(), agent.project.as_str(), agent.label().as_str()),
        ("claude", "web", "web (claude)")
    );
    assert_eq!(id.chain.iter().map(|s| s.role).collect::<Vec<_>>(), [StepRole::Start, StepRole::Agent]);
}

#[test]
fn claude_hooks_run_through_sh_c() {
    let snap = snapshot(vec![
        proc(4242, 901, 1_000, CLAUDE_EXE, &["claude"]),
        proc(4400, 4242, 3_000, "/usr/bin/dash", &["/bin/sh", "-c", "agentfw hook claude session-start"]),
        proc(4401, 4400, 3_001, AGENTFW, &["agentfw", "hook", "claude", "session-start"]),
    ]);
    let id = resolver().resolve(&snap, 4401).unwrap();
    assert_eq!((id.agent.as_str(), id.pid), ("claude", 4242));
    let names: Vec<&str> = id.chain.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["agentfw", "dash", "claude.exe"]);
}

#[test]
fn several_shell_hops_are_skipped() {
    let snap = snapshot(vec![
        proc(4242, 901, 1_000, CLAUDE_EXE, &["claude"]),
        proc(4500, 4242, 3_000, "/usr/bin/bash", &["/bin/bash", "-c", "cd api && sh -c 'agentfw send x y'"]),
        proc(4501, 4500, 3_001, "/usr/bin/dash", &["sh", "-c", "agentfw send x y"]),
        proc(4502, 4501, 3_002, "/usr/bin/env", &["env", "FOO=1", "agentfw"]),
        proc(4503, 4502, 3_003, AGENTFW, &["agentfw", "send", "x", "y"]),
    ]);
    assert_eq!(resolver().resolve(&snap, 4503).unwrap().pid, 4242);
}

#[test]
fn the_session_id_comes_from_nearest_the_agent_not_from_what_a_command_set() {
    let snap = snapshot(vec![
        proc(4242, 901, 1_000, CLAUDE_EXE, &["claude"]),
        with_env(
            proc(4500, 4242, 3_000, "/usr/bin/bash", &["bash", "-c", "CLAUDE_CODE_SESSION_ID=evil agentfw send"]),
            "CLAUDE_CODE_SESSION_ID",
            "real-session",
        ),
        with_env(proc(4501, 4500, 3_001, AGENTFW, &["agentfw", "send"]), "CLAUDE_CODE_SESSION_ID", "evil"),
    ]);
    let session = resolver().resolve(&snap, 4501).unwrap().session.unwrap();
    assert_eq!((session.id.as_str(), session.pid), ("real-session", Some(4500)));
}

#[test]
fn codex_exec_native_binary_under_its_node_launcher() {
    let mut launcher = proc(5000, 901, 1_000, "/usr/bin/node", &["node", "/usr/local/bin/codex", "exec", "fix it"]);
    launcher.script = Some("/usr/lib/node_modules/@openai/codex/bin/codex.js".into());
    let snap = snapshot(vec![
        launcher,
        proc(5001, 5000, 1_050, CODEX_EXE, &[CODEX_EXE, "exec", "fix it"]),
        proc(5002, 5001, 2_000, AGENTFW, &["agentfw", "mcp"]),
    ]);
    let id = resolver().resolve(&snap, 5002).unwrap();
    assert_eq!((id.agent.as_str(), id.pid, id.verified, id.shared_host), ("codex", 5001, true, false));
    assert_eq!(id.label, "web (codex)");
}

#[test]
fn the_codex_node_launcher_alone_is_a_launcher_not_an_agent() {
    // Were the native binary missing from the snapshot's path, the node wrapper must not
    // pass for Codex: it is skipped and the walk goes on (here to the terminal's tmux).
    let launcher = proc(5000, 901, 1_000, "/usr/bin/node", &["node", "/usr/local/bin/codex"]);
    let snap = snapshot(vec![launcher, proc(5002, 5000, 2_000, AGENTFW, &["agentfw", "mcp"])]);
    let err = resolver().resolve(&snap, 5002).unwrap_err();
    assert!(matches!(err, IdentityError::Unrecognized { pid: 900, .. }), "{err}");
}

#[test]
fn codex_app_server_is_a_shared_host_refined_by_the_session_id() {
    let snap = snapshot(vec![
        proc(5001, 901, 1_000, CODEX_EXE, &["codex"]),
        proc(5100, 5001, 1_100, CODEX_EXE, &["codex", "app-server"]),
        proc(5200, 5100, 2_000, AGENTFW, &["agentfw", "mcp"]),
        proc(5201, 5100, 2_500, AGENTFW, &["agentfw", "mcp"]),
    ]);
    let r = resolver();
    let mut a = r.resolve(&snap, 5200).unwrap();
    let mut b = r.resolve(&snap, 5201).unwrap();
    assert_eq!((a.pid, a.shared_host), (5100, true), "the server's parent is the shared app-server");
    assert!(a.same_process(&b));
    a.refine("019a-thread-a", "hook").unwrap();
    b.refine("019a-thread-b", "hook").unwrap();
    let base = format!("codex:5100:{}", BOOT + 1_100);
    assert_eq!(a.agent_id().as_str(), format!("{base}:019a-thread-a"));
    assert_ne!(a.agent_id(), b.agent_id(), "two threads of one app-server are two sessions");
    assert!(a.agent_id().as_str().starts_with(&base), "refined, never replaced");
    // The same session again is fine; another one is refused.
    a.refine("019a-thread-a", "hook").unwrap();
    let err = a.refine("019a-thread-b", "hook").unwrap_err();
    assert_eq!(
        err.to_string(),
        "this process already has session `019a-thread-a`, not `019a-thread-b`: a session id refines an identity, it never replaces one"
    );
    assert!(matches!(a.refine("has space", "hook"), Err(IdentityError::InvalidSession(_))));
}

#[test]
fn gemini_is_node_under_node() {
    let script = "/usr/lib/node_modules/@google/gemini-cli/dist/index.js";
    let mut parent = proc(6000, 901, 1_000, "/usr/bin/node", &["node", "/usr/local/bin/gemini"]);
    parent.script = Some(script.into());
    let mut child = proc(
        6001,
        6000,
        1_200,
        "/usr/bin/node",
        &["/usr/bin/node", "--max-old-space-size=8192", "/usr/local/bin/gemini"],
    );
    child.script = Some(script.into());
    let snap = snapshot(vec![
        parent,
        child,
        with_env(proc(6002, 6001, 2_000, AGENTFW, &["agentfw", "mcp"]), "GEMINI_CLI", "1"),
    ]);
    let id = resolver().resolve(&snap, 6002).unwrap();
    assert_eq!((id.agent.as_str(), id.pid, id.verified), ("gemini", 6001, true));
    assert_eq!(id.script.as_deref(), Some(script));
    assert_eq!(id.exe.as_deref(), Some("/usr/bin/node"));
}

#[test]
fn an_unresolved_relative_script_is_joined_with_the_working_directory() {
    let mut gemini = proc(6000, 901, 1_000, "/usr/bin/node", &["node", "./node_modules/.bin/gemini"]);
    gemini.cwd = Some("/srv/tools".into());
    let snap = snapshot(vec![gemini, proc(6002, 6000, 2_000, AGENTFW, &["agentfw", "mcp"])]);
    let id = resolver().resolve(&snap, 6002).unwrap();
    assert_eq!(id.agent, "gemini");
    assert_eq!(
        id.unverified,
        Some(Unverified::OutsideInstallLocations { path: "/srv/tools/node_modules/.bin/gemini".into() })
    );
    assert_eq!(id.label, "web (gemini)", "the git root names the project");
}

#[test]
fn npx_pyenv_and_uv_shims_are_launchers() {
    let snap = snapshot(vec![
        proc(4242, 901, 1_000, CLAUDE_EXE, &["claude"]),
        proc(
            4600,
            4242,
            2_000,
            "/usr/bin/node",
            &["npm exec", "/usr/lib/node_modules/npm/bin/npx-cli.js", "-y", "agentfw"],
        ),
        proc(4601, 4600, 2_100, "/usr/bin/bash", &["bash", "/home/dev/.pyenv/shims/python3", "-m", "agentfw_bot"]),
        proc(4602, 4601, 2_200, "/usr/bin/bash", &["bash", "/home/dev/.pyenv/libexec/pyenv", "exec", "python3"]),
        proc(4603, 4602, 2_300, "/home/dev/.local/bin/uvx", &["uvx", "agentfw-bot"]),
        proc(4604, 4603, 2_400, "/home/dev/.local/bin/uv", &["uv", "tool", "run", "agentfw-bot"]),
        proc(
            4605,
            4604,
            2_500,
            "/home/dev/.pyenv/versions/3.11.9/bin/python3.11",
            &["python3", "/home/dev/.pyenv/shims/agentfw-bot"],
        ),
        proc(4606, 4605, 2_600, "/home/dev/.pyenv/versions/3.11.9/bin/python3.11", &["python3", "-m", "agentfw_bot"]),
    ]);
    let id = resolver().resolve(&snap, 4606).unwrap();
    assert_eq!((id.agent.as_str(), id.pid), ("claude", 4242));
    assert_eq!(id.chain.len(), 8);
}

#[test]
fn a_binary_merely_named_claude_is_unverified_and_refused_when_verification_is_required() {
    let snap = snapshot(vec![
        proc(7000, 901, 1_000, "/tmp/x/claude", &["claude"]),
        proc(7001, 7000, 2_000, "/usr/bin/dash", &["sh", "-c", "agentfw mcp"]),
        proc(7002, 7001, 2_001, AGENTFW, &["agentfw", "mcp"]),
    ]);
    let id = resolver().resolve(&snap, 7002).unwrap();
    assert_eq!((id.agent.as_str(), id.pid, id.verified), ("claude", 7000, false));
    assert_eq!(id.unverified, Some(Unverified::OutsideInstallLocations { path: "/tmp/x/claude".into() }));
    let json = serde_json::to_value(&id).unwrap();
    assert_eq!(json["agent"], "claude");
    assert_eq!(json["label"], "web (claude)");
    assert_eq!(json["verified"], false);
    assert_eq!(json["unverified"]["why"], "outside_install_locations");

    let strict =
        Resolver::new(IdentityConfig { require_verified: true, ..IdentityConfig::default().with_home(HOME) }).unwrap();
    let err = strict.resolve(&snap, 7002).unwrap_err();
    assert_eq!(
        err.to_string(),
        "process 7000 runs as claude, but `/tmp/x/claude` is not at a trusted install location; verified binaries are required (`identity.require_verified`): install claude at a trusted location, add its location to `install_locations`, or pin its digest"
    );
    // A real install still passes under the strict configuration.
    let real =
        snapshot(vec![proc(4242, 901, 1_000, CLAUDE_EXE, &["claude"]), proc(4300, 4242, 2_000, AGENTFW, &["agentfw"])]);
    assert!(strict.resolve(&real, 4300).unwrap().verified);
}

#[test]
fn the_native_installer_location_is_trusted_once_home_is_expanded() {
    let exe = "/home/dev/.local/share/claude/versions/2.1.332";
    let snap = snapshot(vec![proc(4242, 901, 1_000, exe, &["claude"]), proc(4300, 4242, 2_000, AGENTFW, &["agentfw"])]);
    let id = resolver().resolve(&snap, 4300).unwrap();
    assert!(id.verified, "{:?}", id.unverified);
    let unexpanded = Resolver::new(IdentityConfig::default()).unwrap();
    let err = unexpanded.resolve(&snap, 4300);
    assert!(err.is_err(), "a versioned file name is an agent only through its (expanded) location");
}

#[test]
fn pinned_digests_are_checked_and_a_mismatch_is_reported() {
    let mut config = IdentityConfig::default().with_home(HOME);
    config.agent_mut("claude").unwrap().digests = vec!["ab12".into()];
    let r = Resolver::new(config).unwrap();
    let mk = |digest: Option<&str>| {
        let mut claude = proc(4242, 901, 1_000, CLAUDE_EXE, &["claude"]);
        claude.exe_digest = digest.map(str::to_owned);
        snapshot(vec![claude, proc(4300, 4242, 2_000, AGENTFW, &["agentfw"])])
    };
    assert!(r.resolve(&mk(Some("AB12")), 4300).unwrap().verified);
    let id = r.resolve(&mk(Some("ff00")), 4300).unwrap();
    assert_eq!(id.unverified, Some(Unverified::DigestMismatch { path: CLAUDE_EXE.into(), digest: "ff00".into() }));
    assert_eq!(
        id.unverified.unwrap().to_string(),
        format!("the digest of `{CLAUDE_EXE}` is `ff00`, which is not a pinned one")
    );
    let id = r.resolve(&mk(None), 4300).unwrap();
    assert_eq!(id.unverified, Some(Unverified::DigestUnknown { path: CLAUDE_EXE.into() }));
}

#[test]
fn a_replaced_binary_still_counts_and_an_unreadable_one_is_unverified() {
    let deleted = format!("{CLAUDE_EXE} (deleted)");
    let snap =
        snapshot(vec![proc(4242, 901, 1_000, &deleted, &["claude"]), proc(4300, 4242, 2_000, AGENTFW, &["agentfw"])]);
    let id = resolver().resolve(&snap, 4300).unwrap();
    assert!(id.verified);
    assert_eq!(id.exe.as_deref(), Some(CLAUDE_EXE));

    let mut hidden = proc(4242, 901, 1_000, CLAUDE_EXE, &["claude"]);
    hidden.exe = None;
    let snap = snapshot(vec![hidden, proc(4300, 4242, 2_000, AGENTFW, &["agentfw"])]);
    let id = resolver().resolve(&snap, 4300).unwrap();
    assert_eq!((id.agent.as_str(), id.unverified), ("claude", Some(Unverified::PathUnknown)));
}

#[test]
fn asking_about_the_agent_itself_names_it() {
    let snap = snapshot(vec![proc(4242, 901, 1_000, CLAUDE_EXE, &["claude"])]);
    let id = resolver().resolve(&snap, 4242).unwrap();
    assert_eq!((id.pid, id.chain.len()), (4242, 1));
}

#[test]
fn pid_reuse_same_pid_different_start_time_is_a_different_session() {
    let before =
        snapshot(vec![proc(4242, 901, 1_000, CLAUDE_EXE, &["claude"]), proc(4300, 4242, 2_000, AGENTFW, &["agentfw"])]);
    let after =
        snapshot(vec![proc(4242, 901, 9_000, CLAUDE_EXE, &["claude"]), proc(4301, 4242, 9_500, AGENTFW, &["agentfw"])]);
    let (a, b) = (resolver().resolve(&before, 4300).unwrap(), resolver().resolve(&after, 4301).unwrap());
    assert_eq!(a.pid, b.pid);
    assert_ne!(a.agent_id(), b.agent_id());
    assert!(!a.same_process(&b));
}

#[test]
fn a_parent_that_started_after_its_child_is_not_its_parent() {
    // The server's claude exited and a new claude got pid 4242: the server was orphaned.
    let snap =
        snapshot(vec![proc(4242, 901, 9_000, CLAUDE_EXE, &["claude"]), proc(4300, 4242, 2_000, AGENTFW, &["agentfw"])]);
    let err = resolver().resolve(&snap, 4300).unwrap_err();
    assert_eq!(err, IdentityError::ParentGone { child: 4300, parent: 4242 });
    assert_eq!(
        err.to_string(),
        "process 4300's parent 4242 is gone: it exited, or its pid now belongs to a process that started later; the agent session may have ended"
    );
}

#[test]
fn a_process_that_exits_mid_walk_is_a_missing_parent() {
    let snap = snapshot(vec![
        proc(4500, 4242, 3_000, "/usr/bin/bash", &["bash", "-c", "agentfw send"]),
        proc(4501, 4500, 3_001, AGENTFW, &["agentfw", "send"]),
    ]);
    assert_eq!(resolver().resolve(&snap, 4501).unwrap_err(), IdentityError::ParentGone { child: 4500, parent: 4242 });
    assert_eq!(resolver().resolve(&snap, 31337).unwrap_err(), IdentityError::StartNotFound { pid: 31337 });
}

#[test]
fn cycles_in_a_corrupted_snapshot_are_errors() {
    let snap: Snapshot = vec![
        proc(10, 11, 0, "/usr/bin/bash", &["bash"]),
        proc(11, 12, 0, "/usr/bin/bash", &["bash"]),
        proc(12, 10, 0, "/usr/bin/bash", &["bash"]),
    ]
    .into_iter()
    .collect();
    assert!(matches!(resolver().resolve(&snap, 10).unwrap_err(), IdentityError::Cycle { .. }));
    let own: Snapshot = vec![proc(20, 20, 0, "/usr/bin/bash", &["bash"])].into_iter().collect();
    assert_eq!(resolver().resolve(&own, 20).unwrap_err(), IdentityError::Cycle { pid: 20 });
}

#[test]
fn the_walk_gives_up_at_the_depth_cap() {
    let mut procs = desktop();
    procs.extend((0..200u32).map(|i| {
        proc(10_000 + i, if i == 0 { 901 } else { 9_999 + i }, 1_000 + u64::from(i), "/usr/bin/bash", &["bash"])
    }));
    let snap: Snapshot = procs.into_iter().collect();
    let err = resolver().resolve(&snap, 10_199).unwrap_err();
    assert_eq!(err, IdentityError::TooDeep { start: 10_199, depth: 64 });
}

#[test]
fn an_unknown_program_in_the_ancestry_stops_the_walk_and_says_how_to_fix_it() {
    let snap = snapshot(vec![proc(8000, 901, 1_000, AGENTFW, &["agentfw", "send", "api (codex)", "hi"])]);
    let err = resolver().resolve(&snap, 8000).unwrap_err();
    assert_eq!(
        err.to_string(),
        "process 8000 was not started by a known agent: the walk stopped at process 900 (`tmux`), which is neither a known agent nor a launcher; if it only starts other programs, add `tmux` to `identity.launchers`; if it is an agent, add it to `identity.agents`"
    );
    let mut config = IdentityConfig::default().with_home(HOME);
    config.launchers.push("tmux".into());
    let err = Resolver::new(config).unwrap().resolve(&snap, 8000).unwrap_err();
    assert_eq!(
        err.to_string(),
        "process 8000 was not started by a known agent: its ancestry ends at process 1 (`systemd`) without one; run it from an agent session, or add the agent to `identity.agents`"
    );
}

#[test]
fn custom_bots_and_bad_patterns_are_configuration() {
    let mut config = IdentityConfig::default().with_home(HOME);
    config.agents.push(agentfw_core::identity::AgentSpec {
        kind: "reviewbot".into(),
        executables: vec![],
        scripts: vec!["/opt/bots/review/*.py".into()],
        install_locations: vec!["/opt/bots/**".into()],
        digests: vec![],
        session_env: vec![],
        shared_host_args: vec![],
    });
    let snap = snapshot(vec![
        proc(9000, 901, 1_000, "/usr/bin/python3.12", &["python3", "/opt/bots/review/main.py"]),
        proc(9001, 9000, 2_000, AGENTFW, &["agentfw", "mcp"]),
    ]);
    let id = Resolver::new(config.clone()).unwrap().resolve(&snap, 9001).unwrap();
    assert_eq!((id.label.as_str(), id.verified), ("web (reviewbot)", true));

    config.launchers.push("[oops".into());
    let err = Resolver::new(config).unwrap_err();
    assert!(matches!(&err, IdentityError::Pattern { pattern, .. } if pattern == "[oops"), "{err}");
    assert!(err.to_string().starts_with("identity configuration: `[oops` is not a valid pattern: "), "{err}");
}

#[test]
fn the_project_falls_back_to_the_working_directory() {
    let mut claude = proc(4242, 901, 1_000, CLAUDE_EXE, &["claude"]);
    claude.git_root = None;
    claude.cwd = Some("/home/dev/scratch/".into());
    let snap = snapshot(vec![claude, proc(4300, 4242, 2_000, AGENTFW, &["agentfw"])]);
    assert_eq!(resolver().resolve(&snap, 4300).unwrap().label, "scratch (claude)");
}

fn arb_process() -> impl Strategy<Value = Process> {
    let names = prop::sample::select(vec![
        "/usr/bin/bash",
        "/usr/bin/node",
        CLAUDE_EXE,
        "/tmp/claude",
        CODEX_EXE,
        "/usr/bin/python3",
        "",
        "/",
        "weird (deleted)",
    ]);
    (
        0u32..12,
        0u32..12,
        0u64..5,
        prop::option::of(names),
        prop::collection::vec(
            prop::sample::select(vec!["-m", "-c", "x", "app-server", "--", "/a/b", "gemini", ""]),
            0..4,
        ),
    )
        .prop_map(|(pid, ppid, t, exe, argv)| Process {
            pid,
            ppid,
            exe: exe.map(str::to_owned),
            argv: argv.into_iter().map(str::to_owned).collect(),
            started_at: Timestamp::from_millis(t),
            ..Process::default()
        })
}

proptest! {
    /// Any snapshot, however corrupt, gives an answer: no hang, no panic.
    #[test]
    fn corrupted_snapshots_never_hang_or_panic(procs in prop::collection::vec(arb_process(), 0..12), start in 0u32..12) {
        let snap: Snapshot = procs.into_iter().collect();
        let _ = resolver().resolve(&snap, start);
    }
}
