#!/usr/bin/env python3
"""How fast `framedump ui` answers on a large capture, and in how much memory:

  first page   from starting the server to the first 100 rows of the message list
               (what the page asks for first), over HTTP;
  indexed      until the whole capture is read;
  filter       a display filter over every message, asked for the first time (so decoded
               anew), and asked again (answered from what the first time kept);
  in browser   (when selenium and chromium are there) from opening the page to its first
               row drawn;
  peak RSS     of the server, after all of that.

Usage (repository root; the capture is made by bench/gengame.py when missing):
    python3 bench/ui_bench.py [CAPTURE] [--runs N]
"""
import argparse, json, os, signal, subprocess, sys, time, urllib.parse, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, ".build/release/framedump")


def get(url):
    with urllib.request.urlopen(url, timeout=120) as r:
        return json.loads(r.read())


def start(capture):
    p = subprocess.Popen([BIN, "ui", "-r", capture, "--port", "0"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    return p, line.split("serving ", 1)[1].split()[0]


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def browser_first_row(url):
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
    except ImportError:
        return None
    o = Options()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        o.add_argument(a)
    if os.path.exists("/usr/bin/chromium"):
        o.binary_location = "/usr/bin/chromium"
    driver = "/usr/bin/chromedriver"
    d = webdriver.Chrome(options=o, service=Service(driver) if os.path.exists(driver) else None)
    try:
        t = time.time()
        d.get(url)
        while not d.find_elements(By.CSS_SELECTOR, "#list-rows .row[data-n]"):
            time.sleep(0.01)
        return time.time() - t
    finally:
        d.quit()


def run_once(capture, flt):
    t0 = time.time()
    p, url = start(capture)
    try:
        while True:
            r = get(url + "api/messages?from=0&count=100")
            if len(r["rows"]) == 100:
                break
            time.sleep(0.01)
        first = time.time() - t0
        while get(url + "api/status")["state"] != "done":
            time.sleep(0.01)
        indexed = time.time() - t0
        q = url + "api/messages?" + urllib.parse.urlencode({"filter": flt, "count": 100}, quote_via=urllib.parse.quote)
        t = time.time()
        total = get(q)["total"]
        filtered = time.time() - t
        t = time.time()
        get(q)
        again = time.time() - t
        browser = browser_first_row(url)
        status = get(url + "api/status")
        return dict(first=first, indexed=indexed, filter=filtered, again=again, browser=browser,
                    messages=status["messages"], matched=total, rss=peak_rss_mib(p.pid))
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(10)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("capture", nargs="?", default="bench/out/game-1000000.pcap")
    ap.add_argument("--filter", default="game.Res == 1")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    if not os.path.exists(os.path.join(ROOT, a.capture)):
        os.makedirs(os.path.dirname(os.path.join(ROOT, a.capture)), exist_ok=True)
        subprocess.run([sys.executable, "bench/gengame.py", a.capture, "1000000"], cwd=ROOT, check=True)
    subprocess.run(["swift", "build", "-c", "release"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    runs = [run_once(a.capture, a.filter) for _ in range(a.runs)]
    med = lambda k: sorted(r[k] for r in runs)[len(runs) // 2] if runs[0][k] is not None else None
    r = runs[0]
    print(f"{a.capture}: {r['messages']:,} messages; filter {a.filter!r} matches {r['matched']:,}; median of {a.runs} runs")
    print(f"  first page (100 rows over HTTP)   {med('first'):.3f} s")
    print(f"  whole capture indexed             {med('indexed'):.3f} s")
    print(f"  filter over every message         {med('filter'):.3f} s (asked again: {med('again'):.3f} s)")
    if med("browser") is not None:
        print(f"  page opened to first row drawn    {med('browser'):.3f} s")
    print(f"  server peak RSS                   {max(x['rss'] for x in runs):.1f} MiB")


if __name__ == "__main__":
    main()
