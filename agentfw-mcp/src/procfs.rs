//! The process collector: a snapshot of a process and its ancestors for the core's identity
//! resolver (ID1–ID3), read from `/proc` on Linux.
//!
//! For each process on the walk, to the top of the ancestry (ID6): the parent pid, process
//! group, session, controlling terminal and start time from `/proc/N/stat` (field 22, clock
//! ticks since boot, turned into milliseconds since the epoch with the boot time), the
//! executable from `/proc/N/exe`, `argv` from `cmdline`, the working directory from `cwd`,
//! the few environment variables that matter from `environ`, the git root of the working
//! directory, for interpreters the real path of the script they run, and whether the
//! process's user could replace its program (ID2). Digests are computed only for agents
//! with pinned ones (a second resolve), from `/proc/N/exe` itself, so a binary swapped after
//! it started is hashed as it runs, and kept by file identity so a harness is hashed once.
//!
//! [`placement`] collects more for admin commands (AM6): the processes in the caller's
//! terminal session and the holder of its pseudo-terminal's master side, each with its
//! ancestry.
//!
//! Other platforms get [`CollectError::Unsupported`]: a clear "not supported yet", never a
//! wrong answer.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use agentfw_core::identity::placement::pts_number;
use agentfw_core::identity::{Identity, IdentityError, Placement, Process, Resolver, Snapshot};
use agentfw_core::time::Timestamp;

/// Environment variables read from every process on the walk, besides the agents'
/// `session_env`: what waking (WK1) and the admission collector need.
pub const EXTRA_ENV: [&str; 4] = ["CLAUDE_CODE_MESSAGING_SOCKET", "CLAUDE_CODE_MESSAGING_TOKEN", "HOME", "CODEX_HOME"];

/// Why a process could not be read or named.
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    #[error(
        "reading processes is not supported on this platform yet: agentfw decides identity from Linux's `/proc` only"
    )]
    Unsupported,
    #[error("cannot read process {pid}: {source}")]
    Read { pid: u32, source: io::Error },
    #[error("cannot read the boot time from `/proc/stat`")]
    BootTime,
    #[error("{0}")]
    Identity(#[from] IdentityError),
}

/// Turns `/proc/N/stat` start times (clock ticks since boot) into wall-clock milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcClock {
    /// Boot time, milliseconds since the epoch.
    pub boot_ms: u64,
    /// Clock ticks per second (`_SC_CLK_TCK`).
    pub ticks: u64,
}

impl ProcClock {
    /// The boot time from `/proc/stat` (`btime`) and the kernel's tick rate.
    pub fn read() -> Result<Self, CollectError> {
        if !cfg!(target_os = "linux") {
            return Err(CollectError::Unsupported);
        }
        let stat = std::fs::read_to_string("/proc/stat").map_err(|_| CollectError::BootTime)?;
        let btime: u64 = stat
            .lines()
            .find_map(|l| l.strip_prefix("btime "))
            .and_then(|v| v.trim().parse().ok())
            .ok_or(CollectError::BootTime)?;
        Ok(Self::with_boot(btime.saturating_mul(1000)))
    }

    /// A clock with a boot time the caller remembered: `btime` can move by a second when
    /// the wall clock is stepped, and identities must not.
    pub fn with_boot(boot_ms: u64) -> Self {
        Self { boot_ms, ticks: ticks_per_second() }
    }

    fn at(&self, ticks_since_boot: u64) -> Timestamp {
        let ms = u128::from(ticks_since_boot) * 1000 / u128::from(self.ticks.max(1));
        Timestamp::from_millis(self.boot_ms.saturating_add(u64::try_from(ms).unwrap_or(u64::MAX)))
    }
}

#[cfg(target_os = "linux")]
fn ticks_per_second() -> u64 {
    rustix::param::clock_ticks_per_second()
}

#[cfg(not(target_os = "linux"))]
fn ticks_per_second() -> u64 {
    100
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`), to know when a remembered boot time
/// is stale.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok().map(|s| s.trim().to_owned())
}

/// Whether a process of this user can attach to another of its processes (ptrace) and run
/// code as it, which would let one agent speak as another: `Some(why)` when it can. Linux
/// lets any process attach to another of the same user unless the Yama module restricts it
/// (`kernel.yama.ptrace_scope` 1 or more: only to its own descendants).
pub fn ptrace_open() -> Option<String> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    match std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope").map(|s| s.trim().to_owned()) {
        Ok(scope) if scope == "0" => Some("kernel.yama.ptrace_scope is 0".to_owned()),
        Ok(_) => None,
        Err(_) => Some("this kernel has no Yama ptrace restriction".to_owned()),
    }
}

/// What `/proc/N/stat` says about a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stat {
    ppid: u32,
    pgrp: u32,
    sid: u32,
    tty: u32,
    /// -1 (no foreground group) becomes `None`.
    tpgid: Option<u32>,
    /// Ticks since boot.
    start: u64,
}

/// `/proc/N/stat`. The command name in parentheses may hold spaces and parentheses, so
/// fields are counted after the last `)`.
fn stat(pid: u32) -> io::Result<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat"))?)
}

fn parse_stat(text: &str) -> io::Result<Stat> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "unexpected /proc/N/stat format");
    let (_, rest) = text.rsplit_once(')').ok_or_else(bad)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): ppid is field 4, pgrp 5, session 6, tty_nr 7,
    // tpgid 8, starttime 22.
    let field = |i: usize| fields.get(i).ok_or_else(bad);
    let num = |i: usize| field(i).and_then(|f| f.parse::<u32>().map_err(|_| bad()));
    let tpgid: i64 = field(5)?.parse().map_err(|_| bad())?;
    Ok(Stat {
        ppid: num(1)?,
        pgrp: num(2)?,
        sid: num(3)?,
        // tty_nr is printed signed; its bits are what matter.
        tty: field(4)?.parse::<i64>().map_err(|_| bad())? as u32,
        tpgid: u32::try_from(tpgid).ok(),
        start: field(19)?.parse().map_err(|_| bad())?,
    })
}

/// When process `pid` started, or `None` if it is not running.
pub fn started_at(pid: u32, clock: &ProcClock) -> Option<Timestamp> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    stat(pid).ok().map(|st| clock.at(st.start))
}

/// Is the process that started at `started` with this pid still running?
pub fn alive(pid: u32, started: Timestamp, clock: &ProcClock) -> bool {
    started_at(pid, clock) == Some(started)
}

/// The variables named in `names` from process `pid`'s environment (empty if unreadable).
pub fn environ(pid: u32, names: &[String]) -> BTreeMap<String, String> {
    let Ok(raw) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return BTreeMap::new();
    };
    raw.split(|b| *b == 0)
        .filter_map(|entry| {
            let entry = std::str::from_utf8(entry).ok()?;
            let (k, v) = entry.split_once('=')?;
            names.iter().any(|n| n == k).then(|| (k.to_owned(), v.to_owned()))
        })
        .collect()
}

/// One process, as the resolver wants it.
pub fn read_process(pid: u32, clock: &ProcClock, env_names: &[String]) -> Result<Process, CollectError> {
    if !cfg!(target_os = "linux") {
        return Err(CollectError::Unsupported);
    }
    let st = stat(pid).map_err(|source| CollectError::Read { pid, source })?;
    let link = |what: &str| std::fs::read_link(format!("/proc/{pid}/{what}")).ok().map(|p| p.display().to_string());
    let argv: Vec<String> = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            raw.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect()
        })
        .unwrap_or_default();
    let cwd = link("cwd");
    let git_root = cwd.as_deref().and_then(|c| git_root(Path::new(c)));
    let script = cwd.as_deref().and_then(|c| script_path(&argv, Path::new(c)));
    let exe = link("exe");
    let started_at = clock.at(st.start);
    let owner = std::fs::metadata(format!("/proc/{pid}")).map(|m| m.uid()).ok();
    let program = script.as_deref().or(exe.as_deref()).map(|p| p.strip_suffix(" (deleted)").unwrap_or(p));
    let script_changed = script.as_deref().is_some_and(|s| changed_since(Path::new(s), started_at));
    Ok(Process {
        pid,
        ppid: st.ppid,
        program_writable: owner.zip(program).and_then(|(uid, p)| replaceable_by(Path::new(p), uid)),
        exe,
        argv,
        cwd,
        started_at,
        env: environ(pid, env_names),
        exe_digest: None,
        script,
        script_digest: None,
        git_root,
        script_changed,
        sid: st.sid,
        pgrp: st.pgrp,
        tty: st.tty,
        tpgid: st.tpgid,
        pty_masters: Vec::new(),
        foreign: false,
    })
}

/// `pid` and its ancestors, up to `max_depth` of them. A process that cannot be read ends
/// the walk (the resolver then says which parent is gone), except one of another user that
/// `/proc` hides: it is put in as such, and the walk ends at it.
pub fn snapshot(pid: u32, clock: &ProcClock, env_names: &[String], max_depth: usize) -> Result<Snapshot, CollectError> {
    let mut snapshot = Snapshot::new();
    add_ancestry(&mut snapshot, pid, clock, env_names, max_depth)?;
    Ok(snapshot)
}

/// Add `pid` and its ancestors to `snapshot` (those it has already are not read again).
fn add_ancestry(
    snapshot: &mut Snapshot,
    pid: u32,
    clock: &ProcClock,
    env_names: &[String],
    max_depth: usize,
) -> Result<(), CollectError> {
    let first = match snapshot.get(pid) {
        Some(p) => p.clone(),
        None => read_process(pid, clock, env_names)?,
    };
    let mut next = first.ppid;
    snapshot.insert(first);
    for _ in 0..max_depth {
        if next == 0 || snapshot.get(next).is_some() {
            break;
        }
        match read_process(next, clock, env_names) {
            Ok(p) => {
                next = p.ppid;
                snapshot.insert(p);
            }
            Err(_) if hidden_foreign(next) => {
                snapshot.insert(Process { pid: next, foreign: true, ..Process::default() });
                break;
            }
            Err(_) => break,
        }
    }
    Ok(())
}

/// A process that exists but that `/proc` does not show us: one of another user, with
/// `/proc` mounted `hidepid`. (Signal 0 to it is refused, not "no such process".)
#[cfg(target_os = "linux")]
fn hidden_foreign(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else { return false };
    rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::PERM)
}

#[cfg(not(target_os = "linux"))]
fn hidden_foreign(_pid: u32) -> bool {
    false
}

/// Could user `uid` replace the file at `path`: write it, or rename or remove it in a
/// directory it can write? Root can; an owner can (it may change the mode); so can anyone
/// when group or other may write (whether `uid` is in the group is not looked up: so
/// counted as yes). `None` when some part of the path cannot be read.
fn replaceable_by(path: &Path, uid: u32) -> Option<bool> {
    if uid == 0 {
        return Some(true);
    }
    let writable = |meta: &std::fs::Metadata| meta.uid() == uid || meta.mode() & 0o022 != 0;
    let file = std::fs::metadata(path).ok()?;
    if writable(&file) {
        return Some(true);
    }
    for dir in path.ancestors().skip(1) {
        let meta = std::fs::metadata(dir).ok()?;
        // A sticky directory (`/tmp`) lets only a file's owner rename or remove it.
        let sticky = meta.mode() & 0o1000 != 0;
        if writable(&meta) && !(sticky && file.uid() != uid && meta.uid() != uid) {
            return Some(true);
        }
    }
    Some(false)
}

/// Did the file at `path` change (its inode's change time, which nobody can set back)
/// after `started`?
fn changed_since(path: &Path, started: Timestamp) -> bool {
    let Ok(meta) = std::fs::metadata(path) else { return true };
    let changed_ms = meta.ctime().saturating_mul(1000).saturating_add(meta.ctime_nsec() / 1_000_000);
    // Start times have the kernel's tick (10 ms) resolution.
    u64::try_from(changed_ms).map_or(true, |ms| ms > started.as_millis().saturating_add(10))
}

/// The environment variable names to collect for `resolver`'s configuration: session ids,
/// harness markers, and what waking and admission need.
pub fn env_names(resolver: &Resolver) -> Vec<String> {
    let agents = resolver.config().agents.iter();
    let mut names: Vec<String> = agents.flat_map(|a| a.session_env.iter().chain(&a.env_markers).cloned()).collect();
    names.extend(EXTRA_ENV.iter().map(|s| (*s).to_owned()));
    names.sort();
    names.dedup();
    names
}

/// The agent session process `pid` belongs to, with the snapshot it was decided from.
pub fn identify(resolver: &Resolver, pid: u32, clock: &ProcClock) -> Result<(Identity, Snapshot), CollectError> {
    let names = env_names(resolver);
    let mut snap = snapshot(pid, clock, &names, resolver.config().max_depth)?;
    let identity = match resolver.resolve(&snap, pid) {
        Ok(identity) => identity,
        // Digests may be what is missing: fill in the agent's and try again.
        Err(IdentityError::Unverified { pid: agent, .. }) => {
            fill_digest(&mut snap, agent);
            return Ok((resolver.resolve(&snap, pid)?, snap));
        }
        Err(e) => return Err(e.into()),
    };
    let pinned = |kind: &str| resolver.config().agents.iter().any(|a| a.kind == kind && !a.digests.is_empty());
    let sessions = std::iter::once(&identity).chain(&identity.within);
    let to_hash: Vec<u32> = sessions.filter(|i| !i.verified && pinned(&i.agent)).map(|i| i.pid).collect();
    if to_hash.is_empty() {
        return Ok((identity, snap));
    }
    for agent in to_hash {
        fill_digest(&mut snap, agent);
    }
    let identity = resolver.resolve(&snap, pid)?;
    Ok((identity, snap))
}

/// Where process `pid` stands for admin commands (AM6): its ancestry, the processes in its
/// terminal session and the holder of its terminal, each with its ancestry, judged by the
/// core. Anything that cannot be read makes it [`Placement::Unknown`].
pub fn placement(resolver: &Resolver, pid: u32, clock: &ProcClock) -> Placement {
    match collect_placement(resolver, pid, clock) {
        Ok(snap) => resolver.place(&snap, pid),
        Err(e) => Placement::Unknown { why: e.to_string() },
    }
}

fn collect_placement(resolver: &Resolver, pid: u32, clock: &ProcClock) -> Result<Snapshot, CollectError> {
    let names = env_names(resolver);
    let depth = resolver.config().max_depth;
    let mut snap = snapshot(pid, clock, &names, depth)?;
    let Some(me) = snap.get(pid).cloned() else { return Ok(snap) };
    if me.tty == 0 {
        return Ok(snap);
    }
    let pts = pts_number(me.tty);
    let entries = std::fs::read_dir("/proc").map_err(|source| CollectError::Read { pid, source })?;
    for entry in entries.flatten() {
        let Some(other) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if other == pid {
            continue;
        }
        let Ok(st) = stat(other) else { continue };
        let masters = pts.map(|n| pty_masters(other).into_iter().filter(|m| *m == n).collect()).unwrap_or_default();
        let same_session = st.sid == me.sid;
        if !same_session && Vec::is_empty(&masters) {
            continue;
        }
        let Ok(mut p) = read_process(other, clock, &names) else { continue };
        p.pty_masters = masters;
        let holder = !p.pty_masters.is_empty();
        snap.insert(p);
        if holder {
            add_ancestry(&mut snap, other, clock, &names, depth)?;
        }
    }
    Ok(snap)
}

/// The `/dev/pts` numbers of the pseudo-terminals whose master side process `pid` holds
/// (`/dev/ptmx` descriptors, with their `tty-index` in `fdinfo`). Empty if its descriptors
/// cannot be read (another user's).
fn pty_masters(pid: u32) -> Vec<u32> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
    fds.flatten()
        .filter(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|t| t == Path::new("/dev/ptmx") || t == Path::new("/dev/pts/ptmx"))
        })
        .filter_map(|fd| {
            let info =
                std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{}", fd.file_name().to_string_lossy())).ok()?;
            info.lines().find_map(|l| l.strip_prefix("tty-index:")).and_then(|v| v.trim().parse().ok())
        })
        .collect()
}

/// Digests already computed, by the identity of the file hashed: device, inode, size,
/// modification and change times. A changed file has another change time (which nobody
/// can set back), so it is hashed again.
type FileKey = (u64, u64, u64, i64, i64, i64, i64);

fn digests() -> &'static Mutex<HashMap<FileKey, String>> {
    static DIGESTS: std::sync::OnceLock<Mutex<HashMap<FileKey, String>>> = std::sync::OnceLock::new();
    DIGESTS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The BLAKE3 digest (hex) of the file open at `path`, from the cache if it did not change.
#[allow(clippy::disallowed_types)] // the adapter reads files
pub fn digest_file(path: &Path) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    let key = (meta.dev(), meta.ino(), meta.size(), meta.mtime(), meta.mtime_nsec(), meta.ctime(), meta.ctime_nsec());
    if let Some(d) = digests().lock().ok().and_then(|m| m.get(&key).cloned()) {
        return Some(d);
    }
    let mut hasher = blake3::Hasher::new();
    std::io::copy(&mut file, &mut hasher).ok()?;
    let digest = hasher.finalize().to_hex().to_string();
    if let Ok(mut m) = digests().lock() {
        if m.len() > 256 {
            m.clear();
        }
        m.insert(key, digest.clone());
    }
    Some(digest)
}

/// Hash the agent's executable (as it runs: `/proc/N/exe`) and script into the snapshot.
fn fill_digest(snap: &mut Snapshot, agent: u32) {
    let Some(mut p) = snap.get(agent).cloned() else { return };
    p.exe_digest = digest_file(Path::new(&format!("/proc/{agent}/exe")));
    p.script_digest = p.script.as_deref().and_then(|s| digest_file(Path::new(s)));
    snap.insert(p);
}

/// The nearest directory at or above `dir` holding `.git`.
fn git_root(dir: &Path) -> Option<String> {
    dir.ancestors().take(64).find(|d| d.join(".git").exists()).map(|d| d.display().to_string())
}

/// For an interpreter: the first argument that is not an option, if it names a file
/// (resolved against the working directory, symlinks followed).
fn script_path(argv: &[String], cwd: &Path) -> Option<String> {
    let arg = argv.iter().skip(1).find(|a| !a.starts_with('-'))?;
    let path = if arg.starts_with('/') { PathBuf::from(arg) } else { cwd.join(arg) };
    let real = std::fs::canonicalize(path).ok()?;
    real.is_file().then(|| real.display().to_string())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_read_with_its_start_time_and_parent() {
        let clock = ProcClock::read().unwrap();
        let me = std::process::id();
        let p = read_process(me, &clock, &[]).unwrap();
        assert_eq!(p.pid, me);
        assert!(p.ppid > 0);
        assert!(p.exe.is_some());
        assert!(p.started_at.as_millis() > clock.boot_ms);
        assert!(alive(me, p.started_at, &clock));
        assert!(!alive(me, Timestamp::from_millis(p.started_at.as_millis() + 1), &clock));
        let snap = snapshot(me, &clock, &[], 64).unwrap();
        assert!(snap.len() >= 2, "the walk reaches the parent");
    }

    #[test]
    fn a_command_name_with_parentheses_does_not_confuse_stat() {
        let st = stat(std::process::id()).unwrap();
        assert!(st.ppid > 0 && st.start > 0);
        let line = "42 (a) b (c)) S 1 42 42 34816 42 4194560 0 0 0 0 0 0 0 0 20 0 1 0 5000 0 0";
        let st = parse_stat(line).unwrap();
        assert_eq!((st.ppid, st.pgrp, st.sid, st.tty, st.tpgid, st.start), (1, 42, 42, 34816, Some(42), 5000));
        let detached = "7 (sh) S 1 7 7 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 9 0 0";
        assert_eq!(parse_stat(detached).unwrap().tpgid, None);
    }

    #[test]
    fn replaceability_follows_ownership_and_modes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("claude");
        std::fs::write(&file, "x").unwrap();
        assert_eq!(replaceable_by(&file, 0), Some(true), "root can replace anything");
        let mine = std::fs::metadata(&file).unwrap().uid();
        assert_eq!(replaceable_by(&file, mine), Some(true), "the owner can");
        assert_eq!(replaceable_by(Path::new("/nonexistent/x"), 1000), None);
        // A root-owned system file is out of reach of an unprivileged user.
        if std::fs::metadata("/bin/sh").is_ok_and(|m| m.uid() == 0 && m.mode() & 0o022 == 0) {
            assert_eq!(replaceable_by(Path::new("/bin/sh"), 4242), Some(false));
        }
    }
}
