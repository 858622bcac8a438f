//! The process collector: a snapshot of a process and its ancestors for the core's identity
//! resolver (ID1–ID3), read from `/proc` on Linux.
//!
//! For each process on the walk: the parent pid and start time from `/proc/N/stat`
//! (field 22, clock ticks since boot, turned into milliseconds since the epoch with the boot
//! time), the executable from `/proc/N/exe`, `argv` from `cmdline`, the working directory
//! from `cwd`, the few environment variables that matter from `environ`, the git root of the
//! working directory, and for interpreters the real path of the script they run. Digests are
//! computed only when the agent found has pinned ones (a second resolve).
//!
//! Other platforms get [`CollectError::Unsupported`]: a clear "not supported yet", never a
//! wrong answer.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use agentfw_core::identity::{Identity, IdentityError, Process, Resolver, Snapshot};
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

/// Parent pid and start time (ticks since boot) from `/proc/N/stat`. The command name in
/// parentheses may hold spaces and parentheses, so fields are counted after the last `)`.
fn stat(pid: u32) -> io::Result<(u32, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "unexpected /proc/N/stat format");
    let (_, rest) = text.rsplit_once(')').ok_or_else(bad)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): ppid is field 4, starttime field 22.
    let ppid = fields.get(1).and_then(|f| f.parse().ok()).ok_or_else(bad)?;
    let start = fields.get(19).and_then(|f| f.parse().ok()).ok_or_else(bad)?;
    Ok((ppid, start))
}

/// When process `pid` started, or `None` if it is not running.
pub fn started_at(pid: u32, clock: &ProcClock) -> Option<Timestamp> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    stat(pid).ok().map(|(_, start)| clock.at(start))
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
    let (ppid, start) = stat(pid).map_err(|source| CollectError::Read { pid, source })?;
    let link = |what: &str| std::fs::read_link(format!("/proc/{pid}/{what}")).ok().map(|p| p.display().to_string());
    let argv: Vec<String> = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            raw.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect()
        })
        .unwrap_or_default();
    let cwd = link("cwd");
    let git_root = cwd.as_deref().and_then(|c| git_root(Path::new(c)));
    let script = cwd.as_deref().and_then(|c| script_path(&argv, Path::new(c)));
    Ok(Process {
        pid,
        ppid,
        exe: link("exe"),
        argv,
        cwd,
        started_at: clock.at(start),
        env: environ(pid, env_names),
        exe_digest: None,
        script,
        script_digest: None,
        git_root,
    })
}

/// `pid` and its ancestors, up to `max_depth` of them. A process that cannot be read ends
/// the walk; the resolver then says which parent is gone.
pub fn snapshot(pid: u32, clock: &ProcClock, env_names: &[String], max_depth: usize) -> Result<Snapshot, CollectError> {
    let first = read_process(pid, clock, env_names)?;
    let mut next = first.ppid;
    let mut snapshot = Snapshot::new();
    snapshot.insert(first);
    for _ in 0..max_depth {
        if next == 0 || snapshot.get(next).is_some() {
            break;
        }
        let Ok(p) = read_process(next, clock, env_names) else { break };
        next = p.ppid;
        snapshot.insert(p);
    }
    Ok(snapshot)
}

/// The environment variable names to collect for `resolver`'s configuration.
pub fn env_names(resolver: &Resolver) -> Vec<String> {
    let mut names: Vec<String> = resolver.config().agents.iter().flat_map(|a| a.session_env.iter().cloned()).collect();
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
        // Digests may be what is missing: fill in the agent's and try again below.
        Err(IdentityError::Unverified { pid: agent, .. }) => return retry_with_digest(resolver, snap, pid, agent),
        Err(e) => return Err(e.into()),
    };
    let pinned = resolver.config().agents.iter().any(|a| a.kind == identity.agent && !a.digests.is_empty());
    if !pinned {
        return Ok((identity, snap));
    }
    fill_digest(&mut snap, identity.pid);
    let identity = resolver.resolve(&snap, pid)?;
    Ok((identity, snap))
}

fn retry_with_digest(
    resolver: &Resolver,
    mut snap: Snapshot,
    pid: u32,
    agent: u32,
) -> Result<(Identity, Snapshot), CollectError> {
    fill_digest(&mut snap, agent);
    let identity = resolver.resolve(&snap, pid)?;
    Ok((identity, snap))
}

/// Hash the agent's executable and script (BLAKE3, hex) into the snapshot.
fn fill_digest(snap: &mut Snapshot, agent: u32) {
    let Some(mut p) = snap.get(agent).cloned() else { return };
    let digest = |path: &str| {
        let path = path.strip_suffix(" (deleted)").unwrap_or(path);
        std::fs::read(path).ok().map(|bytes| blake3::hash(&bytes).to_hex().to_string())
    };
    p.exe_digest = p.exe.as_deref().and_then(digest);
    p.script_digest = p.script.as_deref().and_then(digest);
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
        let (ppid, start) = stat(std::process::id()).unwrap();
        assert!(ppid > 0 && start > 0);
    }
}
