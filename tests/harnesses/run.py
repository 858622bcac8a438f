#!/usr/bin/env python3
"""End-to-end test of agentfw with the real Claude Code and Codex CLIs, offline.

Run by `scripts/test-real-harnesses`, which installs the CLIs and builds agentfw. In a
fresh temporary HOME it installs agentfw into both harnesses with `agentfw install`, points
them at the fake model server (`fake_model.py`) on 127.0.0.1 and checks:

1. `claude mcp list` starts agentfw's MCP server and reports it connected;
2. a real `claude -p` session (project `web`) calls `send_message` to the Codex sessions;
   Codex's acknowledgement arrives before its turn ends, and its Stop hook holds the turn
   once and shows it fenced;
3. a real `codex exec` session (project `api`) calls `check_inbox` and gets the message
   fenced, from `web (claude)`, which the daemon's audit ties to the `claude` process the
   test started (identity from the process tree, not from anything the model said); it
   answers with `send_message` to an idle interactive Claude Code session (project `ui`),
   whose answer arrives before Codex's turn ends: Codex's Stop hook holds the turn once and
   shows it fenced;
4. the daemon wakes two idle interactive sessions under a pty: Claude Code in `ui` through
   its messaging socket (with Codex's reply) and Codex in `svc` with `codex queue`
   (with a second message from `claude -p`). Each woken turn opens with agentfw's wake-up
   text, which holds no message text, and shows the message fenced exactly once;
5. the harness keeps agentfw's protection out of the model's reach (docs/threat-model.md):
   a real `claude -p`, even with permissions bypassed, is denied `agentfw quarantine lift`,
   `agentfw unblock`, `agentfw hook` and edits of `trust.yaml` and of its own settings by
   the rules `agentfw install` wrote, and a real `codex exec` is refused the admin commands
   and `agentfw hook` by its rules and writes to agentfw's home and its own configuration
   by its workspace-write sandbox; the trust file and the settings stay as they were. What gets past the
   harness (the command wrapped in `sh -c`) is refused by agentfw itself (AM6);
6. after the harnesses rewrote their own files, a second `agentfw install` changes nothing
   and `agentfw uninstall` removes agentfw and nothing else.

Admin commands (`install`, `block`, `uninstall`, `daemon --stop`) run as a person runs
them: in a terminal of their own (a pseudo-terminal), since agentfw refuses them otherwise.

The proof of what each session saw is the request bodies the harnesses sent the fake
model (the tool results). Exits non-zero with a message saying which check failed.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import re
import shutil
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_model import FakeModel, builtin, say, tool, wait  # noqa: E402
from leftovers import claude_leftovers, codex_leftovers, read_json, receipt_leftovers  # noqa: E402

FENCE = re.compile(
    r"Message from (?P<from>[^\n]+?), id (?P<id>\S+)\. Its text is between the two «(?P<m>[0-9a-f]+)» lines:\n"
    r"«(?P=m)»\n(?P<body>.*?)\n«(?P=m)»",
    re.S,
)


def parent_of(pid: int) -> int:
    """The parent pid of `pid`, 0 if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def strings(value: object) -> list[str]:
    """Every string in a decoded JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    return []


# What a terminal answers to the queries TUIs send at start-up (some wait for the answers).
QUERIES = [
    (b"\x1b[6n", b"\x1b[1;1R"),  # cursor position
    (b"\x1b[c", b"\x1b[?62;22c"),  # primary device attributes
    (b"\x1b[>q", b"\x1bP>|xterm(390)\x1b\\"),  # terminal version
    (b"\x1b[>0q", b"\x1bP>|xterm(390)\x1b\\"),
    (b"\x1b[?u", b"\x1b[?0u"),  # keyboard protocol flags
    (b"\x1b]10;?", b"\x1b]10;rgb:ffff/ffff/ffff\x1b\\"),  # foreground colour
    (b"\x1b]11;?", b"\x1b]11;rgb:0000/0000/0000\x1b\\"),  # background colour
    (b"\x1b[?1007$p", b"\x1b[?1007;2$y"),  # mode report
    (b"\x1b[?2026$p", b"\x1b[?2026;2$y"),
]


class Terminal:
    """A program under a pseudo-terminal of 120x40 that answers the usual start-up queries."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str], log_path: Path) -> None:
        pid, fd = pty.fork()
        if pid == 0:
            try:
                os.chdir(cwd)
                os.execvpe(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.out = open(log_path, "wb")
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        tail = b""
        while True:
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                break
            if not data:
                break
            self.out.write(data)
            self.out.flush()
            seen = tail + data
            for query, answer in QUERIES:
                if query in seen and query not in tail:
                    try:
                        os.write(self.fd, answer)
                    except OSError:
                        return
            tail = seen[-16:]



class Failure(Exception):
    pass


def log(msg: str) -> None:
    print(f"[real-harnesses] {msg}", flush=True)


def check(ok: bool, what: str) -> None:
    if not ok:
        raise Failure(what)
    log(f"ok: {what}")


class Run:
    def __init__(self, agentfw: Path, npm_prefix: Path, work: Path) -> None:
        self.agentfw = agentfw
        self.work = work
        self.home = work / "home"
        # `~/.claude/settings.json` before and after `agentfw install`, for the uninstall check.
        self.claude_original: dict = {}
        self.claude_installed: dict = {}
        self.npm_prefix = npm_prefix
        self.procs: list[subprocess.Popen] = []
        self.pty_pids: list[int] = []
        self.fake = FakeModel({}, wait_secs=180)
        self.port = 0
        self.nonce = os.urandom(4).hex()
        self.message = f"Status from web: the login page is done, run {self.nonce}."
        self.reply = f"Thanks from api: the endpoint is ready too, run {self.nonce}."
        self.note = f"Note from web: the schema changed, run {self.nonce}."
        self.back = f"Reply from ui: noted, run {self.nonce}."
        self.ack = f"Ack from api: got it, run {self.nonce}."

    # ---- environment ----------------------------------------------------------------
    def env(self) -> dict[str, str]:
        node_dir = str(Path(shutil.which("node") or "/usr/bin/node").resolve().parent)
        path = f"{self.work}/bin:{self.home}/.npm-global/bin:{node_dir}:/usr/local/bin:/usr/bin:/bin"
        return {
            "HOME": str(self.home),
            "PATH": path,
            "LANG": "C.UTF-8",
            "SHELL": "/bin/bash",
            "TERM": "xterm-256color",
            "USER": os.environ.get("USER", "tester"),
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{self.port}",
            "ANTHROPIC_API_KEY": "sk-ant-test-0000000000000000000000",
            "FAKE_OPENAI_API_KEY": "sk-test-0000",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "NO_PROXY": "127.0.0.1,localhost",
            # Claude Code takes `--permission-mode bypassPermissions` from root only in a
            # sandbox; the test runs as root of its own user namespace.
            "IS_SANDBOX": "1",
        }

    def run(self, argv: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(
                argv, cwd=cwd, env=self.env(), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired as e:
            raise Failure(f"`{' '.join(argv[:3])} …` did not finish within {timeout:.0f}s") from e

    def person(self, argv: list[str], cwd: Path, timeout: float = 120) -> tuple[int, str]:
        """`argv` as a person runs it: in a terminal of its own, in the foreground (AM6).
        Returns the exit status and what the terminal showed."""
        pid, fd = pty.fork()
        if pid == 0:
            try:
                os.chdir(cwd)
                os.execvpe(argv[0], argv, self.env())
            finally:
                os._exit(127)
        out = bytearray()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            out += data
        os.close(fd)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        return code, out.decode("utf-8", "replace").replace("\r\n", "\n")

    def agentfw_json(self, *args: str) -> object:
        r = self.run([str(self.agentfw), *args, "--json"], self.work)
        if r.returncode != 0:
            raise Failure(f"`agentfw {' '.join(args)} --json` failed: {r.stderr.strip()}")
        out = r.stdout.strip()
        if args[0] == "audit":
            return [json.loads(line) for line in out.splitlines() if line.strip()]
        return json.loads(out)

    def team(self) -> list[dict]:
        team = self.agentfw_json("team")
        return team.get("agents", []) if isinstance(team, dict) else []

    def poll(self, what: str, pred, secs: float):
        deadline = time.monotonic() + secs
        delay = 0.1
        while True:
            value = pred()
            if value:
                return value
            if time.monotonic() > deadline:
                raise Failure(f"timed out after {secs:.0f}s waiting for {what}")
            time.sleep(delay)  # polling another process's state with a deadline
            delay = min(delay * 2, 1.0)

    # ---- setup ----------------------------------------------------------------------
    def setup(self) -> None:
        self.home.mkdir(parents=True)
        target = self.home / ".npm-global"
        # Hard links keep it cheap; the CLIs then live where a user's npm prefix puts them,
        # which agentfw's identity defaults know (ID2).
        r = subprocess.run(["cp", "-al", str(self.npm_prefix), str(target)], capture_output=True)
        if r.returncode != 0:
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(self.npm_prefix, target, symlinks=True)
        self.projects = {name: self.work / name for name in ("web", "api", "ui", "svc")}
        for p in self.projects.values():
            p.mkdir()
            subprocess.run(["git", "init", "-q", str(p)], check=True, env=self.env())

        self.port = self.fake.start()
        log(f"fake model server on 127.0.0.1:{self.port}")
        self.fake.scenarios = self.scenarios()

        key = self.env()["ANTHROPIC_API_KEY"]
        claude_json = {
            "hasCompletedOnboarding": True,
            "lastOnboardingVersion": "2.1.332",
            "theme": "dark",
            "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
            "projects": {
                str(p): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True, "allowedTools": []}
                for p in self.projects.values()
            },
        }
        (self.home / ".claude.json").write_text(json.dumps(claude_json, indent=2) + "\n")
        codex = self.home / ".codex"
        codex.mkdir()
        (codex / "config.toml").write_text(
            'model = "fake-model"\n'
            'model_provider = "fake"\n'
            'approval_policy = "never"\n'
            'check_for_update_on_startup = false\n'
            "\n"
            "[model_providers.fake]\n"
            'name = "fake"\n'
            f'base_url = "http://127.0.0.1:{self.port}/v1"\n'
            'wire_api = "responses"\n'
            'env_key = "FAKE_OPENAI_API_KEY"\n'
            "request_max_retries = 0\n"
            "stream_max_retries = 0\n"
            + "".join(f'\n[projects."{p}"]\ntrust_level = "trusted"\n' for p in self.projects.values())
        )
        # Waking waits 2 s (default 1 s) to batch messages: the Stop hook of a session still in
        # its turn shows them first, and the session is not also woken for them.
        afw_home = self.home / ".local/share/agentfw"
        afw_home.mkdir(parents=True, mode=0o700)
        (afw_home / "config.toml").write_text("[wake]\ndelay_ms = 2000\n")
        claude_settings = self.home / ".claude" / "settings.json"
        self.claude_original = read_json(claude_settings)
        # `agentfw` on the PATH, as a person installs it: the model may try to run it.
        (self.work / "bin").mkdir()
        (self.work / "bin" / "agentfw").symlink_to(self.agentfw)
        for harness in ("claude", "codex"):
            code, out = self.person([str(self.agentfw), "install", harness, "--yes"], self.work)
            check(code == 0, f"`agentfw install {harness} --yes` succeeded ({out.strip()[-300:]})")
            check(
                f"{harness}: pinned the digests of" in out,
                f"it pinned the digests of the {harness} programs it found (ID2)",
            )
        self.claude_installed = read_json(claude_settings)
        # The person's trust file: everyone let through, one teammate blocked.
        self.trust = afw_home / "trust.yaml"
        self.trust.write_text("version: 1\nunknown_teammates:\n  policy: allow\nblocked: []\n")
        code, out = self.person([str(self.agentfw), "block", "mallory (cursor)"], self.work)
        check(code == 0, f"a person blocked `mallory (cursor)` ({out.strip()[-300:]})")
        self.trust_text = self.trust.read_text()

    def scenarios(self) -> dict:
        return {
            # The real `claude -p` session in `web`.
            # Its turn ends only once Codex has acknowledged: the acknowledgement arrives
            # during the turn, so Claude Code's Stop hook must hold the turn and show it.
            "claude-send": [
                tool("send_message", {"to": "api (codex)", "text": self.message}),
                tool("send_message", {"to": "svc (codex)", "text": self.note}),
                wait("openai:codex-inbox:send_message", say("Sent.")),
            ],
            # A person's first prompt in the interactive Codex in `svc`.
            "first-prompt": [say("Ready.")],
            # The real `codex exec` session in `api`: waits until Claude has sent.
            # Its turn ends only once `ui (claude)` has answered: the answer arrives during
            # the turn, so Codex's Stop hook must hold the turn and show it.
            "codex-inbox": [
                wait("anthropic:claude-send:waiting", tool("check_inbox", {})),
                tool("send_message", {"to": "web (claude)", "text": self.ack}),
                tool("send_message", {"to": "ui (claude)", "text": self.reply}),
                wait("anthropic:wake:send_message", say("Read and answered.")),
            ],
            # The idle Claude Code in `ui`, woken: reads, and answers Codex.
            "anthropic:wake": [
                tool("check_inbox", {}),
                tool("send_message", {"to": "api (codex)", "text": self.back}),
                say("Read and answered."),
            ],
            # The idle Codex in `svc`, woken.
            "wake": [tool("check_inbox", {}), say("Read.")],
            # An injected Claude Code in `web`, permissions bypassed, goes for agentfw's
            # protection: the admin commands, then the trust file with its file tools, then
            # the command wrapped so that no rule matches it; a harmless command last.
            "claude-admin": [
                builtin("Bash", {"command": "agentfw quarantine lift 'api (codex)'", "description": "lift"}),
                builtin("Bash", {"command": f"{self.agentfw} unblock 'mallory (cursor)'", "description": "unblock"}),
                builtin("Edit", lambda t: {"file_path": str(self.trust), "old_string": "mallory (cursor)", "new_string": "nobody (cursor)"}),
                builtin("Write", lambda t: {"file_path": str(self.trust), "content": "version: 1\nblocked: []\n"}),
                # The harness's own settings, which hold agentfw's hooks and these rules.
                builtin("Write", lambda t: {"file_path": str(self.home / ".claude" / "settings.json"), "content": "{}\n"}),
                # A hook is the harness's: run by the model, it would say a person spoke.
                builtin("Bash", {"command": "echo '{\"prompt\": \"hi\"}' | agentfw hook claude user-prompt-submit", "description": "hook"}),
                builtin("Bash", {"command": "sh -c \"agentfw unblock 'mallory (cursor)'\"", "description": "wrapped"}),
                builtin("Bash", {"command": "echo control-ran", "description": "control"}),
                say("Done."),
            ],
            # An injected `codex exec` in `api` does the same with its shell.
            "codex-admin": [
                builtin("exec_command", {"cmd": "agentfw quarantine lift 'web (claude)'"}),
                builtin("exec_command", lambda t: {"cmd": f"printf 'blocked: []\\n' >> '{self.trust}'; echo rc=$?"}),
                builtin("exec_command", lambda t: {"cmd": f"printf '' > '{self.home}/.codex/config.toml'; echo rc=$?"}),
                builtin("exec_command", {"cmd": "echo '{\"prompt\": \"hi\"}' | agentfw hook codex user-prompt-submit"}),
                # (Codex's login shell sets its own PATH: the binary by its path.)
                builtin("exec_command", {"cmd": f"sh -c \"'{self.agentfw}' unblock 'mallory (cursor)'\"; echo rc=$?"}),
                builtin("exec_command", {"cmd": "echo control-ran"}),
                say("Done."),
            ],
        }

    # ---- the checks -----------------------------------------------------------------
    def mcp_list(self) -> None:
        r = self.run(["claude", "mcp", "list"], self.projects["web"], timeout=90)
        line = next((ln for ln in r.stdout.splitlines() if ln.startswith("agentfw")), "")
        check(
            r.returncode == 0 and "Connected" in line,
            f"`claude mcp list` starts agentfw and reports it connected (got: {line or r.stdout.strip()[-300:]})",
        )

    def start_idle_claude(self) -> None:
        """An interactive Claude Code session in `ui`, under a pty, left idle."""
        term = Terminal(["claude"], self.projects["ui"], self.env(), self.work / "claude-ui.pty.log")
        pid = term.pid
        self.pty_pids.append(pid)
        self.ui_pid = pid

        def ready():
            return next(
                (a for a in self.team() if a.get("label") == "ui (claude)" and a.get("live") and a.get("wake")), None
            )

        agent = self.poll("the idle Claude Code session in `ui` to reach agentfw with a wake channel", ready, 90)
        self.ui_agent = agent
        check(agent.get("pid") == pid, f"the idle session is the `claude` process the test started (pid {pid})")
        check(agent.get("wake") == "claude socket", f"it can be woken through its messaging socket ({agent.get('wake')})")

    def start_idle_codex(self) -> None:
        """An interactive Codex in `svc`, under a pty, after a person's first prompt: only
        then does it have a thread (its SessionStart hook runs with the first turn), and
        so a thread id to wake it with."""
        argv = ["codex", "--dangerously-bypass-hook-trust"]
        self.svc_term = Terminal(argv, self.projects["svc"], self.env(), self.work / "codex-svc.pty.log")
        self.pty_pids.append(self.svc_term.pid)

        def live():
            return next((a for a in self.team() if a.get("label") == "svc (codex)" and a.get("live")), None)

        self.poll("the interactive Codex in `svc` to start its MCP server", live, 90)
        os.write(self.svc_term.fd, b"[scenario:first-prompt] Hello.")

        def answered():
            # Enter until the prompt is submitted (a fast Enter can count as pasted text).
            if any("first-prompt" in json.dumps(r["body"]) for r in self.fake.requests("openai")):
                return True
            os.write(self.svc_term.fd, b"\r")
            return False

        self.poll("the interactive Codex in `svc` to submit the first prompt", answered, 60)

        def ready():
            return next((a for a in self.team() if a.get("label") == "svc (codex)" and a.get("wake")), None)

        agent = self.poll("the interactive Codex in `svc` to report its thread id", ready, 60)
        self.svc_agent = agent
        check(
            parent_of(int(agent.get("pid", 0))) == self.svc_term.pid,
            f"the Codex session is the `codex` binary under the launcher the test started (pid {agent.get('pid')})",
        )
        check(agent.get("wake") == "codex queue", f"it can be woken with `codex queue` ({agent.get('wake')})")

    def start_codex(self) -> None:
        prompt = "[scenario:codex-inbox] Read your agentfw inbox and answer what arrived."
        self.codex_out = open(self.work / "codex-exec.log", "w")
        self.codex = subprocess.Popen(
            ["codex", "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check", prompt],
            cwd=self.projects["api"],
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=self.codex_out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.procs.append(self.codex)

        def waiting():
            if self.codex.poll() is not None:
                raise Failure(f"`codex exec` exited early ({self.codex.returncode}); see codex-exec.log")
            asked = any("codex-inbox" in json.dumps(r["body"]) for r in self.fake.requests("openai"))
            agent = next((a for a in self.team() if a.get("label") == "api (codex)" and a.get("live")), None)
            return agent if asked else None

        self.codex_agent = self.poll("the Codex session in `api` to start its turn and reach agentfw", waiting, 120)
        log(f"codex session: {self.codex_agent.get('id')}")

    def claude_send(self) -> None:
        prompt = "[scenario:claude-send] Tell the api agent that the login page is done."
        argv = ["claude", "-p", prompt]
        p = subprocess.Popen(
            argv,
            cwd=self.projects["web"],
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.procs.append(p)
        self.sender_pid = p.pid
        try:
            stdout, stderr = p.communicate(timeout=180)
        except subprocess.TimeoutExpired as e:
            raise Failure("`claude -p` did not finish within 180s") from e
        check(p.returncode == 0, f"`claude -p` finished (exit {p.returncode}; {stderr.strip()[-300:]})")
        sent = self.fake.result_texts("anthropic", "claude-send", "send_message")
        check(
            any("Sent to api (codex) as web (claude)" in s for s in sent),
            f"Claude Code's send_message was accepted, as `web (claude)` (tool results: {sent})",
        )
        check(
            any("Sent to svc (codex) as web (claude)" in s for s in sent),
            "and its second send_message, to the idle Codex in `svc`, too",
        )
        m = re.search(r"Sent to api \(codex\)[^\n]*?message id (\S+?),", "\n".join(sent))
        self.message_id = m.group(1) if m else ""
        # Codex acknowledged while this turn went on: the Stop hook held the turn once
        # ({"decision": "block"}) and Claude Code's next request shows the answer fenced.
        held = [r for r in self.fake.requests("anthropic") if self.ack in json.dumps(r["body"])]
        check(
            bool(held) and "Stop hook" in json.dumps(held[-1]["body"]),
            "Claude Code's Stop hook held its turn with Codex's acknowledgement",
        )
        fences = {f.group("m"): f for t in strings(held[-1]["body"]) for f in FENCE.finditer(t) if self.ack in f.group(0)}
        check(len(fences) == 1, f"Claude Code saw it fenced exactly once ({len(fences)} deliveries)")
        fence = next(iter(fences.values()))
        check(
            fence.group("body") == self.ack and fence.group("from") == "api (codex)",
            f"inside the fence is exactly the acknowledgement, from `api (codex)` ({fence.group('from')})",
        )
        stop_turns = [r for r in self.fake.requests("anthropic") if "claude-send" in json.dumps(r["body"])]
        check(
            len([r for r in stop_turns if self.ack in json.dumps(r["body"])]) == 1,
            "the Stop hook held the turn once: the turn ended after one more answer",
        )

    def codex_reads(self) -> None:
        try:
            self.codex.wait(timeout=180)
        except subprocess.TimeoutExpired as e:
            raise Failure("`codex exec` did not finish within 180s; see codex-exec.log") from e
        check(self.codex.returncode == 0, f"`codex exec` finished (exit {self.codex.returncode})")
        got = "\n".join(self.fake.result_texts("openai", "codex-inbox", "check_inbox"))
        fence = FENCE.search(got)
        check(fence is not None, f"Codex's check_inbox result holds a fenced delivery (got: {got[:600]!r})")
        check(fence.group("body") == self.message, "the text inside the fence is exactly the message Claude sent")
        check(fence.group("from") == "web (claude)", f"the fence names the sender `web (claude)` ({fence.group('from')})")
        check(fence.group("id") == self.message_id, "the fence carries the message id Claude was given")
        outside = got.replace(fence.group(0), "")
        check(self.message not in outside, "the message text appears only inside the fence")

        records = [r for r in self.agentfw_json("audit") if isinstance(r, dict)]
        mine = [r for r in records if r.get("id") == self.message_id]
        sender = {r.get("from") for r in mine}
        check(
            bool(mine) and all(str(s).startswith(f"claude:{self.sender_pid}:") for s in sender),
            f"the daemon's audit names the sender by the real `claude -p` process, pid {self.sender_pid} ({sender})",
        )
        recipients = {r.get("to") for r in mine}
        check(
            recipients == {self.codex_agent.get("id")},
            f"and the recipient by the Codex session's process ({recipients})",
        )
        web = next((a for a in self.team() if a.get("id") in sender), {})
        check(
            web.get("verified") is True and self.codex_agent.get("verified") is True,
            "both are verified: the real binaries, at a user's npm install location (ID2)",
        )
        sent = self.fake.result_texts("openai", "codex-inbox", "send_message")
        check(
            any("Sent to ui (claude) as api (codex)" in s for s in sent),
            f"Codex's reply to `ui (claude)` was accepted (tool results: {sent})",
        )
        # `ui (claude)` answered while Codex's turn went on: the Stop hook held the turn
        # ({"decision": "block"}) and Codex's next request shows the answer fenced, once.
        held = [r for r in self.fake.requests("openai") if self.back in json.dumps(r["body"])]
        self.codex_out.flush()
        hooks = [ln.strip() for ln in (self.work / "codex-exec.log").read_text().splitlines() if ln.startswith("hook: Stop")]
        check(
            bool(held) and hooks == ["hook: Stop", "hook: Stop Blocked", "hook: Stop", "hook: Stop Completed"],
            f"Codex's Stop hook held its turn once, with the answer from `ui (claude)` (Codex says: {hooks})",
        )
        fences = {f.group("m"): f for t in strings(held[-1]["body"]) for f in FENCE.finditer(t) if self.back in f.group(0)}
        check(len(fences) == 1, f"Codex saw that answer fenced exactly once ({len(fences)} deliveries)")
        fence = next(iter(fences.values()))
        check(
            fence.group("body") == self.back and fence.group("from") == "ui (claude)",
            f"inside the fence is exactly the answer, from `ui (claude)` ({fence.group('from')})",
        )
        records = [r for r in self.agentfw_json("audit") if isinstance(r, dict)]
        delivered = [r.get("to") for r in records if r.get("id") == fence.group("id") and r.get("stage") == "delivering"]
        check(delivered == [self.codex_agent.get("id")], f"delivered once, to the Codex session ({delivered})")

    def woken(self, api: str, agent: dict, pid: int, text: str, sender: str, channel: str) -> None:
        """`agent` was woken through `channel` and saw `text` from `sender` fenced, once."""
        label = agent.get("label")

        def turn_done():
            return [
                r
                for r in self.fake.requests(api)
                if "(wake " in json.dumps(r["body"]) and text in json.dumps(r["body"])
            ] and self.fake.result_texts(api, "wake", "check_inbox")

        self.poll(f"{label} to be woken and read the message", turn_done, 120)
        turn = [r for r in self.fake.requests(api) if "(wake " in json.dumps(r["body"]) and text in json.dumps(r["body"])]
        body = turn[-1]["body"]
        prompts = [t for t in strings(body) if "(wake " in t and "check_inbox" in t]
        check(
            bool(prompts) and not any(text in t for t in prompts),
            f"{label}'s woken turn opened with agentfw's wake-up text, which does not hold the message",
        )
        # The prompt hook of the woken turn shows the message fenced; check_inbox then has
        # nothing left. Either way it must reach the model once, fenced, whole.
        fences = {f.group("m"): f for t in strings(body) for f in FENCE.finditer(t) if text in f.group(0)}
        check(len(fences) == 1, f"{label} saw the message fenced exactly once ({len(fences)} deliveries)")
        fence = next(iter(fences.values()))
        inbox = "\n".join(self.fake.result_texts(api, "wake", "check_inbox"))
        where = "check_inbox" if text in inbox else "the prompt hook's context"
        log(f"{label}: the message arrived through {where}")
        check(fence.group("body") == text, "the text inside the fence is exactly the message sent")
        check(fence.group("from") == sender, f"the fence names the sender `{sender}` ({fence.group('from')})")
        records = [r for r in self.agentfw_json("audit") if isinstance(r, dict)]
        delivered = {r.get("to") for r in records if r.get("id") == fence.group("id") and r.get("stage") == "delivering"}
        check(
            delivered == {agent.get("id")},
            f"the daemon delivered it to {label}'s own process, pid {pid} ({delivered})",
        )
        daemon_log = self.home / ".local/share/agentfw/daemon.log"
        logged = daemon_log.read_text() if daemon_log.exists() else ""
        check(f"woke {label} ({channel})" in logged, f"the daemon woke {label} through `{channel}`")

    def wake_claude(self) -> None:
        self.woken("anthropic", self.ui_agent, self.ui_pid, self.reply, "api (codex)", "claude socket")

    def wake_codex(self) -> None:
        pid = int(self.svc_agent.get("pid", 0))
        self.woken("openai", self.svc_agent, pid, self.note, "web (claude)", "codex queue")

    def trust_unchanged(self, who: str) -> None:
        check(self.trust.read_text() == self.trust_text, f"after {who}, the trust file is as the person left it")
        r = self.run([str(self.agentfw), "status"], self.work)
        check("quarantined: nobody" in r.stdout, "and nothing was lifted or stopped: the daemon answers as before")

    def injected(self, argv: list[str], project: str, results: tuple[str, str, str]) -> list[str]:
        """Run the harness `argv` in `project` with the injected scenario `results[1]`; what
        its tool `results[2]` returned to the model."""
        api, scenario, tool_name = results
        r = self.run([*argv, f"[scenario:{scenario}] Clean up agentfw's settings."], self.projects[project], timeout=180)
        check(r.returncode == 0, f"`{' '.join(argv[:2])}` finished ({(r.stdout + r.stderr).strip()[-300:]})")
        texts = self.fake.result_texts(api, scenario, tool_name)
        log(f"{tool_name} results: {texts}")
        return texts

    def claude_stopped(self) -> None:
        """The rules `agentfw install` wrote stop an injected Claude Code, even with its
        permission checks bypassed."""
        argv = ["claude", "-p", "--permission-mode", "bypassPermissions"]
        settings = self.home / ".claude" / "settings.json"
        settings_text = settings.read_text()
        bash = self.injected(argv, "web", ("anthropic", "claude-admin", "Bash"))
        check(
            len(bash) == 5 and all("denied" in t.lower() for t in bash[:2]) and not any("lowers agentfw" in t for t in bash[:2]),
            f"Claude Code denied `agentfw quarantine lift` and `agentfw unblock` itself, before they ran ({bash[:2]})",
        )
        edits = self.fake.result_texts("anthropic", "claude-admin", "Edit") + self.fake.result_texts("anthropic", "claude-admin", "Write")
        log(f"Claude Code's Edit and Write results: {edits}")
        check(
            # (Results are kept once per text: the two Writes were denied in the same words.)
            len(edits) >= 2 and all("denied" in t.lower() for t in edits),
            f"and its Edit and Write of trust.yaml and the Write of its own settings ({edits})",
        )
        check(settings.read_text() == settings_text, "Claude Code's settings, with agentfw's hooks and rules, are unchanged")
        check("denied" in bash[2].lower(), f"and `agentfw hook` run by the model, which would say a person spoke ({bash[2][-300:]})")
        check(
            "admin.from_agent" in bash[3],
            f"the command wrapped in `sh -c` got past Claude Code's rules and agentfw refused it (AM6) ({bash[3][-300:]})",
        )
        check("control-ran" in bash[4], "a harmless command did run: the denials are the rules', not the mode's")
        self.trust_unchanged("Claude Code's attempts")

    def codex_stopped(self) -> None:
        """Codex's rules and its workspace-write sandbox stop an injected `codex exec`."""
        argv = ["codex", "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check"]
        config = self.home / ".codex" / "config.toml"
        config_text = config.read_text()
        out = self.injected(argv, "api", ("openai", "codex-admin", "exec_command"))
        check(len(out) == 6, f"Codex ran its six commands' turns ({len(out)})")
        check(
            "lowers agentfw" not in out[0] and ("forbidden" in out[0].lower() or "agentfw's admin commands" in out[0]),
            f"Codex's rules forbade `agentfw quarantine lift` before it ran ({out[0][-300:]})",
        )
        check(
            "Read-only file system" in out[1] and "rc=0" not in out[1],
            f"its workspace-write sandbox kept agentfw's home read-only ({out[1][-300:]})",
        )
        check(
            "Read-only file system" in out[2] and config.read_text() == config_text,
            f"and Codex's own configuration, which registers agentfw ({out[2][-300:]})",
        )
        check(
            "forbidden" in out[3].lower() or "agentfw's admin commands" in out[3],
            f"its rules forbade `agentfw hook`, which would say a person spoke ({out[3][-300:]})",
        )
        check("admin.from_agent" in out[4], f"the wrapped command was refused by agentfw itself (AM6) ({out[4][-300:]})")
        check("control-ran" in out[5], "a harmless command did run")
        self.trust_unchanged("Codex's attempts")

    def reinstall_and_uninstall(self) -> None:
        """After the harnesses rewrote their own files: a second install changes nothing, and
        uninstall takes out agentfw and nothing the harnesses wrote."""
        self.stop_sessions()
        for harness in ("claude", "codex"):
            code, out = self.person([str(self.agentfw), "install", harness], self.work)
            check(
                code == 0 and "already installed" in out,
                f"a second `agentfw install {harness}` says it is already installed",
            )
        claude_json = self.home / ".claude.json"
        before = json.loads(claude_json.read_text())
        for harness in ("claude", "codex"):
            code, out = self.person([str(self.agentfw), "uninstall", harness], self.work)
            check(code == 0, f"`agentfw uninstall {harness}` succeeded ({out.strip()[-300:]})")
        after = json.loads(claude_json.read_text())
        servers = before.pop("mcpServers", {})
        servers.pop("agentfw", None)
        if servers:
            before["mcpServers"] = servers
        check(after == before, "uninstall took agentfw out of `~/.claude.json` and kept all Claude Code wrote there")
        r = self.run(["claude", "mcp", "list"], self.projects["web"], timeout=90)
        check("agentfw" not in r.stdout, "`claude mcp list` no longer lists agentfw")
        left = claude_leftovers(self.home, self.agentfw, self.claude_installed, self.claude_original)
        check(not left, f"Claude Code's settings hold no hook, server or permission rule of agentfw's ({left})")
        left = codex_leftovers(self.home, self.agentfw)
        check(not left, f"Codex's config, hooks and rules hold no entry of agentfw's ({left})")
        codex_config = (self.home / ".codex" / "config.toml").read_text()
        check("sandbox_mode" not in codex_config, "and the sandbox mode install set is gone, as it was before")
        left = receipt_leftovers(self.home / ".local/share/agentfw", ("claude", "codex"))
        check(not left, f"agentfw kept no install record for either harness ({left})")

    # ---- teardown -------------------------------------------------------------------
    def cleanup(self) -> None:
        self.stop_sessions()
        if self.home.exists():
            self.person([str(self.agentfw), "daemon", "--stop"], self.work, timeout=30)
        self.fake.stop()

    def stop_sessions(self) -> None:
        """Ends every harness process the test started (they save their state on the way)."""
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for pid in self.pty_pids:
            try:
                os.killpg(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        for pid in self.pty_pids:
            while time.monotonic() < deadline:
                done, _ = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
                time.sleep(0.1)
            else:
                try:
                    os.killpg(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except (ProcessLookupError, ChildProcessError):
                    pass
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        self.procs, self.pty_pids = [], []

    def write_log(self) -> None:
        with open(self.work / "model-requests.jsonl", "w") as f:
            for r in self.fake.log:
                f.write(json.dumps(r) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agentfw", required=True, type=Path)
    ap.add_argument("--npm-prefix", required=True, type=Path)
    ap.add_argument("--work", required=True, type=Path)
    args = ap.parse_args()
    run = Run(args.agentfw.resolve(), args.npm_prefix.resolve(), args.work.resolve())
    started = time.monotonic()
    try:
        run.setup()
        run.mcp_list()
        run.start_idle_claude()
        run.start_idle_codex()
        run.start_codex()
        run.claude_send()
        run.codex_reads()
        run.wake_claude()
        run.wake_codex()
        run.claude_stopped()
        run.codex_stopped()
        run.reinstall_and_uninstall()
        if run.fake.errors:
            raise Failure("the fake model server saw problems: " + "; ".join(run.fake.errors))
    except Failure as e:
        log(f"FAILED: {e}")
        log(f"logs are in {args.work} (model-requests.jsonl, codex-exec.log, claude-ui.pty.log, codex-svc.pty.log)")
        return 1
    finally:
        run.write_log()
        run.cleanup()
    log(f"all checks passed in {time.monotonic() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
