//! The walk from a process up through its parents to the top, checked at every step: the
//! parent exists and did not start after its child (else the process exited mid-walk, or
//! its pid was reused), no pid repeats, and the walk stays within `max_depth`.

use std::collections::BTreeSet;

use super::{IdentityError, Process, Snapshot};

/// How the walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum End {
    /// At a process without parent: the whole ancestry was seen.
    Top,
    /// At a process of another user, seen only by its pid: nothing of this user's runs above
    /// it that could be read.
    Foreign,
    /// A parent is gone: it exited, or its pid now belongs to a younger process.
    Gone { child: u32, parent: u32 },
    /// A pid repeats: the snapshot is corrupt.
    Cycle { pid: u32 },
    /// `max_depth` processes and still no top.
    TooDeep,
}

/// The processes from the start (first) up to where the walk ended.
#[derive(Debug)]
pub(super) struct Ancestry<'s> {
    pub procs: Vec<&'s Process>,
    pub end: End,
}

impl<'s> Ancestry<'s> {
    /// Walk up from `start`. Only a start that is not in the snapshot is an error here;
    /// every other problem is in [`Ancestry::end`].
    pub fn walk(snapshot: &'s Snapshot, start: u32, max_depth: usize) -> Result<Self, IdentityError> {
        let mut procs: Vec<&Process> = Vec::new();
        let mut visited = BTreeSet::new();
        let mut pid = start;
        let end = loop {
            if procs.len() >= max_depth {
                break End::TooDeep;
            }
            let child = procs.last().copied();
            let Some(p) = snapshot.get(pid) else {
                match child {
                    None => return Err(IdentityError::StartNotFound { pid }),
                    Some(c) => break End::Gone { child: c.pid, parent: pid },
                }
            };
            if let Some(c) = child.filter(|c| p.started_at > c.started_at && !p.foreign) {
                break End::Gone { child: c.pid, parent: pid };
            }
            if !visited.insert(pid) {
                break End::Cycle { pid };
            }
            procs.push(p);
            if p.foreign {
                break End::Foreign;
            }
            if p.ppid == 0 {
                break End::Top;
            }
            if p.ppid == pid {
                break End::Cycle { pid };
            }
            pid = p.ppid;
        };
        Ok(Self { procs, end })
    }

    /// The error a walk that did not see the whole ancestry stands for, if it did not.
    pub fn error(&self, start: u32, max_depth: usize) -> Option<IdentityError> {
        match self.end {
            End::Top | End::Foreign => None,
            End::Gone { child, parent } => Some(IdentityError::ParentGone { child, parent }),
            End::Cycle { pid } => Some(IdentityError::Cycle { pid }),
            End::TooDeep => Some(IdentityError::TooDeep { start, depth: max_depth }),
        }
    }

    /// Whether `pid` is on the walk.
    pub fn contains(&self, pid: u32) -> bool {
        self.procs.iter().any(|p| p.pid == pid)
    }
}
