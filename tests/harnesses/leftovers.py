"""What of agentfw's is left in a harness's files after `agentfw uninstall`.

Each check looks for agentfw's own entries by their structure — the MCP server table or
key named `agentfw`, a hook command whose program is the agentfw binary, a permission rule
the installer wrote, agentfw's rule files and install receipts — never for the word
"agentfw" anywhere in a file: the harnesses write paths of their own into the same files
(Codex lists trusted project folders in `config.toml`), and those paths may contain it.
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Iterator


def commands(doc: object) -> Iterator[str | list]:
    """Every value of a `command` key anywhere in a parsed JSON or TOML document."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key == "command" and isinstance(value, (str, list)):
                yield value
            else:
                yield from commands(value)
    elif isinstance(doc, list):
        for item in doc:
            yield from commands(item)


def program(command: str | list) -> str:
    """The program a hook command runs: its first word after any `NAME=value`, unquoted."""
    if isinstance(command, list):
        return str(command[0]) if command else ""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    words = list(itertools.dropwhile(lambda w: re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w, re.S), words))
    return words[0] if words else ""


def runs_agentfw(command: str | list, agentfw: Path) -> bool:
    return program(command) in (str(agentfw), "agentfw")


def hook_leftovers(name: str, doc: object, agentfw: Path) -> list[str]:
    return [f"{name}: a hook runs agentfw (`{c}`)" for c in commands(doc) if runs_agentfw(c, agentfw)]


def rules(settings: dict) -> set[tuple[str, str]]:
    """Claude Code's permission rules as (list, rule) pairs."""
    perms = settings.get("permissions", {})
    return {(kind, rule) for kind in ("allow", "ask", "deny") for rule in perms.get(kind, []) or []}


def read_json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def claude_leftovers(home: Path, agentfw: Path, installed: dict, original: dict) -> list[str]:
    """agentfw's entries left in Claude Code's files under `home`. `installed` is
    `~/.claude/settings.json` as `agentfw install` left it, `original` as it was before."""
    left = []
    if "agentfw" in read_json(home / ".claude.json").get("mcpServers", {}):
        left.append(".claude.json: mcpServers.agentfw")
    settings = read_json(home / ".claude" / "settings.json")
    left += hook_leftovers(".claude/settings.json", settings.get("hooks", {}), agentfw)
    ours = rules(installed) - rules(original)
    left += [f".claude/settings.json: permissions.{k} `{r}`" for k, r in sorted(rules(settings) & ours)]
    return left


def codex_leftovers(home: Path, agentfw: Path) -> list[str]:
    """agentfw's entries left in Codex's files under `home`."""
    codex = home / ".codex"
    left = []
    config = codex / "config.toml"
    if config.exists():
        doc = tomllib.loads(config.read_text())
        if "agentfw" in doc.get("mcp_servers", {}):
            left.append("config.toml: [mcp_servers.agentfw]")
        left += hook_leftovers("config.toml", doc, agentfw)
        notify = doc.get("notify")
        if isinstance(notify, list) and notify and runs_agentfw(notify, agentfw):
            left.append("config.toml: notify runs agentfw")
    hooks = codex / "hooks.json"
    if hooks.exists():
        left += hook_leftovers("hooks.json", json.loads(hooks.read_text()), agentfw)
    if (codex / "rules" / "agentfw.rules").exists():
        left.append("rules/agentfw.rules")
    return left


def receipt_leftovers(agentfw_home: Path, harnesses: tuple[str, ...]) -> list[str]:
    """Install receipts of `harnesses` still in agentfw's home (uninstall removes them)."""
    folder = agentfw_home / "install"
    if not folder.is_dir():
        return []
    return [f"install/{p.name}" for p in sorted(folder.iterdir()) if p.name.startswith(tuple(f"{h}-" for h in harnesses))]
