#!/usr/bin/env python3
"""Build the secrets evaluation corpus: train, dev and test, split by source.

    python3 build.py OUT [--no-fetch]

writes OUT/{train,dev,test}.jsonl, one message per line:
{"text", "want": "deny"|"allow", "category", "source", "split", "note"}.

Positives are made by generators (tokens.py) and placed in carriers (carriers.py); the
carriers of one split are never used by another. Benign text comes from public packages
(PyPI, npm, Debian), fetched into OUT/cache by their ordinary clients, each package wholly
in one split, and from generators of look-alikes (random base64, hex, UUIDs, hashes,
public keys, certificates, placeholder tokens), again each in its own carrier per split.
A fixed seed per split makes the output the same on every run with the same packages.
"""
import argparse
import base64
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import carriers  # noqa: E402
import tokens  # noqa: E402
from tokens import ALNUM, HEX, URLSAFE, Gen  # noqa: E402

SEEDS = {"train": 1801, "dev": 1802, "test": 1803}

# Public packages whose text is benign (code, docs, changelogs, certificates, hashes, keys
# that are public). Each package is one source and sits in one split.
PACKAGES = {
    "train": [("pypi", "certifi"), ("pypi", "rich"), ("npm", "express"), ("npm", "uuid"), ("deb", "debian-archive-keyring")],
    "dev": [("pypi", "httpx"), ("pypi", "python-dotenv"), ("npm", "commander"), ("npm", "yaml"), ("deb", "bash-completion")],
    "test": [("pypi", "click"), ("pypi", "jinja2"), ("npm", "dotenv"), ("npm", "marked"), ("deb", "ca-certificates"), ("deb", "archlinux-keyring")],
}
TEXT_SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts", ".md", ".rst", ".txt", ".json", ".toml", ".cfg", ".ini", ".yaml", ".yml", ".pem", ".crt", ".sh", ".html", ".asc", "RECORD", "METADATA", "md5sums", "changelog", "copyright")
CHUNK = 2000
PER_PACKAGE = 300


def fetch(kind, name, cache):
    """Downloads one package into cache/kind-name/ and returns the extracted folder."""
    folder = os.path.join(cache, f"{kind}-{name}")
    done = os.path.join(folder, ".done")
    if os.path.exists(done):
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    dl = os.path.join(folder, "dl")
    os.makedirs(dl)
    if kind == "pypi":
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", dl, name]
        if subprocess.run(cmd, capture_output=True).returncode != 0:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-d", dl, name]
            subprocess.run(cmd, capture_output=True, check=True)
    elif kind == "npm":
        subprocess.run(["npm", "pack", name, "--silent", "--pack-destination", dl], capture_output=True, check=True)
    else:
        subprocess.run(["apt-get", "download", name], cwd=dl, capture_output=True, check=True)
    for f in os.listdir(dl):
        path = os.path.join(dl, f)
        out = os.path.join(folder, "x")
        if f.endswith((".tar.gz", ".tgz")):
            with tarfile.open(path) as t:
                t.extractall(out, filter="data")
        elif f.endswith((".whl", ".zip")):
            with zipfile.ZipFile(path) as z:
                z.extractall(out)
        elif f.endswith(".deb"):
            subprocess.run(["dpkg-deb", "-x", path, out], check=True)
            subprocess.run(["dpkg-deb", "-e", path, os.path.join(out, "DEBIAN")], check=True)
    open(done, "w").close()
    return folder


def armour(data, label):
    """ASCII armour (RFC 4880) for a binary OpenPGP public keyring."""
    crc = 0xB704CE
    for b in data:
        crc ^= b << 16
        for _ in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    body = base64.b64encode(data).decode()
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    tail = base64.b64encode((crc & 0xFFFFFF).to_bytes(3, "big")).decode()
    return f"-----BEGIN {label}-----\n\n{lines}\n={tail}\n-----END {label}-----\n"


def package_texts(folder):
    """The package's text files, and its binary OpenPGP keyrings as armoured text."""
    for root, _, files in sorted(os.walk(os.path.join(folder, "x"))):
        for f in sorted(files):
            path = os.path.join(root, f)
            if f.endswith(".gpg") and os.path.getsize(path) < 2_000_000:
                with open(path, "rb") as fh:
                    yield f, armour(fh.read(), "PGP PUBLIC KEY BLOCK")
                continue
            if not f.endswith(TEXT_SUFFIXES) or os.path.getsize(path) > 3_000_000:
                continue
            try:
                with open(path, encoding="utf-8") as fh:
                    yield f, fh.read()
            except (UnicodeDecodeError, OSError):
                continue


def chunks(text):
    """Messages of about CHUNK characters, cut at line ends."""
    out, size = [], 0
    for line in text.splitlines(keepends=True):
        out.append(line)
        size += len(line)
        if size >= CHUNK:
            yield "".join(out)
            out, size = [], 0
    if out and "".join(out).strip():
        yield "".join(out)


def package_rows(split, fetch_enabled, cache, rng):
    rows, missing = [], []
    for kind, name in PACKAGES[split]:
        source = f"{kind}:{name}"
        if not fetch_enabled and not os.path.exists(os.path.join(cache, f"{kind}-{name}", ".done")):
            missing.append(source)
            continue
        try:
            folder = fetch(kind, name, cache)
        except (subprocess.CalledProcessError, OSError) as e:
            print(f"warning: cannot fetch {source}: {e}", file=sys.stderr)
            missing.append(source)
            continue
        found = []
        for fname, text in package_texts(folder):
            for c in chunks(text):
                # Package test fixtures carry real-format private keys; those chunks are not
                # benign, and labelling them needs no pattern of ours: they say so.
                if "PRIVATE KEY" in c:
                    continue
                found.append((fname, c))
        rng.shuffle(found)
        for fname, c in found[:PER_PACKAGE]:
            category = "benign-certificates" if "BEGIN CERTIFICATE" in c else "benign-public-keys" if "PUBLIC KEY" in c else "benign-package-text"
            rows.append(row(c, "allow", category, source, split, fname))
    return rows, missing


def row(text, want, category, source, split, note):
    return {"text": text, "want": want, "category": category, "source": source, "split": split, "note": note}


# ------------------------------------------------------------------ benign look-alikes
def lookalikes(g):
    """(category, kind, value) of random data shaped like secrets, and example tokens."""
    s = g.s
    sha = lambda: hashlib.sha256(g.raw(16)).hexdigest()
    ssh_ed = lambda: "ssh-ed25519 " + base64.b64encode(b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20" + g.raw(32)).decode() + " dev@laptop"
    ssh_rsa = lambda: "ssh-rsa " + base64.b64encode(b"\x00\x00\x00\x07ssh-rsa\x00\x00\x00\x03\x01\x00\x01\x00\x00\x01\x01\x00" + g.raw(256)).decode() + " ci@runner"
    spki = lambda: "-----BEGIN PUBLIC KEY-----\n" + "\n".join((lambda b: [b[i : i + 64] for i in range(0, len(b), 64)])("MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" + g.b64(264))) + "\n-----END PUBLIC KEY-----"
    cert = lambda: "-----BEGIN CERTIFICATE-----\n" + "\n".join((lambda b: [b[i : i + 64] for i in range(0, len(b), 64)])("MIIDdzCCAl+gAwIBAgIE" + g.b64(860))) + "\n-----END CERTIFICATE-----"
    return [
        ("benign-random-base64", "base64-wrapped", lambda: "\n".join((lambda b: [b[i : i + 76] for i in range(0, len(b), 76)])(g.b64(g.rng.randint(600, 3000))))),
        ("benign-random-base64", "base64-line", lambda: g.b64(g.rng.randint(200, 2000))),
        ("benign-random-base64", "base64url", lambda: g.b64(g.rng.randint(100, 900), url=True, pad=False)),
        ("benign-random-base64", "base64-48k", lambda: g.b64(36000)),
        ("benign-random-hex", "hex", lambda: s(HEX, g.rng.choice([32, 40, 64, 128, 512]))),
        ("benign-random-hex", "hex-upper", lambda: s(HEX.upper(), g.rng.choice([32, 40, 64]))),
        ("benign-uuids", "uuid", lambda: g.uuid()),
        ("benign-uuids", "uuid-list", lambda: "\n".join(g.uuid() for _ in range(20))),
        ("benign-hashes", "sha256sum", lambda: "\n".join(f"{sha()}  dist/app-{i}.tar.gz" for i in range(8))),
        ("benign-hashes", "git-log", lambda: "\n".join(f"commit {hashlib.sha1(g.raw(8)).hexdigest()}\nAuthor: Dev <dev@example.org>\n\n    fix flaky test {i}\n" for i in range(4))),
        ("benign-hashes", "sri", lambda: "sha512-" + g.b64(64)),
        ("benign-hashes", "record", lambda: "\n".join(f"pkg/mod{i}.py,sha256={g.b64(32, url=True, pad=False)},{g.rng.randint(100, 9000)}" for i in range(10))),
        ("benign-hashes", "cargo-lock", lambda: "\n".join(f'[[package]]\nname = "crate{i}"\nversion = "1.0.{i}"\nchecksum = "{sha()}"\n' for i in range(5))),
        ("benign-public-keys", "ssh-ed25519", ssh_ed),
        ("benign-public-keys", "ssh-rsa", ssh_rsa),
        ("benign-public-keys", "spki-pem", spki),
        ("benign-public-keys", "age-recipient", lambda: g.bech32("age", 32).lower()),
        ("benign-public-keys", "wireguard-public", lambda: f"[Peer]\nPublicKey = {g.b64(32)}\nAllowedIPs = 10.0.0.0/24"),
        ("benign-certificates", "certificate", cert),
        ("benign-placeholders", "placeholder", lambda: g.rng.choice([
            "ghp_" + "x" * 36, "sk_live_" + "X" * 24, "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "<your-api-key>", "${OPENAI_API_KEY}", "sk-...", "xoxb-your-token-here", "changeme", "REPLACE_ME",
            "ghp_" + s(ALNUM, 36), "npm_" + s(ALNUM, 36), "glsa_" + s(ALNUM, 32) + "_deadbeef",
        ])),
        ("benign-ids", "ids-json", lambda: json.dumps({"items": [{"id": s(ALNUM, 24), "etag": s(HEX, 32), "cursor": s(URLSAFE, 40)} for _ in range(6)]})),
        ("benign-ids", "prefix-soup", lambda: " ".join(g.rng.choice(["cio", "ghp", "sk", "AKIA", "xoxb", "glpat", "npm", "pypi"]) + s(ALNUM, g.rng.randint(3, 12)) for _ in range(80))),
    ]


def benign_text_carriers(split):
    """Look-alikes are placed like the positives: the same carriers of the split, plus bare."""
    return carriers.SPLITS[split]


def build_split(split, fetch_enabled, cache):
    rng = random.Random(SEEDS[split])
    g = Gen(rng)
    rows = []
    carrier_list = carriers.SPLITS[split]
    line_carriers = [c for c in carrier_list if c not in (carriers.bare, carriers.key_file_chat, carriers.key_in_json)]
    # Provider tokens: every provider, in every line carrier of this split.
    for name, var, make in tokens.providers(g):
        for carrier in line_carriers:
            rows.append(row(carrier(g, var, make()), "deny", "provider-tokens", f"gen:{carrier.__name__}", split, name))
    # Private keys: in the carriers that hold whole files, and in line carriers when short.
    key_carriers = [c for c in carrier_list if c in (carriers.bare, carriers.key_file_chat, carriers.key_in_json)] or [carriers.bare]
    for _ in range(3):
        for kind, text in tokens.private_keys(g):
            carrier = rng.choice(key_carriers + (line_carriers if "\n" not in text else []))
            rows.append(row(carrier(g, "PRIVATE_KEY", text), "deny", "private-keys", f"gen:{carrier.__name__}", split, kind))
    # Generic credentials.
    for _ in range(6):
        for kind, var, make in tokens.generic(g):
            carrier = rng.choice(line_carriers)
            rows.append(row(carrier(g, var, make()), "deny", "generic-credentials", f"gen:{carrier.__name__}", split, kind))
    for _ in range(10):
        user, pw = g.s(tokens.LOW, 6), g.s(ALNUM, 18)
        for kind, text in [
            ("url-userinfo", f"git clone https://{user}:{pw}@git.internal.dev/team/api.git"),
            ("curl-user", f"curl -u {user}:{pw} https://registry.internal.dev/v2/_catalog"),
            ("password-flag", f"./manage.py createsuperuser --username admin --password={pw}"),
            ("bearer-header", f"Authorization: Bearer {g.s(URLSAFE, 40)}"),
        ]:
            rows.append(row(text, "deny", "generic-credentials", f"gen:cli-{split}", split, kind))
    # Cheap rewrites of tokens: split across lines, spaced every four, fullwidth, look-alikes.
    for name, var, make in tokens.providers(g)[:60]:
        value = make()
        kind = rng.choice(["split-line", "spaced-4", "fullwidth", "lookalike", "base64", "url-encoded"])
        rewritten = rewrite(value, kind, rng)
        carrier = rng.choice(line_carriers)
        rows.append(row(carrier(g, var, rewritten), "deny", "rewrites", f"gen:rewrite-{carrier.__name__}", split, f"{name} {kind}"))
    # Benign look-alikes, bare and in this split's carriers.
    for category, kind, make in lookalikes(g):
        n = 2 if kind == "base64-48k" else 25
        for _ in range(n):
            value = make()
            carrier = rng.choice(carrier_list if "\n" not in value and len(value) < 4000 else [carriers.bare, carriers.chat])
            carrier = carriers.BENIGN_TWIN.get(carrier, carrier)
            rows.append(row(carrier(g, "CHECKSUM" if "hash" in category else "DATA", value), "allow", category, f"gen:{carrier.__name__}", split, kind))
    pkg_rows, missing = package_rows(split, fetch_enabled, cache, rng)
    rows.extend(pkg_rows)
    # Rewrites a reader undoes by reading the syntax or the encoding: pieces concatenated,
    # listed, labelled or tabled, separators inserted, a prefix set apart, base32, base64
    # twice, hex bytes, HTML and \u escapes, quoted-printable soft breaks. Their own seed,
    # so the rows above stay as they were.
    srng = random.Random(SEEDS[split] * 7 + 5)
    sg = Gen(srng)
    for name, var, make in tokens.providers(sg)[:80]:
        kind = srng.choice(SYNTAX_REWRITES)
        carrier = srng.choice(line_carriers)
        rows.append(row(carrier(sg, var, syntax_rewrite(make(), kind, srng)), "deny", "rewrites-syntax", f"gen:rewrite-{carrier.__name__}", split, f"{name} {kind}"))
    return rows, missing


SYNTAX_REWRITES = [
    "concat", "json-array", "join", "comma-list", "labelled", "table", "blank-line", "continuation",
    "dash-every", "dot-every", "spaced-1", "prefix-apart", "base32", "base64-twice", "hex-bytes",
    "html-references", "json-escapes", "soft-break",
]


def pieces(value, rng):
    size = rng.randint(4, 12)
    return [value[i : i + size] for i in range(0, len(value), size)]


def syntax_rewrite(value, kind, rng):
    half = len(value) // 2
    if kind == "concat":
        q = rng.choice(['"', "'"])
        return q + f"{q} + {q}".join(pieces(value, rng)) + q
    if kind == "json-array":
        return json.dumps(pieces(value, rng))
    if kind == "join":
        return '[' + ",".join(json.dumps(p) for p in pieces(value, rng)) + '].join("")'
    if kind == "comma-list":
        return ", ".join(pieces(value, rng))
    if kind == "labelled":
        label = rng.choice(["part", "chunk", "key part", "piece"])
        return "\n".join(f"{label} {i + 1}: {p}" for i, p in enumerate([value[:half], value[half:]]))
    if kind == "table":
        return f"| {value[:half]} | {value[half:]} |"
    if kind == "blank-line":
        return value[:half] + "\n\n" + value[half:]
    if kind == "continuation":
        return value[:half] + "\\\n" + value[half:]
    if kind in ("dash-every", "dot-every"):
        size = rng.randint(3, 6)
        sep = "-" if kind == "dash-every" else "."
        return sep.join(value[i : i + size] for i in range(0, len(value), size))
    if kind == "spaced-1":
        return " ".join(value)
    if kind == "prefix-apart":
        cut = next((i + 1 for i, c in enumerate(value) if c in "_-"), 4)
        return value[:cut] + " " + value[cut:]
    if kind == "base32":
        e = base64.b32encode(value.encode()).decode()
        return e.lower().rstrip("=") if rng.random() < 0.3 else e
    if kind == "base64-twice":
        return base64.b64encode(base64.b64encode(value.encode())).decode()
    if kind == "hex-bytes":
        fmt, sep = rng.choice([("{:02X}", " "), ("0x{:02x}", ", "), ("{:02x}", ":")])
        return sep.join(fmt.format(b) for b in value.encode())
    if kind == "html-references":
        return "".join(f"&#{ord(c)};" if rng.random() < 0.5 else f"&#x{ord(c):x};" for c in value)
    if kind == "json-escapes":
        return "".join(f"\\u{ord(c):04x}" for c in value)
    return value[:half] + "=\n" + value[half:]


FULLWIDTH = {c: chr(ord(c) + 0xFEE0) for c in ALNUM}
LOOKALIKE = {"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "y": "у", "A": "А", "B": "В", "E": "Е", "K": "К", "M": "М", "H": "Н", "O": "О", "P": "Р", "C": "С", "T": "Т", "X": "Х"}


def rewrite(value, kind, rng):
    if kind == "split-line":
        cut = len(value) // 2
        return value[:cut] + "\n" + value[cut:]
    if kind == "spaced-4":
        return " ".join(value[i : i + 4] for i in range(0, len(value), 4))
    if kind == "fullwidth":
        return "".join(FULLWIDTH.get(c, c) for c in value)
    if kind == "lookalike":
        return "".join(LOOKALIKE.get(c, c) if rng.random() < 0.5 else c for c in value)
    if kind == "base64":
        return base64.b64encode(value.encode()).decode()
    return "".join(f"%{ord(c):02X}" if not c.isalnum() or rng.random() < 0.3 else c for c in value)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--no-fetch", action="store_true", help="use only packages already in OUT/cache")
    args = ap.parse_args()
    cache = os.path.join(args.out, "cache")
    os.makedirs(cache, exist_ok=True)
    for split in SEEDS:
        rows, missing = build_split(split, not args.no_fetch, cache)
        with open(os.path.join(args.out, f"{split}.jsonl"), "w") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        print(f"{split}: {len(rows)} rows" + (f"; missing sources: {', '.join(missing)}" if missing else ""), file=sys.stderr)


if __name__ == "__main__":
    main()
