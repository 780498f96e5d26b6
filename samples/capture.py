"""What the sample recorders share: tcpdump writing what crosses `lo` for one port (or for any
BPF filter), started and stopped by its own PID, with immediate mode and a large kernel buffer
so nothing is dropped."""
import os, subprocess, time

TIMEOUT = 10


class Capture:
    """`with Capture(path, port): ...` records the TCP traffic of the block on `port` into `path`;
    `with Capture(path, bpf="udp portrange 8100-8101"): ...` records whatever the BPF filter
    selects instead (a string given as `port` is taken as the filter too)."""

    def __init__(self, out, port=None, bpf=None):
        if bpf is None:
            if isinstance(port, str):
                bpf = port
            elif port is not None:
                bpf = "tcp port %d" % port
            else:
                raise ValueError("Capture needs a port or a BPF filter")
        self.out, self.port, self.bpf, self.log = out, port, bpf, out + ".log"

    def __enter__(self):
        if os.path.exists(self.out):
            os.remove(self.out)
        self.dump = subprocess.Popen(["tcpdump", "-i", "lo", "-U", "--immediate-mode", "-B", "16384", "-Z", "root",
                                      "-s", "0", "-w", self.out, self.bpf], stderr=open(self.log, "w"))
        # tcpdump says "listening on lo" once the capture is really running.
        deadline = time.time() + TIMEOUT
        while "listening" not in open(self.log).read():
            if time.time() > deadline or self.dump.poll() is not None:
                raise SystemExit("tcpdump did not start: " + open(self.log).read())
            time.sleep(0.05)
        time.sleep(1.0)
        return self

    def __exit__(self, *exc):
        time.sleep(1.0)
        self.dump.terminate()
        self.dump.wait(TIMEOUT)
        print(open(self.log).read().strip())
        os.remove(self.log)
        print("wrote", self.out)
        return False


def record_with_server(out, port, server, scenario):
    """Records `out` on `port` while `server` (an argv: the real server, its own process) runs
    and `scenario()` talks to it; the server is stopped by its PID, within `TIMEOUT`."""
    with Capture(out, port):
        proc = subprocess.Popen(server, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)
            scenario()
            time.sleep(0.3)
        finally:
            proc.terminate()
            proc.wait(TIMEOUT)


def follow(pcap, stream=0):
    """Each direction's bytes of one TCP stream as tshark's follow,tcp gives them, the oracle the
    recorders check their frames against: `stream` is tshark's stream index, or its
    "a.b.c.d:port,e.f.g.h:port" endpoints. {"c2s": bytes, "s2c": bytes}."""
    out = subprocess.run(["tshark", "-r", pcap, "-q", "-z", "follow,tcp,raw,%s" % stream],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    sides = {"c2s": b"", "s2c": b""}
    for ln in out.splitlines():
        # (Headers: "Follow: ...", "Filter: ...", "Node 0: ...", the rules of "=".)
        if not ln or ln.startswith("=") or ":" in ln:
            continue
        sides["s2c" if ln.startswith("\t") else "c2s"] += bytes.fromhex(ln.strip())
    return sides
