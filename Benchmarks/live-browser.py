#!/usr/bin/env python3
"""The demo inbox page in a real browser (Debian's chromium, headless, through WebDriver):
how long a window far down a million-message list takes to show.

Usage: live-browser.py STORECTL STORE OUTPUT
Serves STORE with `STORECTL serve --demo` on a free loopback port, opens the page, and measures,
each 25 times around the middle of the list (position 500,000 of a million messages):
- a new subscription whose window starts there (objects mode, 60 rows, sectioned by folder):
  from `subscribe` until its rows are in the DOM;
- the page scrolled there: from the scroll until the page's own rows at that position are in the
  DOM (the page moves its window, the server sends it, the page renders it).
Writes a table of p50 and p99 (ms) to OUTPUT (`feedstore-bench live --storectl PATH` runs this
and adds it to its results)."""

import statistics
import subprocess
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

SUBSCRIBE = """
const [offset, done] = arguments;
const start = performance.now();
const subscription = inbox.client.subscribe(
  { entity: "Message", index: "byFolderDate", sectionBy: 1, offset, limit: 60 },
  (s, change) => {
    if (change.kind !== "batch") return;
    const box = document.createElement("div");
    box.innerHTML = s.rows.map((r) => `<div>#${r.id} ${r.title}</div>`).join("");
    document.body.appendChild(box);
    requestAnimationFrame(() => {
      const elapsed = performance.now() - start;
      box.remove();
      s.unsubscribe();
      done([elapsed, s.count]);
    });
  });
"""

SCROLL = """
const [position, done] = arguments;
const start = performance.now();
inbox.scrollTo(position);
function check() {
  if (inbox.rows().some((r) => r.position === position)) done(performance.now() - start);
  else requestAnimationFrame(check);
}
requestAnimationFrame(check);
"""


def quantile(samples, q):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def main():
    storectl, store, results = sys.argv[1:4]
    total = int(subprocess.run([storectl, "count", store, "--entity", "Message"], capture_output=True, text=True, check=True).stdout.strip().replace(",", ""))
    middle = total // 2
    server = subprocess.Popen([storectl, "serve", store, "--demo", "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        port = int(line.rsplit(":", 1)[1].split("/")[0])
        options = Options()
        options.binary_location = "/usr/bin/chromium"
        for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1100,760"]:
            options.add_argument(argument)
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        driver.set_script_timeout(60)
        try:
            driver.get(f"http://127.0.0.1:{port}/")
            deadline = time.monotonic() + 120
            while not driver.execute_script("return window.inbox && inbox.rows().length > 0"):
                if time.monotonic() > deadline:
                    raise TimeoutError("the page showed no rows within 120 s")
                time.sleep(0.05)
            subscribed, scrolled = [], []
            for k in range(25):
                elapsed, count = driver.execute_async_script(SUBSCRIBE, middle + 997 * k)
                if count != 60:
                    raise RuntimeError(f"the window at {middle + 997 * k} held {count} rows")
                subscribed.append(elapsed)
                time.sleep(0.1)
            for k in range(25):
                # Back to the top between jumps, so that each jump moves the window.
                driver.execute_script("inbox.scrollTo(0)")
                time.sleep(0.3)
                scrolled.append(driver.execute_async_script(SCROLL, middle + 1_013 * k))
        finally:
            driver.quit()
    finally:
        server.terminate()
        server.wait()
    lines = [
        "",
        f"The demo page (`storectl serve --demo`) in headless chromium, {total:,} messages: a window of 60 rows "
        f"around position {middle:,}, 25 times each (ms)",
        "",
        "| what | p50 | p99 | target |",
        "|---|---:|---:|---|",
        f"| a new subscription there: `subscribe` → its rows in the DOM | {statistics.median(subscribed):.1f} | {quantile(subscribed, 0.99):.1f} "
        f"| ≤ 50 ms: **{'met' if quantile(subscribed, 0.99) <= 50 else 'not met'}** |",
        f"| the page scrolled there: scroll → the page's rows there in the DOM | {statistics.median(scrolled):.1f} | {quantile(scrolled, 0.99):.1f} | – |",
    ]
    with open(results, "w") as file:
        file.write("\n".join(lines) + "\n")
    print("\n".join(lines))


main()
