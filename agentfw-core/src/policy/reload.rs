//! Swapping rules while the firewall runs, keeping the last good set (PR7).

use std::sync::{Arc, RwLock};

use super::{Explanation, MessageView, PolicyError, RuleSet, RuleVerdict, Rules, Sources, Stage};

/// A rule set that can be replaced by edited files. A reload that does not compile changes
/// nothing: messages keep being judged by the last set that did, and the caller gets the
/// diagnostics to show.
#[derive(Debug)]
pub struct Reloadable {
    current: RwLock<Arc<RuleSet>>,
}

impl Reloadable {
    pub fn new(rules: RuleSet) -> Self {
        Self::shared(Arc::new(rules))
    }

    /// A reloadable set starting from a rule set that is shared elsewhere too.
    pub fn shared(rules: Arc<RuleSet>) -> Self {
        Self { current: RwLock::new(rules) }
    }

    /// The rule set in force.
    pub fn current(&self) -> Arc<RuleSet> {
        let guard = self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(&guard)
    }

    /// Compiles `sources` and, if they compile, puts them in force. On error the previous
    /// set stays in force.
    pub fn reload(&self, sources: &Sources) -> Result<(), PolicyError> {
        let next = RuleSet::compile(sources)?;
        self.replace(next);
        Ok(())
    }

    /// Puts an already compiled set in force.
    pub fn replace(&self, rules: RuleSet) {
        self.replace_shared(Arc::new(rules));
    }

    /// Puts a compiled set that is shared elsewhere too in force.
    pub fn replace_shared(&self, rules: Arc<RuleSet>) {
        let mut guard = self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        *guard = rules;
    }
}

impl Rules for Reloadable {
    fn judge(&self, stage: Stage, message: &MessageView<'_>) -> RuleVerdict {
        self.current().judge(stage, message)
    }

    fn explain(&self, stage: Stage, message: &MessageView<'_>) -> Explanation {
        self.current().explain(stage, message)
    }
}
