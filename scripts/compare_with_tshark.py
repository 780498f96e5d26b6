#!/usr/bin/env python3
"""Reassemble every TCP connection of many captures with framedump and with tshark's
`follow,tcp,raw`, and report where they differ: connection counts (a connection split in
two, or one lost) and stream bytes (bytes dropped). tshark's "[N bytes missing in capture
file]" notices are left out, as are connections tshark follows with no bytes at all.

Usage: scripts/compare_with_tshark.py FRAMEDUMP_BINARY CAPTURE_OR_DIR...
Prints one line per capture that differs, then totals.
"""
import json, os, re, subprocess, sys, tempfile


def follow(cap, streams):
    """tshark's bytes per stream and node: {n: (nodes, [bytes0, bytes1])}."""
    out = {}
    for start in range(0, len(streams), 50):
        args = ["tshark", "-r", cap, "-q"]
        for n in streams[start:start + 50]:
            args += ["-z", f"follow,tcp,raw,{n}"]
        text = subprocess.run(args, capture_output=True, text=True, timeout=300).stdout
        cur = None
        for line in text.split("\n"):
            if line.startswith("Filter: tcp.stream eq "):
                cur = int(line.split()[-1])
                out[cur] = ([], [bytearray(), bytearray()])
            elif cur is None:
                continue
            elif line.startswith("Node 0: ") or line.startswith("Node 1: "):
                ep = line[8:]
                if not ep.startswith("[") and ep.count(":") > 1:
                    i = ep.rfind(":")
                    ep = "[" + ep[:i] + "]" + ep[i:]
                out[cur][0].append(ep)
            elif line and not line.startswith("=") and not line.startswith("Follow"):
                node = 1 if line.startswith("\t") else 0
                h = line.strip()
                if len(h) % 2 == 0 and all(c in "0123456789abcdefABCDEF" for c in h):
                    out[cur][1][node] += bytes.fromhex(h)
    # tshark writes its "[N bytes missing in capture file]" notice into the bytes, not
    # always on a line of its own.
    for n in out:
        out[n] = (out[n][0], [re.sub(rb"\[\d+ bytes missing in capture file\]\x00?", b"", bytes(x)) for x in out[n][1]])
    return out


def tshark_streams(cap):
    r = subprocess.run(["tshark", "-r", cap, "-q", "-T", "fields", "-e", "tcp.stream"],
                       capture_output=True, text=True, timeout=300)
    return sorted({int(x) for x in r.stdout.split() if x.isdigit()})


def compare(fd, cap):
    d = tempfile.mkdtemp(prefix="fd-cmp-")
    nodiss = tempfile.mkdtemp(prefix="fd-cmp-empty-")
    r = subprocess.run([fd, "-r", cap, "-q", "-d", nodiss, "--streams", d], capture_output=True, text=True, timeout=300)
    if r.returncode not in (0, 5):
        return [f"framedump exit {r.returncode}: {r.stderr.strip()[:200]}"]
    try:
        index = json.load(open(os.path.join(d, "index.json")))
    except (OSError, ValueError):
        index = []
    streams = tshark_streams(cap)
    theirs = follow(cap, streams) if streams else {}
    # Key both sides by the connection's two endpoints (the order differs between tools).
    def key(a, b):
        return tuple(sorted((a, b)))
    mine = {}
    for e in index:
        c, s = e["conn"].split("-", 1)
        files = e["files"]
        def read(name):
            try:
                return open(os.path.join(d, name), "rb").read()
            except OSError:
                return b""
        mine.setdefault(key(c, s), []).append({c: read(files["c2s"]), s: read(files["s2c"])})
    tsh = {}
    for n, (nodes, data) in sorted(theirs.items()):
        if len(nodes) != 2 or (not data[0] and not data[1]):
            continue
        tsh.setdefault(key(*nodes), []).append({nodes[0]: bytes(data[0]), nodes[1]: bytes(data[1])})
    diffs = []
    for k, convs in tsh.items():
        ours = [m for m in mine.get(k, []) if any(m.values())]
        if len(ours) != len(convs):
            diffs.append(f"{k[0]}-{k[1]}: tshark {len(convs)} connections with data, framedump {len(ours)}")
            continue
        for a, b in zip(convs, ours):
            for ep in a:
                if a[ep] != b.get(ep, b""):
                    diffs.append(f"{k[0]}-{k[1]} from {ep}: tshark {len(a[ep])} bytes, framedump {len(b.get(ep, b''))}")
    subprocess.run(["rm", "-rf", d, nodiss])
    return diffs


def main():
    fd = sys.argv[1]
    caps = []
    for p in sys.argv[2:]:
        if os.path.isdir(p):
            caps += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith((".pcap", ".pcapng", ".cap")))
        else:
            caps.append(p)
    differing = 0
    for cap in caps:
        try:
            diffs = compare(fd, cap)
        except subprocess.TimeoutExpired:
            diffs = ["timeout"]
        if diffs:
            differing += 1
            print(f"{os.path.basename(cap)}: " + "; ".join(diffs[:3]) + (f" (+{len(diffs) - 3} more)" if len(diffs) > 3 else ""), flush=True)
    print(f"{len(caps)} captures, {differing} differ")


if __name__ == "__main__":
    main()
