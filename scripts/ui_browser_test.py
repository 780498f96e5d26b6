#!/usr/bin/env python3
"""Drive `framedump ui` in a real browser (Debian's chromium through chromedriver and
selenium) on the shipped samples, and check the page against framedump's own NDJSON:

  * the connection and message counts the page shows are the NDJSON's;
  * a display filter narrows the list to the messages `framedump -Y` selects, and a bad one
    shows its error with a caret;
  * clicking a field highlights exactly its byte range (on game.pcap the highlighted bytes
    are the string the NDJSON gives), and clicking a byte selects the field over it;
  * the sequence diagram has one arrow per message of the connection;
  * the plots show the known 20/50 ms latencies of game-latency.pcap;
  * the diff view shows the one known change of scenario-changed.pcap (Line 2 -> 3);
  * a capture of 1,200 connections: the connection pane shows the total and asks for the
    pages it scrolls to;
  * a page of another origin cannot open the live WebSocket;
  * the console holds no script error and nothing the Content-Security-Policy refused;
  * live on lo (as root): messages sent by a client on loopback appear in the page, and the
    server runs as nobody.

Usage (from the repository root; the tests run it):
    python3 scripts/ui_browser_test.py --framedump .build/debug/framedump --screenshots DIR

Every server it starts is stopped by its PID, and every wait is bounded.
"""
import argparse, json, os, signal, socket, struct, subprocess, sys, threading, time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.common.exceptions import StaleElementReferenceException

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT = 60


def sample(name):
    # Relative to the repository (the servers run there): the page and the screenshots show
    # the path as given.
    return os.path.join("samples", name)


class Server:
    """`framedump ui ...` on a free port; the URL it prints."""

    def __init__(self, binary, args):
        self.proc = subprocess.Popen([binary, "ui", "--port", "0", *args], cwd=ROOT,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.url = None
        line = self.proc.stdout.readline()  # framedump prints the line unbuffered
        if "serving " not in line:
            self.stop()
            raise SystemExit(f"framedump ui {' '.join(args)} did not start: {line!r} {self.proc.stderr.read()!r}")
        self.url = line.split("serving ", 1)[1].split()[0]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def ndjson(binary, args):
    out = subprocess.run([binary, *args, "-T", "json"], cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT)
    lines = [json.loads(l) for l in out.stdout.splitlines() if l.strip()]
    messages = [l for l in lines if "type" not in l]
    conns = {l["conn"] for l in lines if "conn" in l}
    return messages, conns


def wait(driver, what, check, timeout=TIMEOUT, show=None):
    end = time.time() + timeout
    last = None
    while time.time() < end:
        try:
            last = check()
            if last:
                return last
            if show:
                last = show()
        except Exception as e:  # the page is still rendering
            last = e
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def ready(driver):
    wait(driver, "the page to be ready", lambda: driver.execute_script("return window.framedump && window.framedump.ready"))


def texts(driver, css):
    """The text of each element `css` finds, read again if the page redrew one meanwhile
    (live rows are redrawn as messages come: an element read as it is replaced is stale)."""
    for _ in range(50):
        try:
            return [e.text for e in driver.find_elements(By.CSS_SELECTOR, css)]
        except StaleElementReferenceException:
            time.sleep(0.1)
    raise AssertionError(f"the elements of {css} were redrawn on every read for 5 s")


def list_count(driver):
    return driver.find_element(By.ID, "list-count").text


def expect(cond, text):
    if not cond:
        raise AssertionError(text)
    print("  ok:", text)


def check_counts(driver, binary, name, extra):
    messages, conns = ndjson(binary, ["-r", sample(name), *extra])
    ready(driver)
    rows = driver.find_elements(By.CSS_SELECTOR, "#connections tbody tr[data-conn]:not([data-conn=''])")
    total = driver.find_element(By.ID, "connection-count").text
    expect(len(rows) == len(conns) and total == f"({len(conns)})",
           f"{name}: {len(rows)} connections shown of {total}, NDJSON has {len(conns)}")
    text = wait(driver, "the message count", lambda: list_count(driver) if list_count(driver) else None)
    shown = int(text.split()[0].replace(",", ""))
    expect(shown == len(messages), f"{name}: {shown} messages shown, NDJSON has {len(messages)}")
    status = driver.execute_script("return window.framedump.status.messages")
    expect(status == len(messages), f"{name}: the server indexed {status} messages")
    return messages


def select_message(driver, n):
    driver.execute_script("document.getElementById('list').focus()")
    # The list re-renders as pages arrive: find the row again until a click lands.
    def click():
        driver.find_element(By.CSS_SELECTOR, f"#list-rows .row[data-n='{n}']").click()
        return True
    wait(driver, f"row {n}", click)
    wait(driver, f"message {n}'s tree", lambda: driver.execute_script(
        f"return window.framedump.message && window.framedump.message.n === {n}"))


def field_bytes_linked(driver, name):
    """Every field of the selected message: clicking it highlights exactly its range; a byte in
    the middle of a range selects the innermost field over it."""
    fields = driver.find_elements(By.CSS_SELECTOR, "#tree .field")
    expect(len(fields) > 0, f"{name}: the tree has {len(fields)} fields")
    for f in fields:
        off, width = int(f.get_attribute("data-offset")), int(f.get_attribute("data-width"))
        driver.execute_script("arguments[0].click()", f)
        lit = [int(b.get_attribute("data-i")) for b in driver.find_elements(By.CSS_SELECTOR, "#hex-linked .b.hl")]
        if lit != list(range(off, off + width)):
            raise AssertionError(f"{name}: field [{off}+{width}] {f.text!r} lit bytes {lit}")
    print(f"  ok: {name}: each of {len(fields)} fields lights exactly its bytes")


def check_game(driver, binary, shots):
    messages = check_counts(driver, binary, "game.pcap", [])
    select_message(driver, 0)
    fields = driver.find_elements(By.CSS_SELECTOR, "#tree .field")
    last = fields[-1]
    driver.execute_script("arguments[0].click()", last)
    lit = driver.find_elements(By.CSS_SELECTOR, "#hex-linked .b.hl")
    text = bytes(int(b.text, 16) for b in lit).decode()
    expect(text == messages[0]["fields"]["message"],
           f"game.pcap: the bytes lit by '{last.text}' read {text!r}, NDJSON says {messages[0]['fields']['message']!r}")
    field_bytes_linked(driver, "game.pcap")
    # A byte selects its field: byte 6 is SceneId's (u8 at [6+1]).
    driver.find_element(By.CSS_SELECTOR, "#hex-linked .b[data-i='6']").click()
    sel = driver.find_element(By.CSS_SELECTOR, "#tree .field.sel")
    expect(sel.get_attribute("data-offset") == "6" and "SceneId" in sel.text, f"game.pcap: byte 6 selects '{sel.text}'")
    driver.find_element(By.CSS_SELECTOR, "#hex-linked .b[data-i='14']").click()
    sel = driver.find_element(By.CSS_SELECTOR, "#tree .field.sel")
    expect(sel.text.endswith('"hello from 1"'), f"game.pcap: byte 14 selects '{sel.text}'")
    if shots:
        driver.save_screenshot(os.path.join(shots, "messages.png"))

    # The filter, against framedump -Y.
    want, _ = ndjson(binary, ["-r", sample("game.pcap"), "-Y", "game.Res == 1"])
    box = driver.find_element(By.ID, "filter")
    box.clear()
    box.send_keys("game.Res == 1\n")
    wait(driver, "the filtered count", lambda: list_count(driver).startswith(f"{len(want)} message") and "match" in list_count(driver),
         timeout=20, show=lambda: list_count(driver))
    shown = [int(r.get_attribute("data-n")) for r in driver.find_elements(By.CSS_SELECTOR, "#list-rows .row[data-n]")]
    names = {r.find_element(By.CSS_SELECTOR, ".name").text for r in driver.find_elements(By.CSS_SELECTOR, "#list-rows .row[data-n]")}
    expect(len(shown) == len(want) and names == {m["message"] for m in want},
           f"game.pcap: the filter leaves {len(shown)} rows, all {names}, as framedump -Y does")
    box.clear()
    box.send_keys('game.Res == "x"\n')
    err = wait(driver, "the filter's error", lambda: driver.find_element(By.ID, "filter-error").text if driver.find_element(By.ID, "filter-error").is_displayed() else None)
    lines = err.splitlines()
    expect(len(lines) >= 2 and lines[1].index("^") == 12, f"game.pcap: a bad filter is refused with a caret under column 13: {lines[:2]}")
    kept = [int(r.get_attribute("data-n")) for r in driver.find_elements(By.CSS_SELECTOR, "#list-rows .row[data-n]")]
    expect(kept == shown and list_count(driver).startswith(f"{len(want)} message"),
           f"game.pcap: the refused filter leaves the list the last one made ({len(kept)} rows, {list_count(driver)!r})")
    driver.find_element(By.ID, "filter-clear").click()
    wait(driver, "the list back", lambda: list_count(driver).startswith(f"{len(messages)} message"))

    # The sequence diagram of each connection: an arrow a message.
    conns = driver.execute_script("return [...window.framedump.connPages.values()].flat()")
    for c in conns:
        click_connection(driver, c["index"])
        driver.find_element(By.CSS_SELECTOR, "nav button[data-view='sequence']").click()
        n = sum(1 for m in messages if m["conn"] == c["conn"])
        arrows = wait(driver, "the arrows", lambda: len(driver.find_elements(By.CSS_SELECTOR, "#sequence g.arrow")) == n and n)
        expect(arrows == n, f"game.pcap: connection {c['index']} has {n} messages and {arrows} arrows")
        paired = driver.find_elements(By.CSS_SELECTOR, "#sequence g.arrow .latency")
        want_pairs = sum(1 for m in messages if m["conn"] == c["conn"] and m["message"] == "SC_20001")
        expect(len(paired) == want_pairs, f"game.pcap: connection {c['index']}: {len(paired)} responses paired with their request (pair_by id)")
        driver.find_element(By.CSS_SELECTOR, "nav button[data-view='messages']").click()
    if shots:
        driver.find_element(By.CSS_SELECTOR, "nav button[data-view='sequence']").click()
        time.sleep(0.5)
        driver.save_screenshot(os.path.join(shots, "sequence.png"))


def click_connection(driver, index):
    """Clicks a connection's row, found again if the list redrew it meanwhile."""
    def click():
        driver.find_element(By.CSS_SELECTOR, f"#connections tbody tr[data-conn='{index}']").click()
        return driver.execute_script("return window.framedump.conn") == index
    wait(driver, f"connection {index} selected", click)


def check_latency(driver, binary, shots):
    check_counts(driver, binary, "game-latency.pcap", [])
    driver.find_element(By.CSS_SELECTOR, "nav button[data-view='plots']").click()
    stats = wait(driver, "the latency plot", lambda: driver.find_element(By.ID, "latency-stats").text or None)
    bars = driver.find_elements(By.CSS_SELECTOR, "#latency rect")
    median = float(stats.split("median ")[1].split(" ms")[0])
    expect(len(bars) == 30 and 15 <= median <= 60, f"game-latency.pcap: latency histogram of 30 bins; {stats}")
    lines = driver.find_elements(By.CSS_SELECTOR, "#rate polyline")
    expect(len(lines) >= 2, f"game-latency.pcap: {len(lines)} rate lines, one a message name")
    if shots:
        driver.save_screenshot(os.path.join(shots, "plots.png"))


def check_diff(driver, binary, shots):
    # A click made while the page is still starting up can be lost (seen once on a loaded
    # machine): the view is asked for again, up to three times, before the test gives up.
    rows = None
    for attempt in range(3):
        driver.find_element(By.CSS_SELECTOR, "nav button[data-view='diff']").click()
        try:
            rows = wait(driver, "the diff", lambda: driver.find_elements(By.CSS_SELECTOR, "#diff tbody tr"),
                        timeout=TIMEOUT if attempt == 2 else 20)
            break
        except AssertionError:
            if attempt == 2:
                raise
    changed = driver.find_elements(By.CSS_SELECTOR, "#diff td.changed")
    old, new = changed[0].text, changed[1].text
    expect(len(rows) == 1 and "Line = 2" in old and "Line = 3" in new,
           f"scenario-changed.pcap: one difference, Line 2 -> 3 highlighted ({old!r} | {new!r})")
    if shots:
        driver.save_screenshot(os.path.join(shots, "diff.png"))


def check_diff_long_value(driver, binary, shots):
    """A changed value thousands of characters long: old and new stay side by side, both in the
    window (the new column was pushed off screen by a long old value)."""
    driver.find_element(By.CSS_SELECTOR, "nav button[data-view='diff']").click()
    wait(driver, "the diff", lambda: driver.find_elements(By.CSS_SELECTOR, "#diff td.changed"))
    boxes = driver.execute_script("""
        const w = document.documentElement.clientWidth;
        return [...document.querySelectorAll('#diff td.changed')].map((td) => {
          const r = td.getBoundingClientRect(); return [r.left, r.right, w]; });""")
    expect(len(boxes) == 2 and all(0 <= left and right <= width + 1 for left, right, width in boxes) and boxes[0][1] <= boxes[1][0] + 1,
           f"a 3,000-character value: old and new side by side within the window ({boxes})")


def long_value_export(binary):
    """scenario-a.pcap's --diffable export with its first `message` value 3,000 characters long
    (a temporary file, removed at exit)."""
    import atexit, tempfile
    out = subprocess.run([binary, "-r", sample("scenario-a.pcap"), "--diffable"], cwd=ROOT, capture_output=True, text=True, timeout=60).stdout
    lines, done = [], False
    for line in out.splitlines():
        o = json.loads(line)
        if not done and isinstance(o.get("fields"), dict) and "message" in o["fields"]:
            o["fields"]["message"] = "x" * 3000
            line, done = json.dumps(o, ensure_ascii=False, separators=(",", ":")), True
        lines.append(line)
    f = tempfile.NamedTemporaryFile("w", suffix=".ndjson", delete=False)
    f.write("\n".join(lines) + "\n")
    f.close()
    atexit.register(os.unlink, f.name)
    return f.name


def check_many_connections(driver, binary):
    """1,200 connections (scripts/gen_many_connections.py, in a temporary folder): the pane says
    the total, draws a window of rows, and asks for the pages it scrolls to; the last
    connection, once scrolled to, narrows the list to its two messages."""
    import shutil, tempfile
    d = tempfile.mkdtemp(prefix="framedump-browser-")
    try:
        capture = os.path.join(d, "many.pcap")
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts/gen_many_connections.py"), capture, "1200"],
                       check=True, capture_output=True, timeout=TIMEOUT)
        server = Server(binary, ["-r", capture])
        try:
            driver.get(server.url)
            ready(driver)
            total = driver.find_element(By.ID, "connection-count").text
            rows = len(driver.find_elements(By.CSS_SELECTOR, "#connections tbody tr[data-conn]:not([data-conn=''])"))
            expect(total == "(1,200)" and 0 < rows < 1200, f"many connections: the pane says {total} and draws {rows} rows")
            pages = driver.execute_script("return [...window.framedump.connPages.keys()]")
            expect(pages == [0], f"many connections: it asked for the first page only ({pages})")
            driver.execute_script("const b = document.querySelector('#connections-pane .scroll'); b.scrollTop = b.scrollHeight")
            wait(driver, "the last connection's row", lambda: driver.find_elements(By.CSS_SELECTOR, "#connections tbody tr[data-conn='1199']"))
            pages = sorted(driver.execute_script("return [...window.framedump.connPages.keys()]"))
            expect(5 in pages and len(pages) < 6, f"many connections: scrolled to the end, it asked for the last page ({pages})")
            click_connection(driver, 1199)
            wait(driver, "the connection's messages", lambda: list_count(driver).startswith("2 messages"))
            expect(True, f"many connections: the last one's messages: {list_count(driver)!r}")
            console_clean(driver)
        finally:
            server.stop()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def check_other_origin(driver, binary):
    """A page of another origin (another port on 127.0.0.1, as any site the user visits could
    be) opens the live WebSocket, which no CORS rule stops: the server refuses it."""
    import http.server
    ui = Server(binary, ["-r", sample("game.pcap")])
    ws_target = ui.url.rstrip("/").replace("http://", "ws://")
    page = f"""<!doctype html><title>elsewhere</title><script>
window.result = {{ws: "pending"}};
const ws = new WebSocket("{ws_target}/api/live");
ws.onopen = () => {{ window.result.ws = "open"; }};
ws.onerror = () => {{ if (window.result.ws === "pending") window.result.ws = "refused"; }};
</script>""".encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *a):
            pass

    other = http.server.HTTPServer(("127.0.0.1", free_port()), Handler)
    t = threading.Thread(target=other.serve_forever, daemon=True)
    t.start()
    try:
        driver.get(f"http://127.0.0.1:{other.server_address[1]}/")
        result = wait(driver, "the other page's attempt", lambda: (lambda r: r if r and r["ws"] != "pending" else None)(
            driver.execute_script("return window.result")))
        expect(result["ws"] == "refused", f"another origin's page cannot open the live WebSocket ({result['ws']})")
    finally:
        other.shutdown()
        ui.stop()
        driver.get_log("browser")  # that page's refusals are its own, not the page's


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_live(driver, binary, shots):
    """A game client and server on loopback while `framedump ui -i lo` captures them."""
    port = free_port()
    before = temporary_folders()
    server = Server(binary, ["-i", "lo", "--decode-as", f"{port}=game", "tcp", "port", str(port)])
    try:
        driver.get(server.url)
        wait(driver, "the live page", lambda: driver.execute_script("return window.framedump.status && window.framedump.status.live"))
        if os.geteuid() == 0:
            # Root opens the interface; the decoders, filters and server then run as nobody.
            with open(f"/proc/{server.proc.pid}/status") as f:
                ids = {l.split()[0]: l.split()[1:] for l in f if l.split() and l.split()[0] in ("Uid:", "Gid:")}
            expect(ids == {"Uid:": ["65534"] * 4, "Gid:": ["65534"] * 4}, f"live: the server runs as nobody once the interface is open ({ids})")
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(1)
        listener.settimeout(10)
        def serve():
            conn, _ = listener.accept()
            conn.settimeout(30)
            while conn.recv(4096):
                pass
            conn.close()

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        client = socket.create_connection(("127.0.0.1", port), timeout=10)

        def send(first, count):
            for i in range(first, first + count):
                client.sendall(struct.pack(">IHQ", 14, 10002, 1_000_000 + i))
                time.sleep(0.05)

        send(0, 20)
        wait(driver, "20 live messages", lambda: driver.execute_script("return window.framedump.status.messages") == 20)
        wait(driver, "the rows", lambda: len(driver.find_elements(By.CSS_SELECTOR, "#list-rows .row[data-n]")) == 20)
        names = set(texts(driver, "#list-rows .row[data-n] .name"))
        expect(names == {"Cs_10002"}, "live: the 20 heartbeats sent on lo stream into the page as Cs_10002")
        counts = wait(driver, "the connection's count", lambda: [
            r.text for r in driver.find_elements(By.CSS_SELECTOR, "#connections tbody tr[data-conn='0'] td") if r.text == "20 / 0"])
        expect(counts == ["20 / 0"], "live: the connection's row counts the 20 messages")
        # A filter during the capture: what came before is read again from the file being
        # written, what comes after is matched as it comes; none twice, none missed.
        # (Found and typed into at once, again if the page drew the box anew meanwhile.)
        def set_filter():
            box = driver.find_element(By.ID, "filter")
            box.clear()
            box.send_keys("game.ClientTime >= 1000010\n")
            return True
        wait(driver, "the filter box", set_filter)
        wait(driver, "10 matches", lambda: list_count(driver).startswith("10 messages match"), timeout=20, show=lambda: list_count(driver))
        send(20, 10)
        wait(driver, "20 matches", lambda: list_count(driver).startswith("20 messages match"), timeout=20, show=lambda: list_count(driver))
        want = [f"ClientTime: {1_000_000 + i}" for i in range(10, 30)]
        times = texts(driver, "#list-rows .row[data-n] .sum")
        expect(times == want,
               "live: a filter set mid-capture matches the 10 earlier messages from the file and the 10 later ones as they come")
        client.close()
        t.join(10)
        listener.close()
        if shots:
            driver.save_screenshot(os.path.join(shots, "live.png"))
    finally:
        server.stop()
    left = temporary_folders() - before
    expect(not left, f"live: the temporary capture is removed when the server stops (left: {sorted(left)})")


def console_clean(driver):
    refused = [e["message"] for e in driver.get_log("browser")
               if "Content Security Policy" in e["message"] or "Uncaught" in e["message"]]
    expect(not refused, "the console: " + ("; ".join(refused) or "no script error, nothing refused"))


def temporary_folders():
    tmp = os.environ.get("TMPDIR") or "/tmp"
    return {d for d in os.listdir(tmp) if d.startswith("framedump-ui-") and os.path.isdir(os.path.join(tmp, d))}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--framedump", required=True)
    ap.add_argument("--screenshots", help="write a PNG of each view here")
    ap.add_argument("--no-live", action="store_true", help="skip the live capture (it needs root)")
    a = ap.parse_args()
    binary = os.path.abspath(a.framedump)
    if a.screenshots:
        os.makedirs(a.screenshots, exist_ok=True)

    opts = Options()
    for o in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1500,950"):
        opts.add_argument(o)
    chromium = next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if os.path.exists(p)), None)
    if chromium:
        opts.binary_location = chromium
    # The browser's console: a script error, or anything the server's Content-Security-Policy
    # refused (an inline style, a script from elsewhere), fails the sample it came with.
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driverpath = next((p for p in ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver") if os.path.exists(p)), None)
    driver = webdriver.Chrome(options=opts, service=Service(driverpath) if driverpath else None)
    driver.set_page_load_timeout(2 * TIMEOUT)
    failures = 0
    runs = [
        ("game.pcap", [], check_game),
        ("game-latency.pcap", [], check_latency),
        ("scenario-a.pcap", ["--diff", sample("scenario-changed.pcap"), "--ignore", "Cs_10002.ClientTime"], check_diff),
        ("scenario-a.pcap", ["--diff", long_value_export(binary), "--ignore", "Cs_10002.ClientTime"], check_diff_long_value),
    ]
    # Every other sample: the counts, and every field of its first message linked to its bytes.
    for name, extra in [("svc.pcap", []), ("bridge.pcap", []), ("websocket-deflate.pcap", []), ("im.pcap", []),
                        ("zgame.pcap", []), ("kcp.pcap", []), ("udp.pcap", []),
                        ("tls13.pcap", ["--tls-keylog", sample("tls13.keys")]),
                        ("tls12.pcap", ["--tls-keylog", sample("tls12.keys")]),
                        ("wss.pcap", ["--tls-keylog", sample("wss.keys")]),
                        ("scenario-b.pcap", []), ("scenario-edited.pcap", [])]:
        def generic(driver, binary, shots, name=name, extra=extra):
            check_counts(driver, binary, name, extra)
            select_message(driver, 0)
            field_bytes_linked(driver, name)
        runs.append((name, extra, generic))
    try:
        for name, extra, check in runs:
            print(f"{name}:")
            server = Server(binary, ["-r", sample(name), *extra])
            try:
                driver.get(server.url)
                check(driver, binary, a.screenshots)
                console_clean(driver)
            except Exception as e:  # an assertion, or the page not doing what is asked
                failures += 1
                print("  FAILED:", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
            finally:
                server.stop()
        print("many connections:")
        try:
            check_many_connections(driver, binary)
        except Exception as e:
            failures += 1
            print("  FAILED:", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        print("a page of another origin:")
        try:
            check_other_origin(driver, binary)
        except Exception as e:
            failures += 1
            print("  FAILED:", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        if not a.no_live:
            print("live on lo:")
            try:
                check_live(driver, binary, a.screenshots)
                console_clean(driver)
            except Exception as e:
                failures += 1
                print("  FAILED:", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    finally:
        driver.quit()
    print(f"{len(runs) + 2 + (0 if a.no_live else 1) - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
