//! The agent harnesses agentfw installs into and answers hooks for.

use core::fmt;

/// An agent harness: the program a person runs that hosts the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum Harness {
    /// Claude Code.
    Claude,
    /// OpenAI Codex CLI.
    Codex,
    /// Cursor (the editor's agent and `cursor-agent`).
    Cursor,
    /// Gemini CLI.
    Gemini,
}

impl Harness {
    #[cfg(test)]
    pub const ALL: [Harness; 4] = [Harness::Claude, Harness::Codex, Harness::Cursor, Harness::Gemini];

    /// The name on the command line (`agentfw hook claude …`), which is also the agent kind
    /// of its sessions (`web (claude)`).
    pub fn as_str(self) -> &'static str {
        match self {
            Harness::Claude => "claude",
            Harness::Codex => "codex",
            Harness::Cursor => "cursor",
            Harness::Gemini => "gemini",
        }
    }

    /// The product's name, for people.
    pub fn title(self) -> &'static str {
        match self {
            Harness::Claude => "Claude Code",
            Harness::Codex => "Codex",
            Harness::Cursor => "Cursor",
            Harness::Gemini => "Gemini CLI",
        }
    }
}

impl fmt::Display for Harness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
