"""The uninstall check of the real-harness test finds agentfw's entries, and only those:
run by `scripts/test-real-harnesses` before the CLIs start (`python3 -m unittest`)."""

from __future__ import annotations

import json
import tempfile
import unittest
from pathlib import Path

from leftovers import claude_leftovers, codex_leftovers, receipt_leftovers

INSTALLED = {
    "permissions": {"allow": ["Read", "mcp__agentfw__send_message"], "deny": ["Bash(curl *)"]},
}


class Leftovers(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory(prefix="agentfw checkout ")
        self.addCleanup(tmp.cleanup)
        # A clone of agentfw in a folder with a space: every path contains "agentfw".
        self.root = Path(tmp.name) / "agentfw" / "target" / "real-harnesses" / "run.1"
        self.home = self.root / "home"
        (self.home / ".codex" / "rules").mkdir(parents=True)
        (self.home / ".claude").mkdir()
        self.agentfw = self.root.parent.parent / "debug" / "agentfw"
        self.project = self.root / "web"

    def codex_config(self, extra: str = "") -> None:
        (self.home / ".codex" / "config.toml").write_text(
            f'model = "fake"\n\n[projects."{self.project}"]\ntrust_level = "trusted"\n{extra}'
        )

    def hooks(self, command: str) -> dict:
        return {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}}

    def test_clean_files_under_a_path_naming_agentfw_pass(self) -> None:
        self.codex_config()
        (self.home / ".codex" / "hooks.json").write_text(json.dumps(self.hooks(f"'{self.root}/mine.sh' stop")))
        (self.home / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Read"]}}))
        (self.home / ".claude.json").write_text(json.dumps({"projects": {str(self.project): {}}}))
        self.assertEqual(codex_leftovers(self.home, self.agentfw), [])
        original = {"permissions": {"allow": ["Read"]}}
        self.assertEqual(claude_leftovers(self.home, self.agentfw, INSTALLED, original), [])
        self.assertEqual(receipt_leftovers(self.home, ("claude", "codex")), [])

    def test_a_remaining_server_table_fails(self) -> None:
        self.codex_config(f'\n[mcp_servers.agentfw]\ncommand = "{self.agentfw}"\nargs = ["mcp"]\n')
        self.assertEqual(codex_leftovers(self.home, self.agentfw), ["config.toml: [mcp_servers.agentfw]"])

    def test_a_remaining_hook_fails_however_quoted(self) -> None:
        self.codex_config()
        for command in (f"'{self.agentfw}' hook codex stop", f'"{self.agentfw}" hook codex stop', "agentfw hook codex stop",
                        f"AGENTFW_HOME='{self.root}/state' '{self.agentfw}' hook codex stop"):
            (self.home / ".codex" / "hooks.json").write_text(json.dumps(self.hooks(command)))
            self.assertEqual(len(codex_leftovers(self.home, self.agentfw)), 1, command)

    def test_remaining_rules_and_receipts_fail(self) -> None:
        self.codex_config()
        (self.home / ".codex" / "rules" / "agentfw.rules").write_text("")
        self.assertEqual(codex_leftovers(self.home, self.agentfw), ["rules/agentfw.rules"])
        (self.home / "install").mkdir()
        (self.home / "install" / "codex-user.json").write_text("{}")
        self.assertEqual(receipt_leftovers(self.home, ("claude", "codex")), ["install/codex-user.json"])

    def test_claude_entries_fail(self) -> None:
        settings = {"permissions": {"allow": ["Read"], "deny": ["Bash(curl *)"]}, **self.hooks(f"'{self.agentfw}' hook claude stop")}
        (self.home / ".claude" / "settings.json").write_text(json.dumps(settings))
        (self.home / ".claude.json").write_text(json.dumps({"mcpServers": {"agentfw": {"command": "x"}}}))
        left = claude_leftovers(self.home, self.agentfw, INSTALLED, {"permissions": {"allow": ["Read"]}})
        self.assertEqual(len(left), 3, left)


if __name__ == "__main__":
    unittest.main()
