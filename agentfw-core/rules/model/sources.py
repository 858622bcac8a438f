"""Public packages the training data is cut from, pinned, and how to fetch and read them.

Every source is a package at an exact version, fetched with its registry's ordinary
client (pip, npm, apt-get; crates come from the workspace's own Cargo.lock) into a cache
under target/, and read as text files. Each source is assigned whole to one split, so no
text of a test package is ever seen in training or tuning.

The packages reserved for independent evaluation of this project (garak, promptinject,
agentdojo, spikee, pyrit, kingfisher-bin, and the cryptography package's test vectors)
are not used, and neither is any package that depends on them.
"""

import gzip
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass

# (name, version, split). Documentation, changelogs and source of widely used projects:
# what agents paste to each other. LLM SDKs are in on purpose: their docs talk about
# system prompts and instructions without attacking anything.
PYPI = [
    ("flask", "3.0.3", "train"),
    ("click", "8.1.7", "train"),
    ("requests", "2.32.3", "train"),
    ("pytest", "8.2.2", "train"),
    ("attrs", "23.2.0", "train"),
    ("openai", "1.30.1", "train"),
    ("invoke", "2.2.0", "train"),
    ("sphinx", "7.3.7", "train"),
    ("httpx", "0.27.0", "dev"),
    ("anthropic", "0.28.1", "dev"),
    ("black", "24.4.2", "dev"),
    ("docker", "7.1.0", "dev"),
    ("django", "5.0.6", "test"),
    ("langchain-core", "0.2.3", "test"),
    ("rich", "13.7.1", "test"),
    ("fabric", "3.2.2", "test"),
]

NPM = [
    ("express", "4.19.2", "train"),
    ("axios", "1.7.2", "train"),
    ("commander", "12.1.0", "train"),
    ("shelljs", "0.8.5", "train"),
    ("openai", "4.47.1", "train"),
    ("dotenv", "16.4.5", "train"),
    ("yargs", "17.7.2", "dev"),
    ("execa", "9.1.0", "dev"),
    ("@anthropic-ai/sdk", "0.22.0", "dev"),
    ("typescript", "5.4.5", "test"),
    ("zx", "8.1.2", "test"),
    ("ai", "3.1.30", "test"),
]

DEBIAN = [
    ("curl", "7.88.1-10+deb12u15", "train"),
    ("openssh-client", "1:9.2p1-2+deb12u10", "train"),
    ("wget", "1.21.3-1+deb12u1", "dev"),
    ("tar", "1.34+dfsg-1.2+deb12u1", "dev"),
    ("git", "1:2.39.5-0+deb12u3", "test"),
    ("ca-certificates", "20250419~deb12u2", "test"),
]

# Public collections of prompt-injection examples shipped as packages. Each is one source.
ATTACK_PYPI = [
    ("jailbreak-corpus-mini-py", "0.1.0", "dev"),
    ("agent-injection-bench", "0.1.0", "dev"),
    ("bastioncorpus", "0.6.0", "test"),
]

# Crates of the workspace's Cargo.lock go to splits by the first letter of their name
# (a crate is one source): a-h train, i-p dev, q-z test.
def crate_split(name):
    c = name[0].lower()
    return "train" if c <= "h" else "dev" if c <= "p" else "test"


TEXT_EXT = {".md", ".rst", ".txt", ".py", ".js", ".ts", ".mjs", ".cjs", ".rs", ".toml", ".json",
            ".yml", ".yaml", ".cfg", ".ini", ".sh", ".html", ".d.ts", ".crt", ".pem"}
TEXT_NAMES = {"README", "CHANGELOG", "CHANGES", "HISTORY", "NEWS", "AUTHORS", "CONTRIBUTING",
              "changelog.Debian", "changelog", "copyright", "LICENSE"}
MAX_FILE = 400_000


@dataclass
class Source:
    name: str      # e.g. "pypi:flask"
    kind: str      # pypi | npm | deb | crate | attacks
    split: str
    files: list    # [(path, text)]


def run(cmd, cwd=None):
    done = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"`{' '.join(cmd)}` failed:\n{done.stderr.strip()}")


def wanted(path):
    base = os.path.basename(path)
    stem, ext = os.path.splitext(base)
    if base.endswith(".d.ts"):
        return True
    if ext.lower() in TEXT_EXT or stem in TEXT_NAMES or base in TEXT_NAMES:
        return not any(p in path for p in ("/test/vectors", "/vectors/", "/fixtures/", "node_modules/"))
    return base.endswith(".gz") and ("changelog" in base or "/man/" in path or "RelNotes" in path)


def decode(data, path):
    if path.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except OSError:
            return None
    if len(data) > MAX_FILE or b"\0" in data[:4096]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def read_archive(path):
    out = []
    if path.endswith((".whl", ".zip")):
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                if not info.is_dir() and wanted(info.filename) and info.file_size <= MAX_FILE * 4:
                    text = decode(z.read(info), info.filename)
                    if text is not None:
                        out.append((info.filename, text))
        return out
    with tarfile.open(path) as t:
        for m in t.getmembers():
            if m.isfile() and wanted(m.name) and m.size <= MAX_FILE * 4:
                text = decode(t.extractfile(m).read(), m.name)
                if text is not None:
                    out.append((m.name, text))
    return out


def fetch_pypi(cache, name, version, sdist=True):
    d = os.path.join(cache, "pypi", f"{name}-{version}")
    if not os.path.isdir(d) or not os.listdir(d):
        os.makedirs(d, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", d, f"{name}=={version}"]
        if sdist:
            cmd[5:5] = ["--no-binary", ":all:"]
        run(cmd)
    return [os.path.join(d, f) for f in sorted(os.listdir(d))]


def fetch_npm(cache, name, version):
    d = os.path.join(cache, "npm", name.replace("/", "__") + "-" + version)
    if not os.path.isdir(d) or not os.listdir(d):
        os.makedirs(d, exist_ok=True)
        run(["npm", "pack", "--silent", "--pack-destination", d, f"{name}@{version}"])
    return [os.path.join(d, f) for f in sorted(os.listdir(d))]


def fetch_deb(cache, name, version):
    d = os.path.join(cache, "deb", name)
    if not os.path.isdir(d) or not os.listdir(d):
        os.makedirs(d, exist_ok=True)
        run(["apt-get", "download", f"{name}={version}"], cwd=d)
    debs = [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".deb")]
    out = []
    for deb in debs:
        data = subprocess.run(["dpkg-deb", "--fsys-tarfile", deb], check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(data)) as t:
            for m in t.getmembers():
                if m.isfile() and wanted(m.name) and m.size <= MAX_FILE * 4:
                    text = decode(t.extractfile(m).read(), m.name)
                    if text is not None:
                        if "/man/" in m.name:
                            text = strip_roff(text)
                        out.append((m.name, text))
    return out


def strip_roff(text):
    """Man pages as a reader sees them, roughly: requests and font escapes dropped."""
    lines = []
    for line in text.splitlines():
        if line.startswith((".\\\"", "'\\\"")):
            continue
        if line.startswith("."):
            parts = line.split(None, 1)
            line = parts[1] if len(parts) > 1 and parts[0] in (".SH", ".SS", ".IP", ".TP", ".B", ".I", ".BR", ".IR") else ""
        line = re.sub(r"\\f[BIRP]|\\f\(..|\\&|\\\(..|\\[-e]", lambda m: "-" if m.group() == "\\-" else "", line)
        lines.append(line.replace('"', ""))
    return "\n".join(lines)


def crates(repo):
    meta = subprocess.run(["cargo", "metadata", "--locked", "--format-version", "1"], cwd=repo,
                          check=True, capture_output=True, text=True).stdout
    out = []
    for pkg in json.loads(meta)["packages"]:
        if pkg["source"] is None:  # the workspace's own crates
            continue
        root = os.path.dirname(pkg["manifest_path"])
        files = []
        for dirpath, dirs, names in os.walk(root):
            dirs[:] = sorted(x for x in dirs if x not in ("tests", "benches", "testdata", "target"))
            for f in sorted(names):
                p = os.path.join(dirpath, f)
                if wanted(p) and os.path.getsize(p) <= MAX_FILE:
                    with open(p, "rb") as fh:
                        text = decode(fh.read(), p)
                    if text is not None:
                        files.append((os.path.relpath(p, root), text))
        out.append(Source(f"crate:{pkg['name']}-{pkg['version']}", "crate", crate_split(pkg["name"]), files))
    return out


def benign_sources(cache, repo, log):
    out = []
    for name, version, split in PYPI:
        files = [f for a in fetch_pypi(cache, name, version) for f in read_archive(a)]
        out.append(Source(f"pypi:{name}", "pypi", split, files))
        log(f"pypi {name}=={version}: {len(files)} files")
    for name, version, split in NPM:
        files = [f for a in fetch_npm(cache, name, version) for f in read_archive(a)]
        out.append(Source(f"npm:{name}", "npm", split, files))
        log(f"npm {name}@{version}: {len(files)} files")
    for name, version, split in DEBIAN:
        files = fetch_deb(cache, name, version)
        out.append(Source(f"deb:{name}", "deb", split, files))
        log(f"deb {name}={version}: {len(files)} files")
    cs = crates(repo)
    log(f"crates: {len(cs)} from Cargo.lock")
    return out + cs


def attack_sources(cache):
    """Labelled rows from public injection collections: (source, split, [(text, label, category)])."""
    out = []
    for name, version, split in ATTACK_PYPI:
        rows = []
        for archive in fetch_pypi(cache, name, version, sdist=False):
            with zipfile.ZipFile(archive) as z:
                for f in z.namelist():
                    if f.endswith(".jsonl") or (f.endswith(".json") and "dist-info" not in f):
                        rows += parse_collection(name, z.read(f).decode("utf-8"))
        out.append((f"pypi:{name}", split, rows))
    return out


# How each collection's categories map to ours. Rows of categories not listed are skipped.
BASTION = {
    "direct_injection": "override", "instruction_override": "override",
    "indirect_injection": "hidden", "obfuscation": "override", "exfiltration": "exfiltration",
    "delimiter_injection": "hidden", "jailbreak_persona": "roleplay",
}
AIB = {
    "instruction_override": "hidden", "data_exfiltration": "exfiltration", "tool_redirection": "goal-hijack",
    "encoding": "override", "control": "goal-hijack", "context_termination": "hidden",
    "authority_claim": "override", "role_play": "roleplay", "conversation_hijack": "goal-hijack",
}
MINI = {
    "prompt_injection": "override", "prompt_leak": "extraction", "excessive_agency": "goal-hijack",
    "role_hijack": "roleplay", "encoding_smuggle": "override", "indirect_injection": "hidden",
    "policy_evasion": "override", "tool_misuse": "goal-hijack",
}


def parse_collection(name, text):
    rows = []
    if name == "bastioncorpus":
        for line in text.splitlines():
            r = json.loads(line)
            if r["label"] == "benign":
                rows.append((r["text"], "allow", "benign-public"))
            elif r["category"] in BASTION:
                category = BASTION[r["category"]]
                if category == "exfiltration" and ("prompt" in r["text"] or "instructions" in r["text"]):
                    category = "extraction"
                rows.append((r["text"], "deny", category))
    elif name == "agent-injection-bench":
        for line in text.splitlines():
            r = json.loads(line)
            if r["family"] == "baseline":  # a descriptive text with no attack in it
                rows.append((r["injected"], "allow", "benign-public"))
            elif r["family"] in AIB:
                rows.append((r["injected"], "deny", AIB[r["family"]]))
    elif name == "jailbreak-corpus-mini-py":
        data = json.loads(text)
        for r in data if isinstance(data, list) else []:
            if r.get("category") in MINI:
                rows.append((r["prompt"], "deny", MINI[r["category"]]))
    return rows
