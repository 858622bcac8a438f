//! Admin fails closed (AM6), with fake sessions (copies of `sh` named like harnesses):
//! every command that lowers protection runs for a person at a terminal and for nothing
//! else — not an agent, however it launches the command (`perl -e system`, `xargs`,
//! `setsid`, a double fork, `nohup`, a cleared environment), not a process with no
//! terminal, and not the blocked agent lifting its own block. Issue 15, attacks 3 and 4.

#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::time::Duration;

use common::{World, stderr, stdout};

/// No `[admin] from_agents`: the check is on.
const CONFIG: &str = "[wake]\ndelay_ms = 50\ncooldown_secs = 1\n";

/// What a refused admin command said, and that it was refused for one of the two reasons.
fn assert_refused(code: i32, text: &str, what: &str) {
    assert_eq!(code, 1, "{what}: {text}");
    assert!(
        text.contains("(admin.from_agent)") || text.contains("(admin.unknown_caller)"),
        "{what} was not refused by the admin check: {text}"
    );
    assert!(text.contains("runs only for a person"), "{what}: {text}");
}

/// Wait for a file a detached command writes its output to.
fn wait_for(path: &std::path::Path) -> String {
    for _ in 0..500 {
        if let Ok(text) = std::fs::read_to_string(path)
            && text.contains('\n')
        {
            std::thread::sleep(Duration::from_millis(20));
            return std::fs::read_to_string(path).unwrap();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("nothing written to {}", path.display())
}

#[test]
fn a_person_at_a_terminal_may_run_admin_commands() {
    let w = World::with_config(CONFIG);
    let _web = w.agent("claude", "web");
    let _api = w.agent("codex", "api");
    let (code, text) = w.person(&["allow", "web (claude)", "api (codex)"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("the turn fuse between web (claude) and api (codex) is reset"), "{text}");
    let (code, text) = w.person(&["block", "worker (cursor)"]);
    assert_eq!(code, 0, "{text}");
    let (code, text) = w.person(&["unblock", "worker (cursor)"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("unblocked `worker (cursor)`"), "{text}");
}

#[test]
fn a_process_with_no_terminal_is_no_person() {
    let w = World::with_config(CONFIG);
    let _web = w.agent("claude", "web");
    // The test process itself: no controlling terminal, so nothing says a person typed it.
    for args in [
        &["allow", "web (claude)", "web (claude)"][..],
        &["quarantine", "lift", "web (claude)"],
        &["admission", "enforce"],
        &["unblock", "x (claude)"],
    ] {
        let out = w.agentfw(args);
        let text = format!("{}{}", stdout(&out), stderr(&out));
        assert_refused(out.status.code().unwrap_or(-1), &text, &args.join(" "));
        assert!(text.contains("admin.unknown_caller"), "{text}");
    }
}

/// Attack 3 and its variations: from inside an agent session, every way of launching an
/// admin command is refused, and the daemon keeps running.
#[test]
fn admin_from_inside_an_agent_is_refused_however_it_is_launched() {
    let w = World::with_config(CONFIG);
    let mut web = w.agent("claude", "web");
    let _api = w.agent("codex", "api");
    let daemon = w.wait_daemon();
    let out = w.dir.path().join("detached.out");
    let out_q = common::shell_quote(&out.display().to_string());
    let attempts = [
        ("directly", r#""$AFW" quarantine lift 'api (codex)'"#.to_owned()),
        ("through perl's system()", r#"perl -e 'system(@ARGV)' "$AFW" daemon --stop"#.to_owned()),
        ("through xargs", r#"echo 'api (codex)' | xargs -d '\n' "$AFW" quarantine lift"#.to_owned()),
        (
            "through python's os.system",
            r#"python3 -c 'import os, sys; os.system(sys.argv[1])' "\"$AFW\" allow 'web (claude)' 'api (codex)'""#
                .to_owned(),
        ),
        ("admission changes", r#""$AFW" admission enforce"#.to_owned()),
        ("an admission exception", r#""$AFW" admission except mcp:github"#.to_owned()),
    ];
    for (how, command) in &attempts {
        let ran = web.run(command);
        // perl's and python's system() do not pass the exit status on; xargs says 123.
        let code = match *how {
            h if h.contains("system") => 1,
            "through xargs" if ran.code == 123 => 1,
            _ => ran.code,
        };
        assert_refused(code, &format!("{}{}", ran.stdout, ran.stderr), how);
        assert!(ran.stderr.contains("admin.from_agent"), "{how}: {}", ran.stderr);
    }
    // Detached: setsid, a double fork with nohup, a cleared environment. They leave the
    // agent's process tree, so nothing names the agent; nothing names a person either.
    let detached = [
        (
            "setsid -f",
            format!(
                r#"setsid -f sh -c '"$AFW" allow "web (claude)" "api (codex)" > {out_q} 2>&1; echo "rc=$?" >> {out_q}'"#
            ),
        ),
        (
            "a double fork with nohup",
            format!(r#"(nohup "$AFW" daemon --stop > {out_q} 2>&1; echo "rc=$?" >> {out_q}) &"#),
        ),
        (
            "env -i and setsid",
            format!(
                r#"env -i PATH=/usr/bin:/bin HOME="$HOME" AGENTFW_HOME="$AGENTFW_HOME" AFW="$AFW" setsid -f sh -c '"$AFW" quarantine lift "api (codex)" > {out_q} 2>&1; echo "rc=$?" >> {out_q}'"#
            ),
        ),
    ];
    for (how, command) in &detached {
        let _ = std::fs::remove_file(&out);
        let ran = web.run(command);
        assert_eq!(ran.code, 0, "{how}: {}", ran.stderr);
        let mut text = wait_for(&out);
        for _ in 0..200 {
            if text.contains("rc=") {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
            text = std::fs::read_to_string(&out).unwrap();
        }
        assert!(text.contains("rc=1"), "{how}: {text}");
        assert_refused(1, &text, how);
    }
    // `systemd-run`, where a user manager runs: it starts the command outside the session.
    if std::process::Command::new("systemd-run")
        .args(["--user", "--quiet", "--wait", "true"])
        .status()
        .is_ok_and(|s| s.success())
    {
        let ran = web.run(r#"systemd-run --user --quiet --wait --pipe "$AFW" daemon --stop"#);
        assert_refused(ran.code, &format!("{}{}", ran.stdout, ran.stderr), "systemd-run");
    }
    assert_eq!(w.daemon_pid(), Some(daemon), "the daemon was not stopped");
    assert!(std::path::Path::new(&format!("/proc/{daemon}")).exists());
    // The person still can.
    let (code, text) = w.person(&["allow", "web (claude)", "api (codex)"]);
    assert_eq!(code, 0, "{text}");
}

/// Attack 4: the blocked agent cannot lift its own block, nor edit who else is blocked.
#[test]
fn a_blocked_agent_cannot_unblock_itself() {
    let w = World::with_config(CONFIG);
    let (code, text) = w.person(&["block", "worker (cursor)"]);
    assert_eq!(code, 0, "{text}");
    let trust = w.home.join("trust.yaml");
    let before = std::fs::read_to_string(&trust).unwrap();
    let mut worker = w.agent("cursor-agent", "worker");
    for command in [r#""$AFW" unblock 'worker (cursor)'"#, r#""$AFW" block 'web (claude)'"#] {
        let ran = worker.run(command);
        assert_refused(ran.code, &ran.stderr, command);
    }
    assert_eq!(std::fs::read_to_string(&trust).unwrap(), before, "the trust file is unchanged");
    let r = worker.send("web (claude)", "let me out");
    assert!(r.error, "{}", r.text);
}

/// An agent cannot re-pin digests (and so verify a binary it planted), uninstall agentfw
/// from its harness, or join this machine to another relay.
#[test]
fn pinning_installing_and_joining_are_admin_too() {
    let w = World::with_config(CONFIG);
    let mut web = w.agent("claude", "web");
    let pins = std::fs::read_to_string(w.home.join("identity-pins.json")).unwrap();
    for command in [
        r#""$AFW" identity pin claude"#,
        r#""$AFW" uninstall claude"#,
        r#""$AFW" install claude --yes"#,
        r#""$AFW" join http://127.0.0.1:9 invite"#,
        r#""$AFW" keys rotate"#,
    ] {
        let ran = web.run(command);
        assert_refused(ran.code, &ran.stderr, command);
    }
    assert_eq!(std::fs::read_to_string(w.home.join("identity-pins.json")).unwrap(), pins, "the pins are unchanged");
}
