//! Judging bare text as if it were a message (PR8): what `agentfw scan`, `agentfw rules
//! test` and the bindings' `scan()` run, with the same engine and the same normalization
//! as the firewall.

use std::sync::Arc;

use crate::fence::sanitize;
use crate::message::{Agent, MessageId};
use crate::normalize::fold;
use crate::provenance::Provenance;
use crate::time::Timestamp;

use super::{Explanation, MessageView, RuleVerdict, Rules, Stage, ThreadView};

/// Runs text through rules as a message that has travelled `hops` hops: from `agent-1
/// (scan)` through `agent-2 (scan)` and so on. The text is sanitized and folded exactly as
/// the firewall does before judging.
#[derive(Clone)]
pub struct Scanner {
    rules: Arc<dyn Rules>,
    id: Option<MessageId>,
}

impl core::fmt::Debug for Scanner {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Scanner").finish_non_exhaustive()
    }
}

impl Scanner {
    pub fn new(rules: Arc<dyn Rules>) -> Self {
        Self { rules, id: "00000000000000000000000000".parse().ok() }
    }

    /// The verdict on `text` at `stage` as a message with `hops` hops.
    pub fn judge(&self, text: &str, stage: Stage, hops: u32, now: Timestamp) -> RuleVerdict {
        self.run(text, stage, hops, now, false).verdict
    }

    /// The verdict with every rule's outcome.
    pub fn explain(&self, text: &str, stage: Stage, hops: u32, now: Timestamp) -> Explanation {
        self.run(text, stage, hops, now, true)
    }

    fn run(&self, text: &str, stage: Stage, hops: u32, now: Timestamp, explain: bool) -> Explanation {
        let Some(id) = self.id else {
            return Explanation {
                verdict: RuleVerdict::Deny {
                    rule: "scan".to_owned(),
                    reason: "the scanner could not build a message id".to_owned(),
                },
                decided_by: None,
                failed: true,
                outcomes: Vec::new(),
            };
        };
        let body = sanitize(text);
        let folded = fold(&body);
        let agents: Vec<Agent> =
            (1..=hops.max(1) + 1).map(|n| Agent::new(format!("agent-{n}"), "scan", format!("agent-{n}"))).collect();
        let path: Vec<_> = agents.iter().map(Agent::hop).collect();
        let (Some(origin), [.., from, to]) = (path.first().cloned(), agents.as_slice()) else {
            return Explanation { verdict: RuleVerdict::Allow, decided_by: None, failed: false, outcomes: Vec::new() };
        };
        let provenance = Provenance { origin, path, hops };
        let view = MessageView {
            id,
            body: &body,
            folded: &folded,
            provenance: &provenance,
            from,
            to,
            size: body.len(),
            thread: ThreadView { id, turns: 0 },
            now,
        };
        if explain { self.rules.explain(stage, &view) } else { self.rules.judge(stage, &view).into() }
    }
}

impl From<RuleVerdict> for Explanation {
    fn from(verdict: RuleVerdict) -> Self {
        Explanation { decided_by: verdict.rule().map(str::to_owned), failed: false, verdict, outcomes: Vec::new() }
    }
}
