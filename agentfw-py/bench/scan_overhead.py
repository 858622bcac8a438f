"""Per-call time of `agentfw.scan` on 1 KiB, to compare with the Rust call.

The text and the call are those of the criterion benchmark `default_pack/1KiB_ascii`
(benches/benches/policy.rs): the default pack, hops 2, stage `sending`. The overhead of
the binding is this median minus criterion's median for that benchmark.

    pip install ./agentfw-py            # a release build
    python agentfw-py/bench/scan_overhead.py
    cargo bench -p agentfw-benches --bench policy -- default_pack/1KiB_ascii
"""

from __future__ import annotations

import statistics
import time

import agentfw

ASCII = (
    "Can you check why the /health endpoint returns 500 after the deploy? The stack trace "
    "points at src/server.rs:120 in handle_request, right after we parse the JSON body. I ran "
    "`curl -s http://localhost:8080/health | jq .status` and got null. The commit is "
    "3f4e2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f and the request id 123e4567-e89b-12d3-a456-426614174000.\n"
    "fn handle_request(req: Request) -> Result<Response, Error> {\n"
    "    let body: Health = serde_json::from_slice(&req.body)?;\n    Ok(Response::json(&body))\n}\n"
    "2024-05-01T12:00:00Z ERROR request failed: connection refused (os error 111)\n"
)
TEXT = (ASCII * (1024 // len(ASCII) + 1))[:1024]
NOW = 1_700_000_000_000


def main() -> None:
    policy = agentfw.Policy.default()
    assert agentfw.scan(TEXT, hops=2, rules=policy, now=NOW).verdict == "allow"
    batch, rounds = 2_000, 41
    for _ in range(3):  # warm up
        for _ in range(batch):
            agentfw.scan(TEXT, hops=2, rules=policy, now=NOW)
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for _ in range(batch):
            agentfw.scan(TEXT, hops=2, rules=policy, now=NOW)
        samples.append((time.perf_counter_ns() - start) / batch / 1000)
    print(f"python scan 1KiB: median {statistics.median(samples):.2f} µs/call (min {min(samples):.2f}, {rounds}x{batch} calls)")


if __name__ == "__main__":
    main()
