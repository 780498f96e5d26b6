"""What the sample recorders share: tcpdump writing what crosses `lo` for one port, started and
stopped by its own PID, with immediate mode and a large kernel buffer so nothing is dropped."""
import os, subprocess, time

TIMEOUT = 10


class Capture:
    """`with Capture(path, port): ...` records the traffic of the block into `path`."""

    def __init__(self, out, port):
        self.out, self.port, self.log = out, port, out + ".log"

    def __enter__(self):
        if os.path.exists(self.out):
            os.remove(self.out)
        self.dump = subprocess.Popen(["tcpdump", "-i", "lo", "-U", "--immediate-mode", "-B", "16384", "-Z", "root",
                                      "-s", "0", "-w", self.out, "tcp port %d" % self.port], stderr=open(self.log, "w"))
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
