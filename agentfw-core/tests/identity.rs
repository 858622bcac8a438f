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
        // A system-wide install: its user cannot replace it.
        program_writable: Some(false),
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
fn the_native_installer_location_needs_a_pin_because_its_user_can_write_it() {
    let exe = "/home/dev/.local/share/claude/versions/2.1.332";
    let mut claude = proc(4242, 901, 1_000, exe, &["claude"]);
    claude.program_writable = Some(true);
    claude.exe_digest = Some("c0ffee".into());
    let snap = snapshot(vec![claude, proc(4300, 4242, 2_000, AGENTFW, &["agentfw"])]);
    let id = resolver().resolve(&snap, 4300).unwrap();
    assert_eq!(id.unverified, Some(Unverified::Unpinned { path: exe.into() }));
    assert!(id.unverified.unwrap().to_string().contains("agentfw identity pin"));
    // Pinned (by `agentfw install` or `agentfw identity pin`), the same file is verified.
    let mut config = IdentityConfig::default().with_home(HOME);
    config.agent_mut("claude").unwrap().digests = vec!["C0FFEE".into()];
    assert!(Resolver::new(config).unwrap().resolve(&snap, 4300).unwrap().verified);
    let unexpanded = Resolver::new(IdentityConfig::default()).unwrap();
    let err = unexpanded.resolve(&snap, 4300);
    assert!(err.is_err(), "a versioned file name is an agent only through its (expanded) location");
}

/// Issue 15, attack 2: a copy of another program put where a harness installs itself, in
/// a directory its user can write, is no harness build.
#[test]
fn a_copy_in_a_user_writable_install_location_is_not_verified() {
    for exe in ["/home/dev/.claude/local/claude", "/home/dev/.local/share/claude/versions/9.9.9"] {
        let mut fake = proc(7000, 901, 1_000, exe, &["claude"]);
        fake.program_writable = Some(true);
        let snap = snapshot(vec![fake.clone(), proc(7001, 7000, 2_000, AGENTFW, &["agentfw", "mcp"])]);
        let id = resolver().resolve(&snap, 7001).unwrap();
        assert!(!id.verified, "{exe}");
        assert!(id.to_agent().unverified);
        let strict =
            Resolver::new(IdentityConfig { require_verified: true, ..IdentityConfig::default().with_home(HOME) })
                .unwrap();
        assert!(matches!(strict.resolve(&snap, 7001), Err(IdentityError::Unverified { pid: 7000, .. })), "{exe}");
        // Nor when the adapter could not tell who may write it.
        fake.program_writable = None;
        let snap = snapshot(vec![fake, proc(7001, 7000, 2_000, AGENTFW, &["agentfw", "mcp"])]);
        assert!(!resolver().resolve(&snap, 7001).unwrap().verified, "{exe}");
    }
}

#[test]
fn a_script_changed_after_its_interpreter_started_is_not_verified() {
    let script = "/usr/lib/node_modules/@google/gemini-cli/dist/index.js";
    let mut gemini = proc(6001, 901, 1_000, "/usr/bin/node", &["node", "/usr/local/bin/gemini"]);
    gemini.script = Some(script.into());
    gemini.script_changed = true;
    let snap = snapshot(vec![gemini, proc(6002, 6001, 2_000, AGENTFW, &["agentfw", "mcp"])]);
    let id = resolver().resolve(&snap, 6002).unwrap();
    assert_eq!(id.unverified, Some(Unverified::ChangedSinceStart { path: script.into() }));
}

#[test]
fn pinned_digests_are_checked_and_a_mismatch_is_reported() {
    let mut config = IdentityConfig::default().with_home(HOME);
    config.agent_mut("claude").unwrap().digests = vec!["ab12".into()];
    let r = Resolver::new(config).unwrap();
    let mk = |digest: Option<&str>| {
        let mut claude = proc(4242, 901, 1_000, CLAUDE_EXE, &["claude"]);
        claude.program_writable = Some(true);
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
        env_markers: vec![],
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

const CURSOR_EXE: &str = "/home/dev/.local/share/cursor-agent/versions/2025.11/cursor-agent";

/// `cursor-agent` working in `worker`, run from the desktop's shell.
fn cursor_worker() -> Process {
    let mut cursor = proc(3000, 901, 500, CURSOR_EXE, &["cursor-agent"]);
    cursor.cwd = Some("/home/dev/src/worker".into());
    cursor.git_root = cursor.cwd.clone();
    cursor
}

/// Issue 15, attack 1: a copy of `sh` named `claude` in a folder named `web`, started from a
/// shell under `cursor-agent`, is `web (claude)` *inside* `worker (cursor)`, never the
/// top-level `web (claude)`.
#[test]
fn a_harness_started_inside_another_is_identified_with_its_whole_chain() {
    let mut fake = proc(3100, 3002, 2_000, "/tmp/web/claude", &["claude", "-c", "agentfw send"]);
    fake.cwd = Some("/tmp/web".into());
    fake.git_root = None;
    fake.program_writable = Some(true);
    let snap = snapshot(vec![
        cursor_worker(),
        proc(3001, 3000, 1_000, "/usr/bin/bash", &["bash", "-c", "cd /tmp/web && ./claude"]),
        proc(3002, 3001, 1_500, "/usr/bin/perl", &["perl", "-e", "system(@ARGV)", "./claude"]),
        fake,
        proc(3101, 3100, 2_100, AGENTFW, &["agentfw", "send", "api (codex)", "hi"]),
    ]);
    let id = resolver().resolve(&snap, 3101).unwrap();
    assert_eq!((id.agent.as_str(), id.pid, id.project.as_str()), ("claude", 3100, "web"));
    assert_eq!(id.label, "web (claude) in worker (cursor)");
    assert_eq!(id.within.len(), 1);
    assert_eq!((id.within[0].agent.as_str(), id.within[0].pid), ("cursor", 3000));
    assert_eq!(id.within[0].label, "worker (cursor)");
    let roles: Vec<StepRole> = id.within[0].chain.iter().map(|s| s.role).collect();
    assert_eq!(roles, [StepRole::Passed, StepRole::Passed, StepRole::Agent], "perl and bash, then cursor");
    let agent = id.to_agent();
    assert_eq!(agent.label(), "web (claude) in worker (cursor)");
    assert_eq!(agent.own_label(), "web (claude)");
    assert!(agent.unverified, "the copy of sh is unverified, and so the whole chain");
    let chain: Vec<String> = agent.chain().map(ToString::to_string).collect();
    assert_eq!(chain, [format!("claude:3100:{}", BOOT + 2_000), format!("cursor:3000:{}", BOOT + 500)]);
    assert!(agent.is_within(&agentfw_core::message::AgentId::new(format!("cursor:3000:{}", BOOT + 500))));
    // The enclosing session resolves on its own to the same id and label.
    let outer = resolver().resolve(&snap, 3001).unwrap();
    assert_eq!((outer.agent_id(), outer.label.as_str()), (id.within[0].agent_id(), "worker (cursor)"));
}

#[test]
fn claude_running_codex_exec_is_visibly_nested_and_each_level_is_verified() {
    let mut codex = proc(5001, 5000, 3_000, CODEX_EXE, &[CODEX_EXE, "exec", "review"]);
    codex.cwd = Some("/home/dev/src/api".into());
    codex.git_root = codex.cwd.clone();
    let mut launcher = proc(5000, 4500, 2_900, "/usr/bin/node", &["node", "/usr/local/bin/codex", "exec", "review"]);
    launcher.script = Some("/usr/lib/node_modules/@openai/codex/bin/codex.js".into());
    let snap = snapshot(vec![
        proc(4242, 901, 1_000, CLAUDE_EXE, &["claude"]),
        proc(4500, 4242, 2_800, "/usr/bin/bash", &["bash", "-c", "codex exec review"]),
        launcher,
        codex,
        proc(5002, 5001, 3_100, AGENTFW, &["agentfw", "mcp"]),
    ]);
    let id = resolver().resolve(&snap, 5002).unwrap();
    assert_eq!(id.label, "api (codex) in web (claude)");
    assert!(id.verified && id.within.iter().all(|w| w.verified));
    assert!(!id.to_agent().unverified);
    assert!(id.is_nested());
}

#[test]
fn three_levels_nest_nearest_first() {
    let mut inner = proc(3200, 3100, 3_000, CLAUDE_EXE, &["claude"]);
    inner.cwd = Some("/home/dev/src/inner".into());
    inner.git_root = inner.cwd.clone();
    let mut middle = proc(3100, 3000, 2_000, CODEX_EXE, &["codex"]);
    middle.cwd = Some("/home/dev/src/middle".into());
    middle.git_root = middle.cwd.clone();
    let snap = snapshot(vec![cursor_worker(), middle, inner, proc(3201, 3200, 4_000, AGENTFW, &["agentfw"])]);
    let id = resolver().resolve(&snap, 3201).unwrap();
    assert_eq!(id.label, "inner (claude) in middle (codex) in worker (cursor)");
    let labels: Vec<&str> = id.within.iter().map(|w| w.label.as_str()).collect();
    assert_eq!(labels, ["middle (codex) in worker (cursor)", "worker (cursor)"]);
}

/// Whatever hides part of the ancestry above an agent could hide a session it runs in: the
/// identity is refused rather than taken as top-level.
#[test]
fn an_ancestry_that_cannot_be_followed_above_the_agent_is_an_error() {
    let fake = |ppid| {
        let mut p = proc(3100, ppid, 2_000, "/tmp/web/claude", &["claude"]);
        p.program_writable = Some(true);
        p
    };
    // A parent that is gone (exited mid-walk, or hidden).
    let snap = snapshot(vec![fake(3050), proc(3101, 3100, 2_100, AGENTFW, &["agentfw"])]);
    assert_eq!(resolver().resolve(&snap, 3101).unwrap_err(), IdentityError::ParentGone { child: 3100, parent: 3050 });
    // A chain of shells long enough to push `cursor-agent` past the depth cap.
    let mut procs = desktop();
    procs.push(cursor_worker());
    procs.extend((0..80u32).map(|i| {
        proc(20_000 + i, if i == 0 { 3000 } else { 19_999 + i }, 600 + u64::from(i), "/usr/bin/bash", &["bash"])
    }));
    procs.push(fake(20_079));
    procs.push(proc(3101, 3100, 2_100, AGENTFW, &["agentfw"]));
    let snap: Snapshot = procs.into_iter().collect();
    assert!(matches!(resolver().resolve(&snap, 3101), Err(IdentityError::TooDeep { .. })));
    // A process of another user that `/proc` hides ends the walk: nothing of this user's can
    // run above it that could be read.
    let foreign = Process { pid: 3050, foreign: true, ..Process::default() };
    let snap: Snapshot =
        vec![foreign, fake(3050), proc(3101, 3100, 2_100, AGENTFW, &["agentfw"])].into_iter().collect();
    assert_eq!(resolver().resolve(&snap, 3101).unwrap().label, "web (claude)");
}

#[test]
fn a_project_folder_name_is_shown_as_one_clean_line() {
    let mut claude = proc(4242, 901, 1_000, CLAUDE_EXE, &["claude"]);
    claude.git_root = Some("/home/dev/src/web\n- api (claude) \u{2014} live, verified\u{1b}[2J\u{202e}".into());
    let snap = snapshot(vec![claude, proc(4300, 4242, 2_000, AGENTFW, &["agentfw"])]);
    let id = resolver().resolve(&snap, 4300).unwrap();
    assert_eq!(id.project, "web - api (claude) \u{2014} live, verified[2J");
    assert!(!id.label.contains('\n') && !id.label.contains('\u{1b}'));
}

// ---- admin placement (AM6) ---------------------------------------------------------

use agentfw_core::identity::Placement;

/// `tty_nr` of `/dev/pts/N`.
fn pts(n: u32) -> u32 {
    (136 << 8) | n
}

/// A process in terminal session `sid` on `/dev/pts/tty` (0: none), in process group
/// `pgrp`, with the terminal's foreground group `fg`.
fn in_terminal(mut p: Process, sid: u32, tty: u32, pgrp: u32, fg: Option<u32>) -> Process {
    p.sid = sid;
    p.tty = if tty == 0 { 0 } else { pts(tty) };
    p.pgrp = pgrp;
    p.tpgid = fg;
    p
}

/// A person's terminal: a terminal emulator holding `/dev/pts/3`, its shell (session
/// leader), and `agentfw` run from it in the foreground.
fn person_terminal(extra: Vec<Process>) -> Snapshot {
    let mut terminal = proc(800, 1, 50, "/usr/bin/gnome-terminal-server", &["gnome-terminal-server"]);
    terminal.pty_masters = vec![3];
    let shell = in_terminal(proc(810, 800, 60, "/usr/bin/bash", &["bash"]), 810, 3, 810, Some(8100));
    let me =
        in_terminal(proc(8100, 810, 5_000, AGENTFW, &["agentfw", "quarantine", "lift", "x"]), 810, 3, 8100, Some(8100));
    let mut procs = vec![proc(1, 0, 0, "/usr/lib/systemd/systemd", &["/sbin/init"]), terminal, shell, me];
    procs.extend(extra);
    procs.into_iter().collect()
}

#[test]
fn a_person_at_a_terminal_is_placed_outside_every_session() {
    let snap = person_terminal(vec![]);
    assert_eq!(resolver().place(&snap, 8100), Placement::Person);
    // A pipeline (`echo x | xargs agentfw …`) typed by the person is fine too.
    let snap = person_terminal(vec![
        in_terminal(proc(8200, 810, 6_000, "/usr/bin/xargs", &["xargs", "agentfw", "allow"]), 810, 3, 8199, Some(8199)),
        in_terminal(proc(8201, 8200, 6_001, AGENTFW, &["agentfw", "allow", "a", "b"]), 810, 3, 8199, Some(8199)),
    ]);
    assert_eq!(resolver().place(&snap, 8201), Placement::Person);
}

/// Issue 15, attacks 3 and 4, as classes: whatever an agent puts between itself and the
/// admin command, it is refused — by the agent above it, or because nothing can place it.
#[test]
fn admin_from_inside_an_agent_is_refused_however_it_is_launched() {
    let claude = || proc(4242, 901, 1_000, CLAUDE_EXE, &["claude"]);
    let tool = |pid, ppid, argv: &[&str]| proc(pid, ppid, 2_000 + u64::from(pid), "/usr/bin/perl", argv);
    let r = resolver();
    let from_agent = |snap: &Snapshot, pid| match r.place(snap, pid) {
        Placement::Agent { agent, .. } => assert_eq!(agent, "web (claude)"),
        other => panic!("not refused as an agent: {other:?}"),
    };
    // Directly, through perl's system(), through xargs, through python -c.
    for launcher in
        [&["perl", "-e", "system(@ARGV)"][..], &["xargs", "-d", "\n", "agentfw"], &["python3", "-c", "import os"]]
    {
        let snap = snapshot(vec![
            claude(),
            tool(4500, 4242, &["bash", "-c", "…"]),
            tool(4501, 4500, launcher),
            proc(4502, 4501, 9_000, AGENTFW, &["agentfw", "quarantine", "lift", "web (claude)"]),
        ]);
        from_agent(&snap, 4502);
    }
    let unknown = |snap: &Snapshot, pid, needle: &str| match r.place(snap, pid) {
        Placement::Unknown { why } => assert!(why.contains(needle), "{why}"),
        other => panic!("not refused as unknown: {other:?}"),
    };
    // Double fork / nohup / disown: reparented to init, still in the agent's terminal
    // session (claude runs in the person's terminal, session 810).
    let snap = person_terminal(vec![
        in_terminal(claude(), 810, 3, 4242, Some(4242)),
        in_terminal(proc(4600, 1, 9_000, AGENTFW, &["agentfw", "daemon", "--stop"]), 810, 3, 4242, Some(4242)),
    ]);
    match r.place(&snap, 4600) {
        Placement::Unknown { why } | Placement::Agent { why, .. } => assert!(!why.is_empty()),
        Placement::Person => panic!("a reparented process passed for a person"),
    }
    let mut alone =
        person_terminal(vec![in_terminal(proc(4600, 1, 9_000, AGENTFW, &["agentfw"]), 810, 3, 4242, Some(4242))]);
    unknown(&alone, 4600, "left its terminal session");
    // setsid (-f): a new session without a terminal.
    alone.insert(in_terminal(proc(4601, 1, 9_000, AGENTFW, &["agentfw"]), 4601, 0, 4601, None));
    unknown(&alone, 4601, "no controlling terminal");
    // `cmd &` in the person's terminal: in the background.
    alone.insert(in_terminal(proc(4602, 810, 9_000, AGENTFW, &["agentfw"]), 810, 3, 4602, Some(810)));
    unknown(&alone, 4602, "foreground");
}

#[test]
fn a_harness_marker_in_the_environment_places_a_process_inside_the_agent() {
    // `nohup`/`at` keep the environment: CLAUDECODE=1 survives the reparenting.
    let me = with_env(
        in_terminal(proc(8100, 810, 5_000, AGENTFW, &["agentfw"]), 810, 3, 8100, Some(8100)),
        "CLAUDECODE",
        "1",
    );
    let mut snap = person_terminal(vec![]);
    snap.insert(me);
    match resolver().place(&snap, 8100) {
        Placement::Agent { agent, why } => {
            assert_eq!(agent, "claude");
            assert!(why.contains("`CLAUDECODE`"), "{why}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_terminal_held_by_an_agent_or_shared_with_one_is_no_persons() {
    let claude = proc(4242, 901, 1_000, CLAUDE_EXE, &["claude"]);
    // `setsid script -c 'agentfw …'` from the agent's shell: script holds the new pty.
    let mut script = proc(4700, 4242, 8_000, "/usr/bin/script", &["script", "-qc", "agentfw allow a b"]);
    script.pty_masters = vec![9];
    let shell = in_terminal(
        proc(4701, 4700, 8_001, "/usr/bin/dash", &["sh", "-c", "agentfw allow a b"]),
        4701,
        9,
        4701,
        Some(4702),
    );
    let me = in_terminal(proc(4702, 4701, 8_002, AGENTFW, &["agentfw", "allow", "a", "b"]), 4701, 9, 4702, Some(4702));
    let snap = snapshot(vec![claude.clone(), script, shell, me]);
    match resolver().place(&snap, 4702) {
        // The walk already meets claude above script; the holder check would too.
        Placement::Agent { agent, .. } => assert_eq!(agent, "web (claude)"),
        other => panic!("{other:?}"),
    }
    // `systemd-run --user --pty agentfw …`: the command runs under the user's manager, but
    // its terminal's master is held by systemd-run, inside the agent.
    let manager = proc(700, 1, 10, "/usr/lib/systemd/systemd", &["systemd", "--user"]);
    let mut client = proc(4800, 4242, 8_000, "/usr/bin/systemd-run", &["systemd-run", "--user", "--pty"]);
    client.pty_masters = vec![11];
    let me = in_terminal(proc(4801, 700, 8_001, AGENTFW, &["agentfw", "allow", "a", "b"]), 4801, 11, 4801, Some(4801));
    let snap = snapshot(vec![claude.clone(), manager, client, me]);
    match resolver().place(&snap, 4801) {
        Placement::Agent { why, .. } => assert!(why.contains("/dev/pts/11") && why.contains("systemd-run"), "{why}"),
        other => panic!("{other:?}"),
    }
    // An agent running in the person's own terminal session could type into it.
    let snap =
        person_terminal(vec![in_terminal(proc(4242, 810, 1_000, CLAUDE_EXE, &["claude"]), 810, 3, 4242, Some(8100))]);
    match resolver().place(&snap, 8100) {
        Placement::Agent { why, .. } => assert!(why.contains("same terminal session"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_ancestry_that_cannot_be_followed_is_no_persons() {
    let snap: Snapshot = vec![in_terminal(proc(8100, 810, 5_000, AGENTFW, &["agentfw"]), 810, 3, 8100, Some(8100))]
        .into_iter()
        .collect();
    match resolver().place(&snap, 8100) {
        Placement::Unknown { why } => assert!(why.contains("cannot be followed to the top"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(resolver().place(&Snapshot::new(), 8100), Placement::Unknown { .. }));
    assert_eq!(Placement::Unknown { why: String::new() }.refusal_code(), Some("admin.unknown_caller"));
    assert_eq!(Placement::Agent { agent: String::new(), why: String::new() }.refusal_code(), Some("admin.from_agent"));
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
        let _ = resolver().place(&snap, start);
    }
}
