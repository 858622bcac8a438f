//! Admin fails closed (AM6): is a process positively outside every agent session?
//!
//! Commands that lower protection (`allow`, `quarantine lift`, `unblock`, admission changes,
//! stopping the daemon…) run only for a [`Placement::Person`]. Anything else is refused:
//! a process inside an agent session ([`Placement::Agent`], `admin.from_agent`) and one that
//! cannot be placed ([`Placement::Unknown`], `admin.unknown_caller`). A person is a process
//! for which every one of these holds, each closing a way out of an agent's process tree:
//!
//! 1. **No agent above it.** The whole ancestry is walked to the top, through anything
//!    (`perl -e system`, `xargs`, `python -c`…), and holds no agent, verified or not. A walk
//!    that cannot reach the top (a parent gone, a cycle, too deep) is unknown.
//! 2. **No harness marker.** No process on the walk has an environment variable a harness
//!    sets for the commands it runs (`CLAUDECODE`, `GEMINI_CLI`…): it survives reparenting
//!    (`nohup`, `at`), though `env -i` clears it, so it only ever refuses.
//! 3. **A terminal, in the foreground.** It has a controlling terminal and is in that
//!    terminal's foreground process group: what a person types. `setsid`, `at`, cron,
//!    `systemd-run`, a service and `cmd &` have none, or run in the background.
//! 4. **Still in its session's tree.** Its session leader (the terminal's shell) is itself
//!    or one of its ancestors. A double fork, `nohup … &` or `disown` reparents a process
//!    out of that tree but keeps its session: this catches them.
//! 5. **Its terminal is not held by an agent.** The process holding the master side of its
//!    pseudo-terminal (`script`, `expect`, `systemd-run --pty`, a terminal emulator, `sshd`)
//!    has no agent above it.
//! 6. **No agent shares its terminal session.** An agent in the same session could type
//!    into the terminal (`TIOCSTI`) and have the person's shell run the command.
//!
//! What this cannot tell apart from a person (see `docs/threat-model.md`): a process that
//! both leaves the agent's tree *and* gets a fresh terminal from a process that also left it
//! (`setsid -f script -c …` with a cleared environment), or asks a terminal multiplexer the
//! person already runs (`tmux new-window`) to start it. Nor can anything stop a process of
//! the same user from editing agentfw's files or signalling the daemon. The harness's own
//! sandbox and permission rules close those; `agentfw install` writes them.

use serde::{Deserialize, Serialize};

use super::ancestry::Ancestry;
use super::{Process, Resolver, Snapshot, display_name};

/// Where a process stands, for admin commands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "placement", rename_all = "snake_case")]
pub enum Placement {
    /// Positively outside every agent session: a person at a terminal.
    Person,
    /// Inside an agent session (`agent` names it), or marked as run by one: `why`.
    Agent { agent: String, why: String },
    /// Cannot be placed: `why`. Admin commands refuse it as they refuse an agent.
    Unknown { why: String },
}

impl Placement {
    /// The stable code of an admin refusal: `admin.from_agent`, `admin.unknown_caller`, or
    /// `None` for a person.
    pub fn refusal_code(&self) -> Option<&'static str> {
        match self {
            Placement::Person => None,
            Placement::Agent { .. } => Some("admin.from_agent"),
            Placement::Unknown { .. } => Some("admin.unknown_caller"),
        }
    }

    /// Why a person is not what this is, in words for the one who ran the command.
    pub fn why(&self) -> Option<&str> {
        match self {
            Placement::Person => None,
            Placement::Agent { why, .. } | Placement::Unknown { why } => Some(why),
        }
    }
}

impl Resolver {
    /// Where process `pid` stands (see the module docs). The snapshot must hold its whole
    /// ancestry with session, process group and terminal, and as far as the adapter can see
    /// them the processes in its session and the holder of its terminal, each with its
    /// ancestry.
    pub fn place(&self, snapshot: &Snapshot, pid: u32) -> Placement {
        let max = self.config.max_depth;
        let walk = match Ancestry::walk(snapshot, pid, max) {
            Ok(walk) => walk,
            Err(e) => return Placement::Unknown { why: e.to_string() },
        };
        if let Some(agent) = walk.procs.iter().find(|p| self.is_agent(p)) {
            let label = self.label_of(snapshot, agent);
            return Placement::Agent { why: format!("it runs inside the agent session {label}"), agent: label };
        }
        if let Some(e) = walk.error(pid, max) {
            return Placement::Unknown {
                why: format!(
                    "its ancestry cannot be followed to the top, so agentfw cannot tell that no agent session encloses it: {e}"
                ),
            };
        }
        if let Some((kind, var, p)) = walk.procs.iter().find_map(|p| self.marker(p).map(|(k, v)| (k, v, p.pid))) {
            return Placement::Agent {
                agent: kind.to_owned(),
                why: format!("its environment (process {p}) holds `{var}`, which {kind} sets for the commands it runs"),
            };
        }
        let Some(me) = walk.procs.first() else {
            return Placement::Unknown { why: format!("process {pid} is not in the snapshot") };
        };
        if me.tty == 0 {
            return Placement::Unknown {
                why: "it has no controlling terminal: it was started detached from one (`setsid`, `at`, cron, `systemd-run`, a service, or an agent's tool)".to_owned(),
            };
        }
        if me.tpgid != Some(me.pgrp) {
            return Placement::Unknown {
                why: "it does not run in the foreground of its terminal (`&`, `nohup`, or a process that is not the one the terminal's user started)".to_owned(),
            };
        }
        if !walk.contains(me.sid) {
            return Placement::Unknown {
                why: format!(
                    "it left its terminal session's process tree: the session's leader, process {}, is not among its ancestors (a double fork, `nohup … &` or `disown` does that)",
                    me.sid
                ),
            };
        }
        if let Some(refusal) = self.terminal_holder(snapshot, me) {
            return refusal;
        }
        let neighbour = snapshot.processes().find(|p| p.sid == me.sid && p.pid != me.pid && self.is_agent(p));
        if let Some(agent) = neighbour {
            let label = self.label_of(snapshot, agent);
            return Placement::Agent {
                why: format!(
                    "the agent session {label} (process {}) runs in the same terminal session and could type into it; run admin commands in a terminal where no agent runs",
                    agent.pid
                ),
                agent: label,
            };
        }
        Placement::Person
    }

    /// The process holding the master side of `me`'s pseudo-terminal must not run inside an
    /// agent session, nor escape being traced.
    fn terminal_holder(&self, snapshot: &Snapshot, me: &Process) -> Option<Placement> {
        let pts = pts_number(me.tty)?;
        let max = self.config.max_depth;
        snapshot.processes().filter(|p| p.pty_masters.contains(&pts)).find_map(|holder| {
            let name = display_name(holder);
            let walk = match Ancestry::walk(snapshot, holder.pid, max) {
                Ok(walk) => walk,
                Err(e) => return Some(Placement::Unknown { why: e.to_string() }),
            };
            if let Some(agent) = walk.procs.iter().find(|p| self.is_agent(p)) {
                let label = self.label_of(snapshot, agent);
                return Some(Placement::Agent {
                    why: format!(
                        "its terminal, /dev/pts/{pts}, is held by process {} (`{name}`), which runs inside the agent session {label}",
                        holder.pid
                    ),
                    agent: label,
                });
            }
            walk.error(holder.pid, max).map(|e| Placement::Unknown {
                why: format!(
                    "its terminal, /dev/pts/{pts}, is held by process {} (`{name}`), whose ancestry cannot be followed: {e}",
                    holder.pid
                ),
            })
        })
    }

    /// The label of the agent session `agent` is, or its name and pid if it does not resolve.
    fn label_of(&self, snapshot: &Snapshot, agent: &Process) -> String {
        match self.resolve(snapshot, agent.pid) {
            Ok(identity) => identity.label,
            Err(_) => format!("`{}` (process {})", display_name(agent), agent.pid),
        }
    }

    /// The harness marker in `p`'s environment, if any: (agent kind, variable).
    fn marker(&self, p: &Process) -> Option<(&str, &str)> {
        self.config.agents.iter().find_map(|spec| {
            let var = spec.env_markers.iter().find(|m| p.env.contains_key(m.as_str()))?;
            Some((spec.kind.as_str(), var.as_str()))
        })
    }
}

/// The `/dev/pts` number of a controlling terminal given as `tty_nr`, if it is a
/// pseudo-terminal (Unix 98 slaves have majors 136 to 143).
pub fn pts_number(tty_nr: u32) -> Option<u32> {
    let major = (tty_nr >> 8) & 0xfff;
    let minor = (tty_nr & 0xff) | ((tty_nr >> 12) & 0xf_ff00);
    (136..=143).contains(&major).then(|| (major - 136) * 256 + minor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pts_numbers_are_decoded_from_tty_nr() {
        assert_eq!(pts_number((136 << 8) | 3), Some(3));
        assert_eq!(pts_number((137 << 8) | 1), Some(257));
        assert_eq!(pts_number(0), None);
        assert_eq!(pts_number((4 << 8) | 1), None, "a virtual console is no pseudo-terminal");
    }
}
