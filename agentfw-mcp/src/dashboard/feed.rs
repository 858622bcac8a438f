//! The engine's news for open pages: each decision once its transaction is committed (a
//! rolled-back one never happened), and a nudge when anything else may have changed.
//!
//! Nothing is collected while no page listens, so a daemon without a dashboard pays one
//! atomic load per decision.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use tokio::sync::broadcast;

use crate::proto::AuditRecord;

/// Decisions a page may fall behind by before it is sent everything again.
const BACKLOG: usize = 1024;

/// One decision as the page shows it: the audit record (metadata only), and the message's
/// text when the dashboard was started with `--show-text` and the firewall accepted it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DecisionView {
    #[serde(flatten)]
    pub record: AuditRecord,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// What an open page hears.
#[derive(Clone, Debug)]
pub enum News {
    Decision(Arc<DecisionView>),
    /// The team, a quarantine, a counter or a setting may have changed.
    Changed,
}

/// The broadcast from the engine thread to the pages' event streams.
#[derive(Debug)]
pub struct Feed {
    tx: broadcast::Sender<News>,
    show_text: AtomicBool,
}

impl Default for Feed {
    fn default() -> Self {
        Self { tx: broadcast::channel(BACKLOG).0, show_text: AtomicBool::new(false) }
    }
}

impl Feed {
    /// Somebody is listening: worth collecting news for.
    pub fn watched(&self) -> bool {
        self.tx.receiver_count() > 0
    }

    pub fn subscribe(&self) -> broadcast::Receiver<News> {
        self.tx.subscribe()
    }

    pub fn publish(&self, news: News) {
        let _ = self.tx.send(news);
    }

    /// Whether pages get the text of accepted messages.
    pub fn show_text(&self) -> bool {
        self.show_text.load(Ordering::Relaxed)
    }

    pub(super) fn set_show_text(&self, on: bool) {
        self.show_text.store(on, Ordering::Relaxed);
    }
}
