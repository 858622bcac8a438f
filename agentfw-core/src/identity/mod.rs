//! Identity from the operating system (ID1–ID5): which agent session a process belongs to.
//!
//! The caller is decided from a snapshot of processes, never from anything the model or
//! client says. [`Resolver::resolve`] starts at a pid (the peer of a socket, a hook, this
//! process), walks up through shells and launchers (`sh -c`, `npx`, a pyenv shim, Codex's
//! `node …/.bin/codex` wrapper) and stops at the first known agent: a native binary such as
//! `claude`, or an interpreter running an agent's script (Gemini is `node … gemini`).
//!
//! - ID2: a binary merely *named* `claude` is not enough. The program's real path must lie
//!   in one of the agent's install locations, and its digest must be a pinned one when
//!   digests are pinned; otherwise the identity is marked unverified (or refused, when the
//!   configuration requires verified binaries).
//! - ID3: the session is agent kind + pid + process start time, so a reused pid never
//!   inherits an identity. The label is `<project> (<agent>)`, the project being the
//!   basename of the agent's git root, else of its working directory.
//! - ID4: where one process hosts many sessions (Codex's `app-server`), a harness session id
//!   refines the identity; it never replaces kind, pid and start time.
//! - ID6: the walk does not stop at the first agent. It goes on to the top of the ancestry,
//!   and every agent above the first is a session the first one runs inside
//!   ([`Identity::within`]): its label names them (`web (claude) in worker (cursor)`), and it
//!   inherits their standing. A session can never take a top-level session's label by
//!   starting a program named like a harness.
//! - AM6: [`Resolver::place`] decides whether a process is positively outside every agent
//!   session, for admin commands; see [`placement`].
//!
//! The resolver is pure: the adapter collects the snapshot (on Linux from `/proc`) and
//! passes it in. A corrupted snapshot (a cycle, a missing parent, a parent younger than its
//! child) gives an error that says so; nothing hangs or panics.
//!
//! Digests cost a read of the whole binary, so an adapter may resolve once without them and,
//! if the agent found has pinned digests, fill in that one process's digest and resolve again.

use core::fmt;
use std::collections::BTreeMap;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

use crate::message::{Agent, AgentId, Enclosing};
use crate::time::Timestamp;

mod ancestry;
mod config;
pub mod placement;

pub use config::{AgentSpec, IdentityConfig};
pub use placement::Placement;

use ancestry::Ancestry;

/// One process as the adapter saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Process {
    pub pid: u32,
    /// The parent's pid; 0 when there is none.
    pub ppid: u32,
    /// The real path of the executable (`/proc/N/exe`), if readable.
    pub exe: Option<String>,
    pub argv: Vec<String>,
    pub cwd: Option<String>,
    /// When the process started. A parent that started after its child is not its parent.
    pub started_at: Timestamp,
    /// The environment variables that matter (the agents' `session_env`), when readable.
    pub env: BTreeMap<String, String>,
    /// The executable's digest, when the adapter computed it.
    pub exe_digest: Option<String>,
    /// For an interpreter, the real path of the script it runs (argument resolved against
    /// the working directory, symlinks followed), when the adapter resolved it.
    pub script: Option<String>,
    /// That script's digest, when the adapter computed it.
    pub script_digest: Option<String>,
    /// The git root of the working directory, if it is in a repository.
    pub git_root: Option<String>,
    /// Whether the user this process runs as could replace its program (the executable, or
    /// an interpreter's script): the file or a directory above it is writable by that user.
    /// `None` when the adapter could not tell. A program its user cannot replace is a real
    /// install (ID2); one it can must have a pinned digest.
    pub program_writable: Option<bool>,
    /// The interpreter's script changed after the process started: what runs is not what
    /// the adapter hashed.
    pub script_changed: bool,
    /// Session id, process group, controlling terminal (`tty_nr` of `/proc/N/stat`, 0 for
    /// none) and that terminal's foreground process group: what [`placement`] looks at.
    pub sid: u32,
    pub pgrp: u32,
    pub tty: u32,
    pub tpgid: Option<u32>,
    /// The pseudo-terminals (their `/dev/pts` numbers) whose master side this process holds.
    pub pty_masters: Vec<u32>,
    /// A process of another user, seen only by its pid: nothing about it could be read, and
    /// no session of this user runs above it, so the walk ends there.
    pub foreign: bool,
}

/// The processes the resolver may look at, by pid.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    processes: BTreeMap<u32, Process>,
}

impl Snapshot {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a process (replacing one with the same pid).
    pub fn insert(&mut self, process: Process) {
        self.processes.insert(process.pid, process);
    }

    pub fn get(&self, pid: u32) -> Option<&Process> {
        self.processes.get(&pid)
    }

    pub fn len(&self) -> usize {
        self.processes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.processes.is_empty()
    }

    /// Every process in the snapshot, by pid.
    pub fn processes(&self) -> impl Iterator<Item = &Process> {
        self.processes.values()
    }
}

impl FromIterator<Process> for Snapshot {
    fn from_iter<I: IntoIterator<Item = Process>>(iter: I) -> Self {
        Self { processes: iter.into_iter().map(|p| (p.pid, p)).collect() }
    }
}

/// Why an agent's binary is not verified (ID2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum Unverified {
    /// The executable's path could not be read.
    PathUnknown,
    /// The program is not under any of the agent's install locations.
    OutsideInstallLocations { path: String },
    /// Digests are pinned but this program's was not computed.
    DigestUnknown { path: String },
    /// Digests are pinned and this program's is not one of them.
    DigestMismatch { path: String, digest: String },
    /// The program's user may replace it (or whether it may is unknown), and no digest is
    /// pinned for this agent.
    Unpinned { path: String },
    /// The script changed after the interpreter started: its digest says nothing about
    /// what runs.
    ChangedSinceStart { path: String },
}

impl fmt::Display for Unverified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unverified::PathUnknown => f.write_str("its executable's path could not be read"),
            Unverified::OutsideInstallLocations { path } => {
                write!(f, "`{path}` is not at a trusted install location")
            }
            Unverified::DigestUnknown { path } => write!(f, "digests are pinned but the digest of `{path}` is unknown"),
            Unverified::DigestMismatch { path, digest } => {
                write!(f, "the digest of `{path}` is `{digest}`, which is not a pinned one")
            }
            Unverified::Unpinned { path } => write!(
                f,
                "`{path}` can be replaced by the user it runs as and its digest is not pinned (after installing or updating the harness, a person pins it with `agentfw identity pin`)"
            ),
            Unverified::ChangedSinceStart { path } => {
                write!(f, "`{path}` changed after the process started, so what runs is not what was checked")
            }
        }
    }
}

/// A harness session id and where it came from (ID4).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    pub id: String,
    /// The environment variable it was read from, or `hook` when a verified hook told it.
    pub source: String,
    /// The process whose environment held it, if it came from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// What a process on the walk was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepRole {
    /// The process the walk started at (the caller itself).
    Start,
    /// A shell or launcher passed through.
    Launcher,
    /// The agent.
    Agent,
    /// Any other process above an agent, on the way to the sessions it runs inside (ID6).
    Passed,
}

/// One process on the walk from the start up to the agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub pid: u32,
    pub name: String,
    pub role: StepRole,
}

/// An agent session, decided from the operating system (ID1, ID3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// The agent kind: `claude`, `codex`, …
    pub agent: String,
    pub pid: u32,
    pub started_at: Timestamp,
    /// The agent's executable.
    pub exe: Option<String>,
    /// For an agent run by an interpreter, its script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    pub cwd: Option<String>,
    pub project: String,
    /// `<project> (<agent>)`.
    pub label: String,
    pub verified: bool,
    /// Why not, when not verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unverified: Option<Unverified>,
    /// The harness session id, when one is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<Session>,
    /// The process hosts many sessions: its session id is part of the identity (ID4).
    pub shared_host: bool,
    /// The walk, from the start process up to the agent (for a session in
    /// [`Identity::within`]: from above the session inside it up to this one).
    pub chain: Vec<Step>,
    /// The sessions this one runs inside, nearest first (ID6), each as it resolves on its
    /// own (their own `within` is empty: the rest of this list is what encloses them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub within: Vec<Identity>,
}

impl Identity {
    /// The stable session id (ID3): `<kind>:<pid>:<start ms>`, and `:<session>` for a refined
    /// shared host (ID4), e.g. `claude:4242:1796047400000`.
    pub fn agent_id(&self) -> AgentId {
        let base = format!("{}:{}:{}", self.agent, self.pid, self.started_at.as_millis());
        match (&self.session, self.shared_host) {
            (Some(s), true) => AgentId::new(format!("{base}:{}", s.id)),
            _ => AgentId::new(base),
        }
    }

    /// The agent as the firewall sees it, with the sessions it runs inside (ID6) and
    /// whether anything in that chain is unverified (ID2).
    pub fn to_agent(&self) -> Agent {
        Agent {
            within: self
                .within
                .iter()
                .map(|w| Enclosing { id: w.agent_id(), kind: w.agent.clone(), project: w.project.clone() })
                .collect(),
            unverified: !self.verified || self.within.iter().any(|w| !w.verified),
            ..Agent::new(self.agent_id().as_str(), self.agent.as_str(), self.project.as_str())
        }
    }

    /// Whether this session runs inside another one (ID6).
    pub fn is_nested(&self) -> bool {
        !self.within.is_empty()
    }

    /// Same process: same kind, pid and start time (sessions aside).
    pub fn same_process(&self, other: &Identity) -> bool {
        self.agent == other.agent && self.pid == other.pid && self.started_at == other.started_at
    }

    /// Refine with a harness session id that the adapter verified, e.g. from a hook whose own
    /// ancestry resolved to [`Identity::same_process`] (ID4). Kind, pid and start time stay.
    /// A shared host that already has a different session id is an error.
    pub fn refine(&mut self, session_id: &str, source: &str) -> Result<(), IdentityError> {
        if !valid_session(session_id) {
            return Err(IdentityError::InvalidSession(session_id.chars().take(80).collect()));
        }
        if let Some(have) = self.session.as_ref().filter(|have| self.shared_host && have.id != session_id) {
            return Err(IdentityError::SessionConflict { have: have.id.clone(), got: session_id.to_owned() });
        }
        self.session = Some(Session { id: session_id.to_owned(), source: source.to_owned(), pid: None });
        Ok(())
    }
}

/// Session ids are opaque tokens (UUIDs in practice): printable ASCII without spaces.
fn valid_session(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
}

/// Why there is no agent for a process, or the configuration is unusable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    #[error("process {pid} is not in the process snapshot: it is not running, or it exited before it could be read")]
    StartNotFound { pid: u32 },
    #[error(
        "process {child}'s parent {parent} is gone: it exited, or its pid now belongs to a process that started later; the agent session may have ended"
    )]
    ParentGone { child: u32, parent: u32 },
    #[error("the process snapshot is corrupt: process {pid} is its own ancestor")]
    Cycle { pid: u32 },
    #[error(
        "no known agent within {depth} processes above process {start}; if agents really run that deep, raise `identity.max_depth`"
    )]
    TooDeep { start: u32, depth: usize },
    #[error(
        "process {start} was not started by a known agent: its ancestry ends at process {top} (`{name}`) without one; run it from an agent session, or add the agent to `identity.agents`"
    )]
    NoAgent { start: u32, top: u32, name: String },
    #[error(
        "process {start} was not started by a known agent: the walk stopped at process {pid} (`{name}`), which is neither a known agent nor a launcher; if it only starts other programs, add `{name}` to `identity.launchers`; if it is an agent, add it to `identity.agents`"
    )]
    Unrecognized { start: u32, pid: u32, name: String },
    #[error(
        "process {pid} runs as {agent}, but {why}; verified binaries are required (`identity.require_verified`): install {agent} at a trusted location, add its location to `install_locations`, or pin its digest"
    )]
    Unverified { agent: String, pid: u32, why: Unverified },
    #[error("identity configuration: `{pattern}` is not a valid pattern: {problem}")]
    Pattern { pattern: String, problem: String },
    #[error("identity configuration: an agent has an empty `kind`")]
    EmptyKind,
    #[error("`{0}` is not a session id: use letters, digits, `-`, `_`, `.` or `:` (at most 128)")]
    InvalidSession(String),
    #[error(
        "this process already has session `{have}`, not `{got}`: a session id refines an identity, it never replaces one"
    )]
    SessionConflict { have: String, got: String },
}

/// Glob patterns split by what they match: names (no `/`) or whole paths.
#[derive(Clone, Debug)]
struct Patterns {
    names: GlobSet,
    paths: GlobSet,
    any: bool,
}

impl Patterns {
    fn new(patterns: &[String]) -> Result<Self, IdentityError> {
        let (mut names, mut paths) = (GlobSetBuilder::new(), GlobSetBuilder::new());
        for p in patterns {
            let glob = GlobBuilder::new(p)
                .literal_separator(true)
                .build()
                .map_err(|e| IdentityError::Pattern { pattern: p.clone(), problem: e.kind().to_string() })?;
            if p.contains('/') {
                paths.add(glob)
            } else {
                names.add(glob)
            };
        }
        let build = |b: GlobSetBuilder| {
            b.build().map_err(|e| IdentityError::Pattern { pattern: patterns.join(", "), problem: e.to_string() })
        };
        Ok(Self { names: build(names)?, paths: build(paths)?, any: !patterns.is_empty() })
    }

    /// Does `path` (or just its file name) match?
    fn matches(&self, path: &str) -> bool {
        self.any && (self.names.is_match(basename(path)) || (path.contains('/') && self.paths.is_match(path)))
    }
}

#[derive(Clone, Debug)]
struct CompiledAgent {
    executables: Patterns,
    scripts: Patterns,
    install_locations: Patterns,
}

/// What one process is.
enum Class {
    /// Agent `index`, its program's path (executable, or script for an interpreter) and
    /// whether that path is a script.
    Agent {
        index: usize,
        program: Option<String>,
        script: Option<String>,
    },
    Launcher,
    Other,
}

/// Decides which agent session a process belongs to. Build it once from the configuration.
#[derive(Clone, Debug)]
pub struct Resolver {
    config: IdentityConfig,
    agents: Vec<CompiledAgent>,
    launchers: Patterns,
    interpreters: Patterns,
    launcher_scripts: Patterns,
}

impl Resolver {
    /// Compile the configuration's patterns; a bad pattern is an error that names it.
    pub fn new(config: IdentityConfig) -> Result<Self, IdentityError> {
        let agents = config
            .agents
            .iter()
            .map(|a| {
                if a.kind.trim().is_empty() {
                    return Err(IdentityError::EmptyKind);
                }
                Ok(CompiledAgent {
                    executables: Patterns::new(&a.executables)?,
                    scripts: Patterns::new(&a.scripts)?,
                    install_locations: Patterns::new(&a.install_locations)?,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            agents,
            launchers: Patterns::new(&config.launchers)?,
            interpreters: Patterns::new(&config.interpreters)?,
            launcher_scripts: Patterns::new(&config.launcher_scripts)?,
            config,
        })
    }

    pub fn config(&self) -> &IdentityConfig {
        &self.config
    }

    /// The agent session that process `start` belongs to, with the sessions it runs inside
    /// (ID6), or precisely why there is none.
    pub fn resolve(&self, snapshot: &Snapshot, start: u32) -> Result<Identity, IdentityError> {
        let walk = Ancestry::walk(snapshot, start, self.config.max_depth)?;
        let classes: Vec<Class> = walk.procs.iter().map(|p| self.classify(p)).collect();
        let Some(inner) = classes.iter().position(|c| matches!(c, Class::Agent { .. })) else {
            return Err(self.no_agent(&walk, &classes, start));
        };
        let mut chain = Vec::new();
        for (i, (p, class)) in walk.procs.iter().zip(&classes).enumerate().take(inner) {
            let role = match class {
                Class::Launcher => StepRole::Launcher,
                _ if i == 0 => StepRole::Start,
                _ => return Err(IdentityError::Unrecognized { start, pid: p.pid, name: display_name(p) }),
            };
            chain.push(Step { pid: p.pid, name: display_name(p), role });
        }
        // Above the agent, the whole ancestry must be seen: a part that could not be read
        // could hide a session this one runs inside.
        if let Some(e) = walk.error(start, self.config.max_depth) {
            return Err(e);
        }
        let mut sessions = Vec::new();
        let mut steps = chain;
        for (p, class) in walk.procs.iter().zip(&classes).skip(inner) {
            let Class::Agent { index, program, script } = class else {
                steps.push(Step { pid: p.pid, name: display_name(p), role: StepRole::Passed });
                continue;
            };
            steps.push(Step { pid: p.pid, name: display_name(p), role: StepRole::Agent });
            let steps = std::mem::take(&mut steps);
            sessions.push(self.identity(snapshot, p, *index, program.clone(), script.clone(), steps)?);
        }
        let mut sessions = sessions.into_iter();
        let Some(mut identity) = sessions.next() else {
            return Err(self.no_agent(&walk, &classes, start));
        };
        identity.within = sessions.collect();
        let agent = identity.to_agent();
        identity.label = agent.label();
        for (outer, enclosing) in identity.within.iter_mut().zip(agent.enclosing()) {
            outer.label = enclosing.label();
        }
        Ok(identity)
    }

    /// Why a walk met no agent.
    fn no_agent(&self, walk: &Ancestry<'_>, classes: &[Class], start: u32) -> IdentityError {
        // A process other than a launcher stops the walk, unless it is the top (init).
        let stray = walk.procs.iter().zip(classes).skip(1).find(|(p, c)| matches!(c, Class::Other) && p.ppid != 0);
        if let Some((p, _)) = stray {
            return IdentityError::Unrecognized { start, pid: p.pid, name: display_name(p) };
        }
        match walk.error(start, self.config.max_depth) {
            Some(e) => e,
            None => {
                let top = walk.procs.last();
                IdentityError::NoAgent {
                    start,
                    top: top.map_or(start, |p| p.pid),
                    name: top.map_or_else(String::new, |p| display_name(p)),
                }
            }
        }
    }

    /// Whether `path` is a program of agent `kind`: an executable or a script of its, at
    /// one of its install locations. What `agentfw identity pin` looks for.
    pub fn is_program_of(&self, kind: &str, path: &str) -> bool {
        let Some(i) = self.config.agents.iter().position(|a| a.kind == kind) else { return false };
        self.agents.get(i).is_some_and(|a| {
            (a.executables.matches(path) || a.scripts.matches(path)) && a.install_locations.matches(path)
        })
    }

    /// Whether `p` is an agent (by its executable, or an interpreter's script).
    fn is_agent(&self, p: &Process) -> bool {
        matches!(self.classify(p), Class::Agent { .. })
    }

    fn classify(&self, p: &Process) -> Class {
        let exe = p.exe.as_deref().map(strip_deleted);
        let Some(name_source) = exe.or_else(|| p.argv.first().map(String::as_str)) else {
            return Class::Other;
        };
        if let Some(index) = self.agents.iter().position(|a| a.executables.matches(name_source)) {
            return Class::Agent { index, program: exe.map(str::to_owned), script: None };
        }
        if self.interpreters.matches(name_source) {
            let Some(arg) = script_arg(&p.argv) else { return Class::Other };
            let joined = match (arg.starts_with('/'), &p.cwd) {
                (false, Some(cwd)) => format!("{}/{}", cwd.trim_end_matches('/'), arg.trim_start_matches("./")),
                _ => arg.to_owned(),
            };
            let resolved = p.script.clone().unwrap_or(joined);
            let is = |pats: &Patterns| pats.matches(arg) || pats.matches(&resolved);
            if let Some(index) = self.agents.iter().position(|a| is(&a.scripts)) {
                return Class::Agent { index, program: Some(resolved.clone()), script: Some(resolved) };
            }
            if is(&self.launcher_scripts) {
                return Class::Launcher;
            }
            return Class::Other;
        }
        if self.launchers.matches(name_source) { Class::Launcher } else { Class::Other }
    }

    fn identity(
        &self,
        snapshot: &Snapshot,
        p: &Process,
        index: usize,
        program: Option<String>,
        script: Option<String>,
        chain: Vec<Step>,
    ) -> Result<Identity, IdentityError> {
        let (Some(spec), Some(compiled)) = (self.config.agents.get(index), self.agents.get(index)) else {
            return Err(IdentityError::EmptyKind);
        };
        let digest = if script.is_some() { &p.script_digest } else { &p.exe_digest };
        let pinned = |d: &String| spec.digests.iter().any(|pin| pin.eq_ignore_ascii_case(d));
        let unverified = match program {
            None => Some(Unverified::PathUnknown),
            Some(path) if !compiled.install_locations.any || !compiled.install_locations.matches(&path) => {
                Some(Unverified::OutsideInstallLocations { path })
            }
            Some(path) if script.is_some() && p.script_changed => Some(Unverified::ChangedSinceStart { path }),
            Some(_) if digest.as_ref().is_some_and(pinned) => None,
            Some(_) if p.program_writable == Some(false) => None,
            Some(path) if !spec.digests.is_empty() => match digest {
                None => Some(Unverified::DigestUnknown { path }),
                Some(d) => Some(Unverified::DigestMismatch { path, digest: d.clone() }),
            },
            Some(path) => Some(Unverified::Unpinned { path }),
        };
        if let (Some(why), true) = (&unverified, self.config.require_verified) {
            return Err(IdentityError::Unverified { agent: spec.kind.clone(), pid: p.pid, why: why.clone() });
        }
        let shared_host = p.argv.iter().skip(1).any(|a| spec.shared_host_args.contains(a));
        let project_dir = p.git_root.as_deref().or(p.cwd.as_deref());
        let project = project_dir.map_or_else(|| "unknown".to_owned(), project_name);
        let session = session(snapshot, spec, &chain);
        Ok(Identity {
            within: Vec::new(),
            agent: spec.kind.clone(),
            pid: p.pid,
            started_at: p.started_at,
            exe: p.exe.as_deref().map(|e| strip_deleted(e).to_owned()),
            script,
            cwd: p.cwd.clone(),
            label: format!("{project} ({})", spec.kind),
            project,
            verified: unverified.is_none(),
            unverified,
            session,
            shared_host,
            chain,
        })
    }
}

/// The session id from the environment of the processes below the agent, nearest first:
/// the agent's own child got its environment from the harness, while a process further down
/// may have had it set by a command the model wrote. Malformed values are skipped.
fn session(snapshot: &Snapshot, spec: &AgentSpec, chain: &[Step]) -> Option<Session> {
    chain.iter().rev().filter(|s| s.role != StepRole::Agent).find_map(|step| {
        let env = &snapshot.get(step.pid)?.env;
        spec.session_env.iter().find_map(|var| {
            let id = env.get(var).filter(|v| valid_session(v))?;
            Some(Session { id: id.clone(), source: var.clone(), pid: Some(step.pid) })
        })
    })
}

/// The name a process goes by: its executable's file name, else `argv[0]`'s.
fn display_name(p: &Process) -> String {
    let source = p.exe.as_deref().map(strip_deleted).or_else(|| p.argv.first().map(String::as_str)).unwrap_or("?");
    basename(source).chars().take(64).collect()
}

/// `/proc/N/exe` of a replaced binary reads `… (deleted)`.
fn strip_deleted(path: &str) -> &str {
    path.strip_suffix(" (deleted)").unwrap_or(path)
}

fn basename(path: &str) -> &str {
    path.trim_end_matches('/').rsplit('/').next().unwrap_or(path)
}

/// The project a directory names: its basename (`/` for the root), [cleaned](crate::label::clean):
/// a directory's name is chosen by whoever created it (ID7).
fn project_name(dir: &str) -> String {
    match basename(dir) {
        "" => "/".to_owned(),
        name => crate::label::clean(name),
    }
}

/// The script an interpreter runs: the first argument that is not an option (or an
/// option's value); `python -m mod` runs `mod`; inline code (`-c`, `-e`) has no script.
fn script_arg(argv: &[String]) -> Option<&str> {
    const TAKES_VALUE: [&str; 10] = [
        "-r",
        "--require",
        "--import",
        "--loader",
        "--experimental-loader",
        "-C",
        "--conditions",
        "--env-file",
        "-W",
        "-X",
    ];
    let mut args = argv.iter().skip(1).map(String::as_str);
    while let Some(a) = args.next() {
        match a {
            "-m" => return args.next(),
            "-c" | "-e" | "--eval" | "-p" | "--print" => return None,
            "--" => return args.next(),
            a if TAKES_VALUE.contains(&a) => {
                args.next();
            }
            a if a.starts_with('-') => {}
            a => return Some(a),
        }
    }
    None
}
