"""A fake model API on 127.0.0.1 for driving the real Claude Code and Codex CLIs offline.

It answers Anthropic Messages (`POST /v1/messages`, SSE) and OpenAI Responses
(`POST /v1/responses`, SSE) from a script: each turn of a session opens with a user text
holding a scenario tag (`[scenario:NAME]`) or agentfw's wake-up text (scenario `wake`), and the scenario (`API:NAME`
for one API only, else `NAME`) is a
list of steps the "model" takes in that turn, one per request: call a tool (through
ToolSearch first when Claude Code offers MCP tools only behind it), wait for an event another
session's turn sets, or end the turn with a text. Which step is next is read from the
conversation the harness sends (how many tool calls the turn already holds), so extra
requests a harness makes on the side (titles, quota checks) do not shift the script.

Every request body is logged (`log`), and every tool result a harness sends back is kept
by tool name: they are the proof of what the session saw.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

TAG = "[scenario:"
WAKE = "new message"  # agentfw's wake-up: "agentfw: 1 new message from other agents (wake …)"


class Step:
    """One step of a scenario."""

    def __init__(self, kind: str, **kw: Any) -> None:
        self.kind = kind  # "tool", "wait", "say"
        self.kw = kw


def tool(name: str, args: dict | Callable[["Turn"], dict]) -> Step:
    return Step("tool", name=name, args=args)


def builtin(name: str, args: dict | Callable[["Turn"], dict]) -> Step:
    """Call one of the harness's own tools (Claude Code's `Bash`, `Edit`; Codex's
    `exec_command`), not an MCP tool."""
    return Step("tool", name=name, args=args, builtin=True)


def wait(event: str, then: Step) -> Step:
    """Hold the request until `event` is set (or the deadline passes), then take `then`."""
    return Step("wait", event=event, then=then)


def say(text: str) -> Step:
    return Step("say", text=text)


class Turn:
    """What a request says about the turn it belongs to."""

    def __init__(self, scenario: str, calls: list[str], results: dict[str, list[str]]) -> None:
        self.scenario = scenario
        self.calls = calls  # tool names called in this turn so far, in order
        self.results = results  # tool name -> result texts seen in this turn


class FakeModel:
    def __init__(self, scenarios: dict[str, list[Step]], wait_secs: float = 120.0) -> None:
        self.scenarios = scenarios
        self.wait_secs = wait_secs
        self.lock = threading.Condition()
        self.events: set[str] = set()
        self.log: list[dict] = []
        # (api, scenario, tool) -> every result text the harness sent back.
        self.results: dict[tuple[str, str, str], list[str]] = {}
        self.errors: list[str] = []
        self.counter = 0
        self.server: ThreadingHTTPServer | None = None

    # ---- state shared with the test -------------------------------------------------
    def set_event(self, name: str) -> None:
        with self.lock:
            self.events.add(name)
            self.lock.notify_all()

    def wait_for(self, pred: Callable[[], bool], secs: float) -> bool:
        deadline = time.monotonic() + secs
        with self.lock:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.lock.wait(left)
            return True

    def result_texts(self, api: str, scenario: str, tool_name: str) -> list[str]:
        with self.lock:
            return list(self.results.get((api, scenario, tool_name), []))

    def requests(self, api: str) -> list[dict]:
        with self.lock:
            return [r for r in self.log if r["api"] == api]

    def _next_id(self, prefix: str) -> str:
        with self.lock:
            self.counter += 1
            return f"{prefix}_{self.counter:04d}"

    def _record(self, api: str, scenario: str, results: dict[str, list[str]]) -> None:
        """Keep the tool results, and set the event `<api>:<scenario>:<tool>` for each."""
        with self.lock:
            for name, texts in results.items():
                seen = self.results.setdefault((api, scenario, name), [])
                for t in texts:
                    if t not in seen:
                        seen.append(t)
                self.events.add(f"{api}:{scenario}:{name}")
            self.lock.notify_all()

    # ---- deciding the next step -----------------------------------------------------
    def step_for(self, api: str, turn: Turn) -> Step | None:
        """The next step: from the scenario `<api>:<name>` if there is one, else `<name>`."""
        steps = self.scenarios.get(f"{api}:{turn.scenario}", self.scenarios.get(turn.scenario))
        if steps is None:
            return None
        done = len([c for c in turn.calls if c != "ToolSearch"])
        index = 0
        for s in steps:
            if index == done:
                return s
            inner = s.kw["then"] if s.kind == "wait" else s
            if inner.kind == "tool":
                index += 1
        return None

    def resolve_wait(self, api: str, scenario: str, step: Step) -> Step:
        """Hold a `wait` step until its event; the event `<api>:<scenario>:waiting` says the
        session got there (its earlier tool calls and their hooks are done)."""
        if step.kind == "wait":
            self.set_event(f"{api}:{scenario}:waiting")
        while step.kind == "wait":
            event = step.kw["event"]
            if not self.wait_for(lambda: event in self.events, self.wait_secs):
                self.errors.append(f"waited {self.wait_secs:.0f}s for event `{event}` in vain")
                return say(f"gave up waiting for {event}")
            step = step.kw["then"]
        return step

    # ---- serving --------------------------------------------------------------------
    def start(self) -> int:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt: str, *args: Any) -> None:
                pass

            def _body(self) -> Any:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    return json.loads(raw or b"null")
                except ValueError:
                    return raw.decode("utf-8", "replace")

            def _json(self, status: int, value: Any) -> None:
                data = json.dumps(value).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _sse(self, events: list[tuple[str, dict]]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for name, data in events:
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

            def do_GET(self) -> None:  # noqa: N802
                with fake.lock:
                    fake.log.append({"api": "other", "method": "GET", "path": self.path, "body": None})
                if self.path.split("?")[0].endswith("/models"):
                    self._json(200, {"data": [], "models": [], "object": "list"})
                else:
                    self._json(404, {"error": {"type": "not_found", "message": self.path}})

            def do_HEAD(self) -> None:  # noqa: N802
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:  # noqa: N802
                body = self._body()
                path = self.path.split("?")[0]
                api = "anthropic" if path.startswith("/v1/messages") else "openai" if "responses" in path else "other"
                with fake.lock:
                    fake.log.append({"api": api, "method": "POST", "path": self.path, "body": body})
                try:
                    if path == "/v1/messages/count_tokens":
                        self._json(200, {"input_tokens": 100})
                    elif path == "/v1/messages":
                        fake.anthropic(self, body)
                    elif path.endswith("/responses"):
                        fake.openai(self, body)
                    else:
                        self._json(404, {"error": {"type": "not_found", "message": self.path}})
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self.server.server_address[1]

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    # ---- Anthropic Messages ---------------------------------------------------------
    def anthropic(self, h: BaseHTTPRequestHandler, body: dict) -> None:
        tools = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
        # Side requests (a title, a quota check) offer no tools: they are not the session's turn.
        turn = anthropic_turn(body) if tools else None
        step = None
        if turn is not None:
            self._record("anthropic", turn.scenario, turn.results)
            step = self.step_for("anthropic", turn)
        if step is not None and turn is not None:
            step = self.resolve_wait("anthropic", turn.scenario, step)
        if step is None or step.kind == "say" or turn is None:
            text = step.kw["text"] if step is not None and step.kind == "say" else "ok"
            blocks = [{"type": "text", "text": text}]
            stop = "end_turn"
        else:
            name = step.kw["name"] if step.kw.get("builtin") else "mcp__agentfw__" + step.kw["name"]
            args = step.kw["args"](turn) if callable(step.kw["args"]) else step.kw["args"]
            if name not in tools and "ToolSearch" in tools:
                searches = sum(1 for c in turn.calls if c == "ToolSearch")
                if searches >= 20:
                    self.errors.append(f"{name} never became available through ToolSearch")
                    blocks, stop = [{"type": "text", "text": "tool unavailable"}], "end_turn"
                    return send_anthropic(h, body, blocks, stop, self._next_id)
                if searches:
                    time.sleep(0.5)  # the MCP server is still connecting: ask again shortly
                name, args = "ToolSearch", {"query": f"select:{name}", "max_results": 5}
            blocks = [{"type": "tool_use", "id": self._next_id("toolu"), "name": name, "input": args}]
            stop = "tool_use"
        send_anthropic(h, body, blocks, stop, self._next_id)

    # ---- OpenAI Responses -----------------------------------------------------------
    def openai(self, h: BaseHTTPRequestHandler, body: dict) -> None:
        # Side requests (a title, a summary) offer no tools: they are not the session's turn.
        tools = body.get("tools") or []
        turn = openai_turn(body) if any(isinstance(t, dict) and t.get("type") == "function" for t in tools) else None
        step = None
        if turn is not None:
            self._record("openai", turn.scenario, turn.results)
            step = self.step_for("openai", turn)
        if step is not None and turn is not None:
            step = self.resolve_wait("openai", turn.scenario, step)
        if step is None or step.kind == "say":
            text = step.kw["text"] if step is not None else "ok"
            item = {
                "type": "message",
                "role": "assistant",
                "id": self._next_id("msg"),
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        else:
            args = step.kw["args"](turn) if callable(step.kw["args"]) else step.kw["args"]
            item = {
                "type": "function_call",
                "id": self._next_id("fc"),
                "status": "completed",
                "name": step.kw["name"],
                "call_id": self._next_id("call"),
                "arguments": json.dumps(args),
            }
            if not step.kw.get("builtin"):
                item["namespace"] = "mcp__agentfw"
        rid = self._next_id("resp")
        base = {"id": rid, "object": "response", "created_at": int(time.time()), "model": body.get("model", "fake")}
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        h._sse(
            [
                ("response.created", {"type": "response.created", "response": {**base, "status": "in_progress"}}),
                ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
                ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
                (
                    "response.completed",
                    {
                        "type": "response.completed",
                        "response": {**base, "status": "completed", "output": [item], "usage": usage},
                    },
                ),
            ]
        )


def send_anthropic(h: Any, body: dict, blocks: list[dict], stop: str, next_id: Callable[[str], str]) -> None:
    model = body.get("model", "fake")
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    if not body.get("stream"):
        h._json(
            200,
            {
                "id": next_id("msg"),
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": blocks,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": usage,
            },
        )
        return
    events: list[tuple[str, dict]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": next_id("msg"),
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
            },
        )
    ]
    def event(kind: str, **fields: Any) -> None:
        events.append((kind, {"type": kind, **fields}))

    for i, b in enumerate(blocks):
        if b["type"] == "text":
            event("content_block_start", index=i, content_block={"type": "text", "text": ""})
            event("content_block_delta", index=i, delta={"type": "text_delta", "text": b["text"]})
        else:
            start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
            event("content_block_start", index=i, content_block=start)
            delta = {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}
            event("content_block_delta", index=i, delta=delta)
        event("content_block_stop", index=i)
    event("message_delta", delta={"stop_reason": stop, "stop_sequence": None}, usage={"output_tokens": 5})
    events.append(("message_stop", {"type": "message_stop"}))
    h._sse(events)


def text_of(content: Any) -> str:
    """The text of a message's or tool result's content, whatever its shape."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(c) for c in content)
    if isinstance(content, dict):
        if isinstance(content.get("text"), str):
            return content["text"]
        if "content" in content:
            return text_of(content["content"])
        if isinstance(content.get("output"), (str, list)):
            return text_of(content["output"])
    return ""


def scenario_of(text: str) -> str | None:
    if TAG in text:
        rest = text.split(TAG, 1)[1]
        return rest.split("]", 1)[0].strip()
    if "agentfw:" in text and WAKE in text and "(wake " in text:
        return "wake"
    return None


def anthropic_turn(body: dict) -> Turn | None:
    """The turn a Messages request belongs to: from the last user text opening a scenario."""
    messages = body.get("messages") or []
    start, scenario = None, None
    for i, m in enumerate(messages):
        if m.get("role") != "user":
            continue
        content = m.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        texts = " ".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
        s = scenario_of(texts)
        if s is not None:
            start, scenario = i, s
    if start is None or scenario is None:
        return None
    names: dict[str, str] = {}
    calls: list[str] = []
    results: dict[str, list[str]] = {}
    for m in messages[start:]:
        content = m.get("content")
        if not isinstance(content, list):
            continue
        for b in content:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_use":
                name = str(b.get("name", "")).removeprefix("mcp__agentfw__")
                names[b.get("id", "")] = name
                calls.append(name)
            elif b.get("type") == "tool_result":
                name = names.get(b.get("tool_use_id", ""), "?")
                results.setdefault(name, []).append(text_of(b.get("content")))
    return Turn(scenario, calls, results)


def openai_turn(body: dict) -> Turn | None:
    """The turn a Responses request belongs to: from the last user text opening a scenario."""
    items = body.get("input") or []
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    start, scenario = None, None
    for i, it in enumerate(items):
        if isinstance(it, dict) and it.get("role") == "user":
            s = scenario_of(text_of(it.get("content")))
            if s is not None:
                start, scenario = i, s
    if start is None or scenario is None:
        return None
    names: dict[str, str] = {}
    calls: list[str] = []
    results: dict[str, list[str]] = {}
    for it in items[start:]:
        if not isinstance(it, dict):
            continue
        if it.get("type") == "function_call":
            names[it.get("call_id", "")] = it.get("name", "")
            calls.append(it.get("name", ""))
        elif it.get("type") == "function_call_output":
            name = names.get(it.get("call_id", ""), "?")
            results.setdefault(name, []).append(text_of(it.get("output")))
    return Turn(scenario, calls, results)
