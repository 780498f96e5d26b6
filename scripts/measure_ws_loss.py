#!/usr/bin/env python3
"""WebSocket recovery after loss, measured against what the peers logged: framedump and tshark
on the fixture `scripts/make_ws_loss_fixture.py` recorded (ten real connections, six TCP data
segments removed). From the repository root:

    python3 scripts/measure_ws_loss.py [--framedump .build/debug/framedump] [--tshark tshark] [-v]

Both tools also read the capture as recorded (rebuilt from the lossy one and the removed records
the log keeps), for a baseline. Per connection and direction, each message a tool shows (a
text, binary or continuation message: framedump's NDJSON `-T json`, tshark's PDML with its
own permessage-deflate decompression) is matched in order against the log:

- recovered: the logged message exactly (opcode and payload);
- flagged: a payload that is no logged message, shown with a warning that it could not be
  inflated (framedump: "cannot inflate" among the message's `warnings`, the compressed bytes
  shown; tshark: the expert info "Decompression failed" in the same packet), or that it is the
  rest of a message whose start was lost (framedump: "continuation frame without a message to
  continue"; counted apart as `partial`);
- invented: any other message that is no logged message (frames of reserved opcodes
  included: the peers sent none);
- lost: a logged message not shown (those whose bytes a removed segment held; those after such
  a message in a direction with context takeover, whose window went with it; and any other).
"""
import argparse, json, os, subprocess, sys, tempfile
import xml.etree.ElementTree as ET

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
FIXTURES = os.path.join(ROOT, "Tests", "FramedumpCoreTests", "Fixtures")


def load_log():
    with open(os.path.join(FIXTURES, "ws_loss.messages.json")) as f:
        return json.load(f)


def payload_of(m):
    return m["text"].encode() if m["opcode"] == "text" else bytes.fromhex(m["payload"])


def rebuild_full(log, path):
    """The capture as recorded: the lossy one with the removed records put back."""
    with open(os.path.join(FIXTURES, "ws_loss.pcap"), "rb") as f:
        data = f.read()
    records, i = [], 24
    while i < len(data):
        n = int.from_bytes(data[i + 8:i + 12], "little")
        records.append(data[i:i + 16 + n])
        i += 16 + n
    for r in sorted(log["removed"], key=lambda r: r["packet"]):
        records.insert(r["packet"] - 1, bytes.fromhex(r["record"]))
    with open(path, "wb") as f:
        f.write(data[:24] + b"".join(records))


def framedump_messages(exe, pcap):
    """{(client port, dir): [(opcode, payload, flagged)]} from framedump's NDJSON."""
    out = subprocess.run([exe, "-r", pcap, "-T", "json"], cwd=ROOT, capture_output=True, timeout=120, check=True).stdout
    shown = {}
    for line in out.decode().splitlines():
        o = json.loads(line)
        ws = o.get("ws")
        if not ws or ws["opcode"] in ("close", "ping", "pong"):
            continue
        port = int(o["conn"].split("-")[0].rsplit(":", 1)[1])
        fields = o.get("fields") or {}
        v = fields.get("payload", fields.get("text", fields.get("body", "")))
        data = v.encode() if ws["opcode"] == "text" else bytes.fromhex(v) if isinstance(v, str) else b""
        warnings = " ".join(o.get("warnings", []))
        flag = "inflate" if "cannot inflate" in warnings else "partial" if "without a message to continue" in warnings else ""
        shown.setdefault((port, o["dir"]), []).append((ws["opcode"], data, flag))
    return shown


def tshark_messages(exe, pcap, server_port):
    """The same from tshark's PDML: each frame that ends a data message (FIN, opcode 0-2), with
    the text or data its dissector shows for it (inflated by its own permessage-deflate)."""
    out = subprocess.run([exe, "-r", pcap, "-d", "tcp.port==%d,http" % server_port, "-Y", "websocket", "-T", "pdml"],
                         capture_output=True, timeout=600, check=True).stdout
    shown = {}
    for packet in ET.fromstring(out).iter("packet"):
        sport = dport = None
        frames, expert = [], False
        for proto in packet:
            name = proto.get("name")
            if name == "tcp":
                for f in proto.iter("field"):
                    if f.get("name") == "tcp.srcport":
                        sport = int(f.get("show"))
                    elif f.get("name") == "tcp.dstport":
                        dport = int(f.get("show"))
            if any(f.get("name") == "websocket.decompression.failed.expert" for f in proto.iter("field")):
                expert = True
            if name == "websocket":
                fv = {f.get("name"): f for f in proto.iter("field")}
                text = fv.get("websocket.payload.text")
                frames.append({"opcode": int(fv["websocket.opcode"].get("show")), "fin": fv["websocket.fin"].get("show") == "1",
                               "data": bytes.fromhex(text.get("value")) if text is not None and text.get("value") else None})
            elif frames and frames[-1]["data"] is None:
                # A binary payload: the data dissector's field after its frame.
                for f in proto.iter("field"):
                    if f.get("name") == "data" and f.get("value"):
                        frames[-1]["data"] = bytes.fromhex(f.get("value"))
                        break
        key = (sport, "c2s") if dport == server_port else (dport, "s2c")
        for fr in frames:
            if fr["opcode"] in (8, 9, 10) or (fr["opcode"] <= 2 and (not fr["fin"] or fr["data"] is None)):
                continue
            op = {1: "text", 2: "binary"}.get(fr["opcode"], "opcode %d" % fr["opcode"])
            shown.setdefault(key, []).append((op, fr["data"] or b"", "inflate" if expert else ""))
    return shown


def match(log, shown, lossy=True):
    """Per (port, dir): counts, and the indices of the logged messages recovered (`lossy`: the
    capture without the removed segments, whose lost messages are told apart)."""
    rows = {}
    for c in log["connections"]:
        for d in ("c2s", "s2c"):
            logged = [(m["opcode"], payload_of(m)) for m in c[d]]
            j, got, flagged, partial, invented = 0, set(), 0, 0, 0
            for op, data, flag in shown.get((c["client_port"], d), []):
                k = next((k for k in range(j, len(logged)) if logged[k] == (op, data)), None)
                if k is not None:
                    got.add(k)
                    j = k + 1
                elif flag:
                    flagged += 1
                    partial += flag == "partial"
                else:
                    invented += 1
            touched = {k for k, m in enumerate(c[d]) if "lost" in m and lossy}
            after = set()
            if c.get(d + "_context_takeover") and lossy:
                for r in log["removed"]:
                    if (r["conn"], r["dir"]) == (c["client_port"], d):
                        after |= set(range(r["after"], len(logged))) - touched
            lost = set(range(len(logged))) - got
            rows[(c["client_port"], d)] = {"kind": c["kind"], "logged": len(logged), "recovered": len(got),
                                           "flagged": flagged, "partial": partial, "invented": invented, "lost_touched": len(lost & touched),
                                           "lost_after": len(lost & after), "lost_other": len(lost - touched - after),
                                           "got": sorted(got)}
    return rows


def report(title, rows, verbose):
    keys = ["logged", "recovered", "flagged", "partial", "invented", "lost_touched", "lost_after", "lost_other"]
    total = {k: sum(r[k] for r in rows.values()) for k in keys}
    print("%s: recovered %d of %d, %d invented, %d flagged (%d partial; lost: %d held by removed segments, %d after a lost "
          "window, %d other)"
          % (title, total["recovered"], total["logged"], total["invented"], total["flagged"], total["partial"],
             total["lost_touched"], total["lost_after"], total["lost_other"]))
    if verbose:
        print("  %-6s %-3s %-19s " % ("port", "dir", "kind") + " ".join("%12s" % k for k in keys))
        for (port, d), r in sorted(rows.items()):
            if r["recovered"] < r["logged"] or r["flagged"] or r["invented"]:
                print("  %-6d %-3s %-19s " % (port, d, r["kind"]) + " ".join("%12d" % r[k] for k in keys))
    return total


def each_segment(log, exe, full):
    """`--each`: every data segment of the capture as recorded removed alone, one run each;
    what framedump then invents or loses beyond the messages the segment touched (and, with
    context takeover, those after it)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import make_ws_loss_fixture as G
    header, records = G.read_pcap(full)
    streams_ = G.streams(records)
    parsed = {(c["client_port"], d): G.parse_ws(streams_[(c["client_port"], d)][0], c["client_port"], d,
                                                c[d + "_context_takeover"] is not False)
              for c in log["connections"] for d in ("c2s", "s2c")}
    segments = [(port, d, n, a, b) for (port, d), (stream, segs) in sorted(streams_.items())
                for n, a, b in segs if a >= stream.index(b"\r\n\r\n") + 4]
    totals = dict.fromkeys(["recovered", "flagged", "partial", "invented", "lost_touched", "lost_after", "lost_other"], 0)
    worse = []
    with tempfile.TemporaryDirectory() as tmp:
        one = os.path.join(tmp, "one.pcap")
        for port, d, n, a, b in segments:
            with open(one, "wb") as f:
                f.write(header + b"".join(r for k, r in enumerate(records) if k != n))
            msgs = parsed[(port, d)]
            alone = {"removed": [{"conn": port, "dir": d, "after": next((k for k, m in enumerate(msgs) if m["spans"][0][0] >= b), len(msgs))}],
                     "connections": [dict(c, **{x: [dict(m) for m in c[x]] for x in ("c2s", "s2c")}) for c in log["connections"]]}
            for c in alone["connections"]:
                for x in ("c2s", "s2c"):
                    for k, m in enumerate(c[x]):
                        m.pop("lost", None)
                        if (c["client_port"], x) == (port, d) and msgs[k]["spans"][0][0] < b and a < msgs[k]["spans"][-1][2]:
                            m["lost"] = 0
            rows = match(alone, framedump_messages(exe, one))
            for k in totals:
                totals[k] += sum(r[k] for r in rows.values())
            bad = sum(r["invented"] + r["lost_other"] for r in rows.values())
            if bad:
                worse.append("  packet %d (%d %s, offset %d+%d): %d invented, %d other messages lost"
                             % (n + 1, port, d, a, b - a, sum(r["invented"] for r in rows.values()),
                                sum(r["lost_other"] for r in rows.values())))
    print("framedump, each of the %d data segments removed alone: %d runs invent messages or lose others; in all %d "
          "invented, %d other messages lost (%d flagged, %d of them partial; %d lost after a lost window)"
          % (len(segments), len(worse), totals["invented"], totals["lost_other"], totals["flagged"], totals["partial"],
             totals["lost_after"]))
    print("\n".join(worse))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--framedump", default=os.path.join(ROOT, ".build", "debug", "framedump"))
    ap.add_argument("--tshark", default="tshark")
    ap.add_argument("-v", action="store_true", help="per connection and direction (those not recovered whole)")
    ap.add_argument("--each", action="store_true", help="also remove each data segment alone (framedump only; minutes)")
    args = ap.parse_args()
    log = load_log()
    lossy = os.path.join(FIXTURES, "ws_loss.pcap")
    with tempfile.TemporaryDirectory() as tmp:
        full = os.path.join(tmp, "ws_loss_full.pcap")
        rebuild_full(log, full)
        for name, pcap in (("as recorded", full), ("%d segments removed" % len(log["removed"]), lossy)):
            report("framedump, " + name, match(log, framedump_messages(args.framedump, pcap), pcap == lossy), args.v)
            report("tshark, " + name, match(log, tshark_messages(args.tshark, pcap, log["server_port"]), pcap == lossy), args.v)
        if args.each:
            each_segment(log, args.framedump, full)


if __name__ == "__main__":
    sys.exit(main())
