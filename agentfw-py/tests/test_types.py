"""The stub matches the native module, and the data classes come back where expected."""

from __future__ import annotations

import subprocess
import sys

import agentfw
from conftest import T0


def test_stubs_match_the_native_module() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "agentfw", "--concise"], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_return_types() -> None:
    fw = agentfw.Firewall(seed=1)
    web, api = agentfw.Agent("a", "claude", "web"), agentfw.Agent("b", "codex", "api", "laptop")
    assert api.machine == "laptop" and web.label == "web (claude)" and "Agent(" in repr(web)
    assert (web.id, web.kind, web.project) == ("a", "claude", "web")
    out = fw.send(web, api, "hello", now=T0)
    assert isinstance(out, agentfw.Output) and isinstance(out.message, agentfw.Message)
    assert isinstance(out.message.provenance, agentfw.Provenance)
    assert isinstance(out.message.provenance.origin, agentfw.Hop)
    d = fw.deliver(out.message, now=T0)
    assert isinstance(d.fenced, agentfw.Fenced)
    refused = fw.send(web, web, "me", now=T0)
    assert isinstance(refused.refusal, agentfw.Refusal) and isinstance(refused.reason, agentfw.Reason)
    assert refused.reason.code == "message.to_self" and refused.reason.rule is None and refused.reason.text
    p = agentfw.Policy.default()
    assert isinstance(p.rules[0], agentfw.RuleInfo) and isinstance(p.explain("x"), agentfw.Explanation)
    assert all(isinstance(o, agentfw.RuleOutcome) for o in p.explain("x").outcomes)
    assert isinstance(p.test("cases:\n  - {note: n, input: hi, want: allow}\n")[0], agentfw.CaseResult)
    assert isinstance(agentfw.fingerprint("x"), agentfw.Fingerprints)
    k = agentfw.Keys.generate_for_tests(1, now=T0)
    assert isinstance(k.public, agentfw.PublicBundle)
    ring = agentfw.Keyring()
    ring.trust(k.public)
    opened = agentfw.open(k, ring, agentfw.ReplayCache(), agentfw.seal(k, k.public, "x", now=T0), now=T0)
    assert isinstance(opened, agentfw.Opened) and isinstance(opened.header, agentfw.Header)
    assert isinstance(k.rotate(now=T0)[1], agentfw.Rotation)
    s = agentfw.Signer.generate_for_tests(1)
    v = agentfw.Verifier("x")
    v.trust(s.verifying_key)
    assert isinstance(v.verify(s.sign("p", "x", now=T0), now=T0), agentfw.VerifiedPlan)
    a = agentfw.Admission('{"agents": []}')
    assert isinstance(a.preview(5), agentfw.Preview) and isinstance(a.evaluate("x"), agentfw.Evaluation)
    assert isinstance(agentfw.import_cisco_mcp_scanner("[]"), agentfw.ImportedReport)
    assert isinstance(agentfw.Reloadable(p).current, agentfw.Policy)
    assert isinstance(agentfw.scan("x"), agentfw.Verdict)
