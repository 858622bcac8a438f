//! What counts as an agent, a launcher or an interpreter: configurable data, with the real
//! harnesses as defaults.

use serde::{Deserialize, Serialize};

/// One kind of agent and how to recognise it.
///
/// Patterns are globs. A pattern without `/` matches a file's name (`claude`, `python3*`);
/// one with `/` matches a whole path (`/usr/lib/node_modules/@openai/codex*/**`), where `*`
/// stays within a directory and `**` crosses them. Paths starting with `~/` must be expanded
/// by the adapter ([`IdentityConfig::with_home`]) before they can match.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// The kind, as labels show it: `claude`, `codex`, `cursor`, `gemini`, or a bot's name.
    pub kind: String,
    /// Native executables of this agent, by name or path.
    #[serde(default)]
    pub executables: Vec<String>,
    /// Scripts that an interpreter (node, python…) runs as this agent, by name or path.
    #[serde(default)]
    pub scripts: Vec<String>,
    /// Where trusted installs live (ID2). The executable (or script) must be under one of
    /// them to be verified.
    #[serde(default)]
    pub install_locations: Vec<String>,
    /// Pinned digests (as the adapter computes them, e.g. hex BLAKE3). When any are given,
    /// the program's digest must be one of them to be verified.
    #[serde(default)]
    pub digests: Vec<String>,
    /// Environment variables that carry the harness session id (ID4), e.g.
    /// `CLAUDE_CODE_SESSION_ID`.
    #[serde(default)]
    pub session_env: Vec<String>,
    /// Arguments that mark a process hosting many sessions (Codex's `app-server`): its
    /// identity is refined by the session id (ID4).
    #[serde(default)]
    pub shared_host_args: Vec<String>,
    /// Environment variables this harness sets for the commands it runs. A process whose
    /// ancestry carries one is inside its session, wherever it was reparented to (AM6).
    /// Their absence proves nothing: `env -i` clears them.
    #[serde(default)]
    pub env_markers: Vec<String>,
}

/// The resolver's configuration (ID1, ID2). The defaults know Claude Code, Codex, Cursor and
/// Gemini CLI, the usual shells and launchers, and node and python as interpreters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IdentityConfig {
    pub agents: Vec<AgentSpec>,
    /// Shells and launchers the walk passes through, by executable name or path.
    pub launchers: Vec<String>,
    /// Programs that run a script named in their arguments (node, python…): what they are is
    /// decided by the script.
    pub interpreters: Vec<String>,
    /// Scripts that only launch other programs (npx, npm, pyenv shims, Codex's node wrapper).
    pub launcher_scripts: Vec<String>,
    /// Refuse agents whose binary is not verified (ID2). Off by default: they work, marked
    /// unverified.
    pub require_verified: bool,
    /// The walk gives up after this many processes.
    pub max_depth: usize,
}

/// Global npm prefixes: system, Homebrew, a user prefix, nvm.
const NPM_PREFIXES: [&str; 5] = [
    "/usr/lib/node_modules",
    "/usr/local/lib/node_modules",
    "/opt/homebrew/lib/node_modules",
    "~/.npm-global/lib/node_modules",
    "~/.nvm/versions/node/*/lib/node_modules",
];

fn npm(package: &str) -> impl Iterator<Item = String> + '_ {
    NPM_PREFIXES.iter().map(move |prefix| format!("{prefix}/{package}/**"))
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

impl Default for IdentityConfig {
    fn default() -> Self {
        let claude = AgentSpec {
            kind: "claude".into(),
            // The npm build is `…/@anthropic-ai/claude-code/bin/claude.exe` (comm `claude`);
            // the native installer's binaries are named by version.
            executables: strings(&["claude", "claude.exe", "~/.local/share/claude/versions/*"]),
            // Older builds run `node …/@anthropic-ai/claude-code/cli.js`.
            scripts: strings(&["claude", "**/@anthropic-ai/claude-code/cli.js"]),
            install_locations: npm("@anthropic-ai/claude-code")
                .chain(["~/.local/share/claude/versions/*".to_owned(), "~/.claude/local/**".to_owned()])
                .collect(),
            digests: Vec::new(),
            session_env: strings(&["CLAUDE_CODE_SESSION_ID"]),
            shared_host_args: Vec::new(),
            env_markers: strings(&["CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SESSION_ID"]),
        };
        let codex = AgentSpec {
            kind: "codex".into(),
            // A native (musl) binary under `@openai/codex-linux-x64/vendor/…/bin/codex`,
            // started by a node wrapper (a launcher script below).
            executables: strings(&["codex"]),
            scripts: Vec::new(),
            install_locations: npm("@openai/codex*").collect(),
            digests: Vec::new(),
            // Codex passes its MCP servers no session id: a verified hook refines instead.
            session_env: Vec::new(),
            shared_host_args: strings(&["app-server"]),
            // Its npm launcher marks the native binary's environment, and its sandbox marks
            // the commands it runs.
            env_markers: strings(&["CODEX_MANAGED_BY_NPM", "CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED"]),
        };
        let cursor = AgentSpec {
            kind: "cursor".into(),
            executables: strings(&["cursor-agent"]),
            scripts: strings(&["cursor-agent", "**/cursor-agent/versions/*/index.js"]),
            install_locations: strings(&["~/.local/share/cursor-agent/**"]),
            digests: Vec::new(),
            session_env: Vec::new(),
            shared_host_args: Vec::new(),
            env_markers: Vec::new(),
        };
        let gemini = AgentSpec {
            kind: "gemini".into(),
            // `node … gemini`, relaunched as a child under another node.
            executables: Vec::new(),
            scripts: strings(&[
                "gemini",
                "**/@google/gemini-cli/dist/index.js",
                "**/@google/gemini-cli/bundle/gemini.js",
            ]),
            install_locations: npm("@google/gemini-cli").collect(),
            digests: Vec::new(),
            session_env: Vec::new(),
            shared_host_args: Vec::new(),
            env_markers: strings(&["GEMINI_CLI"]),
        };
        Self {
            agents: vec![claude, codex, cursor, gemini],
            launchers: strings(&[
                "sh", "bash", "zsh", "dash", "ksh", "fish", "env", "timeout", "nice", "nohup", "setsid", "stdbuf",
                "npx", "npm", "pnpm", "yarn", "uv", "uvx", "pipx", "pyenv", "mise", "asdf",
            ]),
            interpreters: strings(&["node", "nodejs", "bun", "deno", "python", "python[0-9]*"]),
            launcher_scripts: strings(&[
                "npx",
                "npm",
                "npx-cli.js",
                "npm-cli.js",
                "pnpm",
                "pnpm.cjs",
                "yarn",
                "yarn.js",
                "uv",
                "uvx",
                "pipx",
                "codex",
                "**/@openai/codex/bin/codex.js",
                "**/.pyenv/shims/*",
                "**/.pyenv/libexec/*",
            ]),
            require_verified: false,
            max_depth: 64,
        }
    }
}

impl IdentityConfig {
    /// The same configuration with `~` in every pattern replaced by `home`. The core reads
    /// no environment: the adapter passes the home directory in.
    #[must_use]
    pub fn with_home(mut self, home: &str) -> Self {
        let home = home.trim_end_matches('/');
        let expand = |p: &mut String| {
            if p == "~" {
                *p = home.to_owned();
            } else if let Some(rest) = p.strip_prefix("~/") {
                *p = format!("{home}/{rest}");
            }
        };
        for spec in &mut self.agents {
            spec.executables.iter_mut().chain(&mut spec.scripts).chain(&mut spec.install_locations).for_each(expand);
        }
        self.launchers.iter_mut().chain(&mut self.interpreters).chain(&mut self.launcher_scripts).for_each(expand);
        self
    }

    /// The spec for `kind`, to change it in place.
    pub fn agent_mut(&mut self, kind: &str) -> Option<&mut AgentSpec> {
        self.agents.iter_mut().find(|a| a.kind == kind)
    }
}
