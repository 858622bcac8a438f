"""The core's shared vectors (agentfw-core/vectors), run through the Python binding.

Each test reads the same JSON the Rust tests read and must reproduce it exactly (BD3).
"""

from __future__ import annotations

from typing import Any

import pytest

import agentfw
from conftest import VECTORS, load


def cases(name: str, key: str = "cases") -> list[Any]:
    return list(load(name)[key])


@pytest.mark.parametrize("case", cases("normalize.json"), ids=lambda c: c["note"])
def test_normalize(case: dict[str, Any]) -> None:
    assert agentfw.fold(case["input"]) == case["folded"]


@pytest.mark.parametrize("case", cases("fingerprint.json"), ids=lambda c: c["note"])
def test_fingerprint(case: dict[str, Any]) -> None:
    p = agentfw.fingerprint(agentfw.fold(case["input"]))
    assert (p.whole, p.lines, p.sketch) == (case["whole"], case["lines"], case["sketch"])


@pytest.mark.parametrize("case", cases("fence.json"), ids=lambda c: c["note"])
def test_fence(case: dict[str, Any]) -> None:
    f = agentfw.fence(case["from"], case["id"], case["body"], seed=case["seed"])
    assert (f.marker, f.text) == (case["marker"], case["text"])


def run_provenance(file: dict[str, Any], case: dict[str, Any]) -> list[dict[str, Any]]:
    """What the core's `Sim` does: a firewall with no content rules, one inbox per agent,
    a clock advanced one second per step (running every timeout on the way)."""
    agents = {
        name: agentfw.Agent(a["id"], a["kind"], a["project"]) for name, a in file["agents"].items()
    }
    fw = agentfw.Firewall(rules=agentfw.Policy.compile([]), seed=0)
    now = 1_796_047_500_000
    inboxes: dict[str, list[agentfw.Message]] = {}
    results: list[dict[str, Any]] = []
    for step in case["steps"]:
        end = now + 1000
        while (due := fw.poll_timeout()) is not None and now < due <= end:
            now = due
            fw.timeout(now=now)
        now = end
        fw.timeout(now=now)
        if "send" in step:
            s = step["send"]
            out = fw.send(agents[s["from"]], agents[s["to"]], s["text"], now=now)
            if out.kind == "accepted":
                assert out.message is not None
                inboxes.setdefault(s["to"], []).append(out.message)
                p = out.message.provenance
                results.append(
                    {"verdict": "accepted", "hops": p.hops, "origin": p.origin.label, "path": p.display_path}
                )
            else:
                assert out.reason is not None
                results.append({"verdict": "refused", "code": out.reason.code})
        else:
            waiting, inboxes[step["read"]] = inboxes.get(step["read"], []), []
            for message in waiting:
                out = fw.deliver(message, now=now)
                if out.kind == "held":
                    inboxes[step["read"]].append(message)
        fw.events()
    return results


@pytest.mark.parametrize("case", cases("provenance.json"), ids=lambda c: c["note"])
def test_provenance(case: dict[str, Any]) -> None:
    assert run_provenance(load("provenance.json"), case) == case["want"]


ENVELOPES = load("seal/envelopes.json")


@pytest.mark.parametrize("case", ENVELOPES["cases"], ids=lambda c: c["name"])
def test_seal_envelopes(case: dict[str, Any]) -> None:
    devices = ENVELOPES["devices"]

    def keys(name: str) -> agentfw.Keys:
        return agentfw.Keys.from_key_file(devices[name]["key_file"])

    for name, device in devices.items():
        bundle = agentfw.PublicBundle.parse(device["bundle"])
        assert keys(name).public == bundle
        assert bundle.device == device["device"]

    recipient = keys(case["recipient"])
    keyring = agentfw.Keyring()
    for trusted in case["trusted"]:
        keyring.trust(keys(trusted).public)
    replay = agentfw.ReplayCache()
    envelope = bytes.fromhex(case["envelope"])
    result: agentfw.Opened | agentfw.OpenError | None = None
    for _ in range(case["opens"]):
        try:
            result = agentfw.open(recipient, keyring, replay, envelope, now=case["now_ms"])
        except agentfw.OpenError as e:
            result = e
    expect = case["expect"]
    if "error" in expect:
        assert isinstance(result, agentfw.OpenError), case["name"]
        assert result.code == expect["error"]
    else:
        assert isinstance(result, agentfw.Opened), result
        assert result.body == bytes.fromhex(expect["body"])
        h = result.header
        want = expect["header"]
        assert (h.sender, h.recipient, h.id, h.timestamp, h.content_type) == (
            want["sender"],
            want["recipient"],
            want["id"],
            want["timestamp_ms"],
            want["content_type"],
        )


VERDICTS = load("admission/verdicts.json")


def gate(inventory: Any, threshold: float, mode: str, exceptions: list[str]) -> agentfw.Admission:
    return agentfw.Admission(inventory, mode=mode, threshold=threshold, exceptions=exceptions)  # type: ignore[arg-type]


@pytest.mark.parametrize("case", VERDICTS["cases"], ids=lambda c: c["note"])
def test_admission_verdicts(case: dict[str, Any]) -> None:
    a = gate(case["inventory"], case["threshold"], case["mode"], case["exceptions"])
    got = [{"agent": e.agent, "admitted": e.admitted, "line": e.line(a.mode)} for e in a.evaluate_all()]
    assert got == case["want"]


@pytest.mark.parametrize("case", VERDICTS["previews"], ids=lambda c: c["note"])
def test_admission_previews(case: dict[str, Any]) -> None:
    a = gate(case["inventory"], case["current"], "enforce", case["exceptions"])
    assert str(a.preview(case["threshold"])) == case["want"]


@pytest.mark.parametrize("case", VERDICTS["errors"], ids=lambda c: c["note"])
def test_admission_inventory_errors(case: dict[str, Any]) -> None:
    with pytest.raises(agentfw.AdmissionError) as e:
        agentfw.Admission(case["text"])
    assert str(e.value) == case["error"]
    assert e.value.code == "admission.inventory"


IMPORTS = load("admission/import.json")


@pytest.mark.parametrize("case", IMPORTS["cases"], ids=lambda c: c["note"])
def test_admission_import(case: dict[str, Any]) -> None:
    text = (VECTORS / "admission" / case["report"]).read_text() if case.get("report") else case["report_text"]
    got = agentfw.import_cisco_mcp_scanner(text, case["server"])
    assert dict(got.ratings) == case["ratings"]
    assert got.notes == case["notes"]


@pytest.mark.parametrize("case", IMPORTS["errors"], ids=lambda c: c["note"])
def test_admission_import_errors(case: dict[str, Any]) -> None:
    with pytest.raises(agentfw.AdmissionError) as e:
        agentfw.import_cisco_mcp_scanner(case["report_text"], case["server"])
    assert str(e.value) == case["error"]
    assert e.value.code == "admission.scanner_report"
