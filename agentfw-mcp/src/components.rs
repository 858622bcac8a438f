//! The admission collector's file reading (AD1): which MCP servers a session's harness is
//! configured to load, from the harness's config files. Parsing is the core's
//! ([`agentfw_core::admission::configured_servers`]); this module only finds and reads the
//! files, in the agent's own home directory (from its environment) and project directory.
//!
//! | agent | files |
//! |---|---|
//! | `claude` | `~/.claude.json` (user and local scope), `<project>/.mcp.json` |
//! | `codex` | `$CODEX_HOME/config.toml`, default `~/.codex/config.toml` |
//! | `cursor` | `~/.cursor/mcp.json`, `<project>/.cursor/mcp.json` |
//! | `gemini` | `~/.gemini/settings.json`, `<project>/.gemini/settings.json` |
//!
//! A missing file loads nothing. A file that cannot be read or parsed is an error naming it,
//! and the agent's components stay unknown, so it is never admitted by accident.

use std::path::{Path, PathBuf};

use agentfw_core::admission::{ComponentId, HarnessFile, configured_servers};

/// Where to look for one agent's configuration.
#[derive(Clone, Debug, Default)]
pub struct Where<'a> {
    pub kind: &'a str,
    /// The agent's home directory (its `HOME`).
    pub home: Option<&'a Path>,
    /// Codex's `CODEX_HOME`, if set.
    pub codex_home: Option<&'a Path>,
    /// The agent's project directory (git root, else working directory).
    pub project: Option<&'a Path>,
}

/// The components the agent loads, sorted, or why they cannot be known.
pub fn collect(at: &Where<'_>) -> Result<Vec<ComponentId>, String> {
    let mut files: Vec<(HarnessFile, PathBuf)> = Vec::new();
    let home = |rel: &str| at.home.map(|h| h.join(rel));
    let project = |rel: &str| at.project.map(|p| p.join(rel));
    match at.kind {
        "claude" => {
            files.extend(home(".claude.json").map(|p| (HarnessFile::ClaudeUser, p)));
            files.extend(project(".mcp.json").map(|p| (HarnessFile::ClaudeProject, p)));
        }
        "codex" => {
            let dir = at.codex_home.map(Path::to_path_buf).or_else(|| home(".codex"));
            files.extend(dir.map(|d| (HarnessFile::CodexConfig, d.join("config.toml"))));
        }
        "cursor" => {
            files.extend(home(".cursor/mcp.json").map(|p| (HarnessFile::CursorMcp, p)));
            files.extend(project(".cursor/mcp.json").map(|p| (HarnessFile::CursorMcp, p)));
        }
        "gemini" => {
            files.extend(home(".gemini/settings.json").map(|p| (HarnessFile::GeminiSettings, p)));
            files.extend(project(".gemini/settings.json").map(|p| (HarnessFile::GeminiSettings, p)));
        }
        _ => {}
    }
    let project_dir = at.project.map(|p| p.display().to_string());
    let mut all = Vec::new();
    for (kind, path) in files {
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("cannot read `{}`: {e}", path.display())),
        };
        let servers = configured_servers(kind, &text, project_dir.as_deref())
            .map_err(|e| format!("`{}`: {e}", path.display()))?;
        all.extend(servers);
    }
    all.sort();
    all.dedup();
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_servers_come_from_the_user_file_and_the_project() {
        let tmp = tempfile::tempdir().unwrap();
        let (home, project) = (tmp.path().join("home"), tmp.path().join("web"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        let local = format!(
            r#"{{"mcpServers": {{"github": {{}}}}, "projects": {{"{}": {{"mcpServers": {{"db": {{}}}}}}}}}}"#,
            project.display()
        );
        std::fs::write(home.join(".claude.json"), local).unwrap();
        std::fs::write(project.join(".mcp.json"), r#"{"mcpServers": {"agentfw": {}}}"#).unwrap();
        let at = Where { kind: "claude", home: Some(&home), codex_home: None, project: Some(&project) };
        let ids: Vec<String> = collect(&at).unwrap().iter().map(|c| c.to_string()).collect();
        assert_eq!(ids, ["mcp:agentfw", "mcp:db", "mcp:github"]);
    }

    #[test]
    fn a_broken_file_is_an_error_that_names_it() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join(".codex")).unwrap();
        std::fs::write(tmp.path().join(".codex/config.toml"), "[mcp_servers.x]\ncommand = nope\n").unwrap();
        let at = Where { kind: "codex", home: Some(tmp.path()), codex_home: None, project: None };
        let e = collect(&at).unwrap_err();
        assert!(e.contains("config.toml") && e.contains("Codex"), "{e}");
        let none = Where { kind: "codex", home: Some(&tmp.path().join("nowhere")), codex_home: None, project: None };
        assert!(collect(&none).unwrap().is_empty());
    }
}
