#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
//! `agentfw keys`, `agentfw seal` and `agentfw open` as a user runs them: the real binary,
//! one temporary home per device.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

/// One device: a home of its own and the file holding its public bundle line.
struct Device {
    home: PathBuf,
    pubfile: PathBuf,
}

fn agentfw(home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::cargo_bin("agentfw").expect("the agentfw binary");
    cmd.args(args).arg("--home").arg(home).env_remove("AGENTFW_HOME");
    cmd
}

fn run(home: &Path, args: &[&str], stdin: &[u8]) -> Output {
    agentfw(home, args).write_stdin(stdin.to_vec()).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn device(dir: &Path, name: &str) -> Device {
    let home = dir.join(name);
    let out = run(&home, &["keys", "new"], b"");
    assert!(out.status.success(), "keys new: {}", stderr(&out));
    let pubfile = dir.join(format!("{name}.pub"));
    std::fs::write(&pubfile, &out.stdout).unwrap();
    Device { home, pubfile }
}

fn seal(from: &Device, to: &Device, body: &[u8]) -> Vec<u8> {
    let out = run(&from.home, &["seal", "--to", to.pubfile.to_str().unwrap()], body);
    assert!(out.status.success(), "seal: {}", stderr(&out));
    out.stdout
}

fn open(at: &Device, from: &Device, envelope: &[u8]) -> Output {
    run(&at.home, &["open", "--from", from.pubfile.to_str().unwrap()], envelope)
}

fn refused(out: &Output, says: &str) {
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(out));
    assert!(out.stdout.is_empty());
    assert!(stderr(out).contains(says), "expected `{says}` in: {}", stderr(out));
}

#[test]
fn new_writes_private_keys_show_prints_the_same_line_and_new_refuses_to_overwrite() {
    let tmp = tempfile::tempdir().unwrap();
    let a = device(tmp.path(), "a");
    let line = std::fs::read_to_string(&a.pubfile).unwrap();
    assert!(line.starts_with("agentfw-pub-v1 "), "{line}");
    assert_eq!(line.lines().count(), 1);

    let key = a.home.join("keys/device.key");
    assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(a.home.join("keys")).unwrap().permissions().mode() & 0o777, 0o700);

    let out = run(&a.home, &["keys", "show"], b"");
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), line);
    assert!(!line.contains(&std::fs::read_to_string(&key).unwrap().lines().last().unwrap().to_string()));

    let before = std::fs::read(&key).unwrap();
    let out = run(&a.home, &["keys", "new"], b"");
    assert!(!out.status.success());
    assert!(stderr(&out).contains("refusing to overwrite"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&key).unwrap(), before);
}

#[test]
fn sealed_from_a_to_b_opens_on_b_and_only_once() {
    let tmp = tempfile::tempdir().unwrap();
    let a = device(tmp.path(), "a");
    let b = device(tmp.path(), "b");
    let envelope = seal(&a, &b, b"meet at noon\n");
    assert!(!envelope.windows(4).any(|w| w == b"noon"));

    let out = open(&b, &a, &envelope);
    assert!(out.status.success(), "open: {}", stderr(&out));
    assert_eq!(out.stdout, b"meet at noon\n");
    let cache = b.home.join("keys/replay.json");
    assert_eq!(std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777, 0o600);

    // A second run, with the cache read back from the home, refuses the replay.
    refused(&open(&b, &a, &envelope), "replay");
}

#[test]
fn open_refuses_the_wrong_sender_another_recipient_and_tampering() {
    let tmp = tempfile::tempdir().unwrap();
    let a = device(tmp.path(), "a");
    let b = device(tmp.path(), "b");
    let c = device(tmp.path(), "c");
    let envelope = seal(&a, &b, b"for b only");

    refused(&open(&b, &c, &envelope), "not a known device");
    refused(&open(&c, &a, &envelope), "another device");

    let mut tampered = envelope.clone();
    let last = tampered.len() - 100;
    tampered[last] ^= 1;
    refused(&open(&b, &a, &tampered), "signature");
    refused(&open(&b, &a, &envelope[..envelope.len() - 1]), "refused to open");
    refused(&open(&b, &a, b"not an envelope"), "refused to open");

    // None of the refusals used up the envelope.
    let out = open(&b, &a, &envelope);
    assert!(out.status.success(), "open: {}", stderr(&out));
    assert_eq!(out.stdout, b"for b only");
}

#[test]
fn seal_refuses_more_than_64_kib() {
    let tmp = tempfile::tempdir().unwrap();
    let a = device(tmp.path(), "a");
    let b = device(tmp.path(), "b");
    let body = vec![b'x'; 64 * 1024];
    let envelope = seal(&a, &b, &body);
    assert_eq!(open(&b, &a, &envelope).stdout, body);

    let out = run(&a.home, &["seal", "--to", b.pubfile.to_str().unwrap()], &vec![b'x'; 64 * 1024 + 1]);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).contains("too large"), "{}", stderr(&out));
}

#[test]
fn a_key_file_others_can_read_is_refused_with_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let a = device(tmp.path(), "a");
    let b = device(tmp.path(), "b");
    let key = a.home.join("keys/device.key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();

    let out = run(&a.home, &["keys", "show"], b"");
    assert!(!out.status.success());
    assert!(stderr(&out).contains("chmod 600"), "{}", stderr(&out));
    let out = run(&a.home, &["seal", "--to", b.pubfile.to_str().unwrap()], b"hi");
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());

    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert!(run(&a.home, &["keys", "show"], b"").status.success());
}

#[test]
fn after_rotate_the_old_bundle_no_longer_opens_and_the_rotation_notice_does() {
    let tmp = tempfile::tempdir().unwrap();
    let a = device(tmp.path(), "a");
    let b = device(tmp.path(), "b");
    let old_line = std::fs::read_to_string(&a.pubfile).unwrap();

    // The test process has no terminal: this home lets admin commands run from anywhere
    // (the check itself is tested in admin.rs).
    std::fs::write(a.home.join("config.toml"), "[admin]\nfrom_agents = true\n").unwrap();
    let out = run(&a.home, &["keys", "rotate"], b"");
    assert!(out.status.success(), "rotate: {}", stderr(&out));
    assert!(stderr(&out).contains("peers must apply the rotation"));
    let printed = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), 2, "{printed}");
    assert!(lines[0].starts_with("agentfw-rotate-v1 "));
    assert!(lines[1].starts_with("agentfw-pub-v1 "));
    let shown = run(&a.home, &["keys", "show"], b"");
    assert_eq!(String::from_utf8(shown.stdout).unwrap().trim(), lines[1]);

    // The old key file is kept, owner-only.
    let backups: Vec<_> = std::fs::read_dir(a.home.join("keys"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".key.old"))
        .collect();
    assert_eq!(backups.len(), 1);
    assert_eq!(std::fs::metadata(&backups[0]).unwrap().permissions().mode() & 0o777, 0o600);

    // B still holds only the old bundle: the new keys' envelopes do not open.
    let envelope = seal(&a, &b, b"new keys");
    refused(&open(&b, &a, &envelope), "not a known device");

    // Applying the notice (old line, then the rotation) opens them.
    std::fs::write(&a.pubfile, format!("{}{}\n", old_line, lines[0])).unwrap();
    let out = open(&b, &a, &envelope);
    assert!(out.status.success(), "open: {}", stderr(&out));
    assert_eq!(out.stdout, b"new keys");

    // And an envelope signed with the old keys is refused once the rotation is applied.
    let old_home = tmp.path().join("old-a");
    std::fs::create_dir_all(old_home.join("keys")).unwrap();
    std::fs::set_permissions(&old_home, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(old_home.join("keys"), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::copy(&backups[0], old_home.join("keys/device.key")).unwrap();
    std::fs::set_permissions(old_home.join("keys/device.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let old_a = Device { home: old_home, pubfile: a.pubfile.clone() };
    let stale = seal(&old_a, &b, b"old keys");
    refused(&open(&b, &a, &stale), "rotated away");
}

#[test]
fn open_without_keys_says_how_to_create_them() {
    let tmp = tempfile::tempdir().unwrap();
    let a = device(tmp.path(), "a");
    let out = run(&tmp.path().join("empty"), &["open", "--from", a.pubfile.to_str().unwrap()], b"x");
    refused(&out, "agentfw keys new");
}
