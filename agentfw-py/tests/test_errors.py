"""Each kind of core error reaches the right exception class with its stable code."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import agentfw
from conftest import T0

WEB = agentfw.Agent("claude:1:1", "claude", "web")
API = agentfw.Agent("codex:2:2", "codex", "api")
KEYS = agentfw.Keys.generate_for_tests(1, now=T0)
OTHER = agentfw.Keys.generate_for_tests(2, now=T0)
SIGNER = agentfw.Signer.generate_for_tests(1)


def retired_trust() -> None:
    ring = agentfw.Keyring()
    ring.trust(OTHER.public)
    ring.revoke(OTHER.device, now=T0)
    ring.trust(OTHER.public)


def wrong_executor() -> None:
    v = agentfw.Verifier("executor-b")
    v.trust(SIGNER.verifying_key)
    v.verify(SIGNER.sign(b"plan", "executor-a", now=T0), now=T0)


def unknown_signer() -> None:
    agentfw.Verifier("x").verify(SIGNER.sign(b"plan", "x", now=T0), now=T0)


CASES: list[tuple[str, Callable[[], Any], type[agentfw.AgentfwError], str]] = [
    ("bad stage", lambda: agentfw.scan("x", on="sideways"), agentfw.InputError, "input.invalid"),  # type: ignore[arg-type]
    ("bad rules arg", lambda: agentfw.scan("x", rules=3), agentfw.InputError, "input.invalid"),  # type: ignore[arg-type]
    ("bad config", lambda: agentfw.Firewall({"limits": {"max_turns": "x"}}), agentfw.InputError, "input.invalid"),
    ("bad admin", lambda: agentfw.Firewall().admin({"action": "dance"}), agentfw.InputError, "input.invalid"),
    ("bad stored message", lambda: agentfw.Message.from_json("{}"), agentfw.InputError, "input.invalid"),
    ("bad secret", lambda: agentfw.Signer(b"short"), agentfw.InputError, "input.invalid"),
    ("rules do not compile", lambda: agentfw.Policy.from_text("id: ["), agentfw.PolicyError, "policy.invalid"),
    ("bad cases", lambda: agentfw.Policy.default().test("cases: 3"), agentfw.PolicyError, "policy.invalid"),
    ("bad message id", lambda: agentfw.fence("x", "nope", "b"), agentfw.MessageError, "message.bad_id"),
    ("bad reply id", lambda: agentfw.Firewall().send(WEB, API, "x", reply_to="nope"), agentfw.MessageError, "message.bad_id"),
    ("binary body", lambda: agentfw.Firewall().send(WEB, API, b"\xff\xfe"), agentfw.MessageError, "message.invalid_utf8"),
    ("not a bundle", lambda: agentfw.PublicBundle.parse("hello"), agentfw.KeysError, "keys.not_a_bundle"),
    ("future bundle", lambda: agentfw.PublicBundle.parse("agentfw-pub-v9 a b c"), agentfw.KeysError, "keys.unsupported_version"),
    ("not a key file", lambda: agentfw.Keys.from_key_file("hello"), agentfw.KeysError, "keys.not_a_key_file"),
    ("key file not utf-8", lambda: agentfw.Keys.from_key_file(b"\xff"), agentfw.KeysError, "keys.not_utf8"),
    ("key file bad line", lambda: agentfw.Keys.from_key_file("agentfw-keys-v1\nnonsense"), agentfw.KeysError, "keys.bad_line"),
    ("key file unknown field", lambda: agentfw.Keys.from_key_file("agentfw-keys-v1\ncolour: red"), agentfw.KeysError, "keys.unknown_field"),
    ("key file missing field", lambda: agentfw.Keys.from_key_file("agentfw-keys-v1\n"), agentfw.KeysError, "keys.missing_field"),
    ("not a rotation", lambda: agentfw.Rotation.parse("hello"), agentfw.KeysError, "keys.not_a_rotation"),
    ("bad device id", lambda: agentfw.Keyring().revoke("xyz"), agentfw.KeysError, "keys.bad_device_id"),
    ("unknown device", lambda: agentfw.Keyring().revoke(OTHER.device), agentfw.KeysError, "keys.unknown_device"),
    ("retired device", retired_trust, agentfw.KeysError, "keys.retired"),
    ("bad public key", lambda: agentfw.Verifier("x").trust(b"\x01" * 3), agentfw.KeysError, "keys.bad_key"),
    ("bad content type", lambda: agentfw.seal(KEYS, OTHER.public, "x", content_type=""), agentfw.SealError, "seal.bad_content_type"),
    ("body too large", lambda: agentfw.seal(KEYS, OTHER.public, "xx", max_plaintext=1), agentfw.SealError, "seal.too_large"),
    ("truncated envelope", lambda: agentfw.envelope_header(b"AFWE"), agentfw.OpenError, "open.truncated"),
    ("not an envelope", lambda: agentfw.envelope_header(b"NOPE" + bytes(2000)), agentfw.OpenError, "open.malformed"),
    ("envelope too large", lambda: agentfw.envelope_header(bytes(100_000)), agentfw.OpenError, "open.too_large"),
    (
        "unknown sender",
        lambda: agentfw.open(OTHER, agentfw.Keyring(), agentfw.ReplayCache(), agentfw.seal(KEYS, OTHER.public, "x", now=T0), now=T0),
        agentfw.OpenError,
        "open.unknown_sender",
    ),
    ("bad executor", lambda: SIGNER.sign(b"plan", ""), agentfw.HandoffError, "handoff.bad_executor_name"),
    ("truncated hand-off", lambda: agentfw.Verifier("x").verify(b"AFWH"), agentfw.HandoffError, "handoff.truncated"),
    ("not a hand-off", lambda: agentfw.Verifier("x").verify(b"NOPE" + bytes(64)), agentfw.HandoffError, "handoff.malformed"),
    ("unknown signer", unknown_signer, agentfw.HandoffError, "handoff.unknown_signer"),
    ("wrong executor", wrong_executor, agentfw.HandoffError, "handoff.wrong_executor"),
    ("bad signer id", lambda: agentfw.Verifier("x").distrust("zz"), agentfw.HandoffError, "handoff.bad_signer_id"),
    ("bad inventory", lambda: agentfw.Admission("{"), agentfw.AdmissionError, "admission.inventory"),
    ("bad mode", lambda: agentfw.Admission(mode="loud"), agentfw.AdmissionError, "admission.mode"),  # type: ignore[arg-type]
    ("bad threshold", lambda: agentfw.parse_threshold("severe"), agentfw.AdmissionError, "admission.threshold"),
    ("bad score", lambda: agentfw.Admission(threshold=11.0), agentfw.AdmissionError, "admission.score"),
    ("bad component", lambda: agentfw.Admission().except_("github"), agentfw.AdmissionError, "admission.component_id"),
    ("bad harness file", lambda: agentfw.configured_servers("claude_project", "[]"), agentfw.AdmissionError, "admission.harness_config"),
    ("bad scanner report", lambda: agentfw.import_cisco_mcp_scanner("[{"), agentfw.AdmissionError, "admission.scanner_report"),
    ("bad snapshot", lambda: agentfw.Firewall.restore("{}"), agentfw.SnapshotError, "snapshot.invalid"),
    ("bad keyring", lambda: agentfw.Keyring.from_json("[1]"), agentfw.SnapshotError, "snapshot.invalid"),
    ("bad replay cache", lambda: agentfw.ReplayCache.from_json("{}"), agentfw.SnapshotError, "snapshot.invalid"),
    ("bad nonces", lambda: agentfw.Verifier("x").restore_nonces("{}"), agentfw.SnapshotError, "snapshot.invalid"),
    ("missing rules folder", lambda: agentfw.Policy.from_files("/nonexistent/rules"), agentfw.FileError, "io.read"),
]


@pytest.mark.parametrize(("note", "call", "cls", "code"), CASES, ids=[c[0] for c in CASES])
def test_error_kind(note: str, call: Callable[[], Any], cls: type[agentfw.AgentfwError], code: str) -> None:
    with pytest.raises(cls) as e:
        call()
    assert e.value.code == code, note
    assert isinstance(e.value, agentfw.AgentfwError)
    assert str(e.value)


def test_bad_input_errors_are_value_errors() -> None:
    for cls in (
        agentfw.InputError,
        agentfw.PolicyError,
        agentfw.MessageError,
        agentfw.KeysError,
        agentfw.SealError,
        agentfw.AdmissionError,
        agentfw.SnapshotError,
    ):
        assert issubclass(cls, ValueError) and issubclass(cls, agentfw.AgentfwError)
    for cls in (agentfw.OpenError, agentfw.HandoffError, agentfw.InternalError):
        assert not issubclass(cls, ValueError) and issubclass(cls, agentfw.AgentfwError)
    assert issubclass(agentfw.FileError, OSError)
    assert agentfw.InternalError("boom", "internal.panic").code == "internal.panic"


def test_policy_error_carries_diagnostics() -> None:
    with pytest.raises(agentfw.PolicyError) as e:
        agentfw.Policy.from_text("id: x\non: message.sending\nwhen: message.bdy == 1\nverdict: deny\nreason: r\n", "r.yaml")
    [d] = e.value.diagnostics
    assert isinstance(d, agentfw.Diagnostic)
    assert (d.code, d.file, d.line, d.column, d.width) == ("policy.unknown_variable", "r.yaml", 3, 7, 11)
    assert d.source_line == "when: message.bdy == 1" and d.hint == "did you mean `message.body`?"
    assert "^^^^^^^^^^^" in str(d) and d.rendered == str(d) and d.message
    assert str(d) in str(e.value)


def test_every_error_class_is_raised_somewhere() -> None:
    raised = {c[2] for c in CASES} | {agentfw.OpenError, agentfw.InternalError}
    exported = {getattr(agentfw, n) for n in agentfw.__all__ if n.endswith("Error")}
    assert exported - {agentfw.AgentfwError} <= raised
