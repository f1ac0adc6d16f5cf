"""Types into the demo inbox page's search box in a real browser (Debian's chromium, headless,
through chromedriver and selenium) and reports what its DOM shows.

Usage: browser_search.py URL TEXT STATE
Waits for the page to show rows, types TEXT into the search box, waits until the list shows the
search's rows, and prints them as JSON ({"rows": [...], "total": "…"}: the rows in view with
their positions and ids). Then prints `searched` and waits for the file STATE.go; STATE.json
holds {"first": id}: the id the filtered list must show first once the test's writer has saved a
message that newly matches. Prints the DOM again once its first row is that id. A page that never
shows it fails with what it showed last.
"""

import json
import os
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service


def wait_for(driver, check, what, limit=120):
    """Waits until `check()` returns (True, value); the limit guards against a hang."""
    deadline = time.monotonic() + limit
    last = None
    while True:
        last = check()
        if last and last[0]:
            return last[1]
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {limit} s; the page shows {json.dumps(last)[:1500]}")
        time.sleep(0.05)


def shown(driver):
    """What the page shows, drawn and read in one script, so that its parts are of one state."""
    return driver.execute_script("""
        inbox.render();
        return {rows: inbox.rows(), total: document.getElementById("total").textContent,
                searched: inbox.searched(), placeholders: inbox.placeholders()};""")


def main():
    url, text, state = sys.argv[1], sys.argv[2], sys.argv[3]
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1100,760"]:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get(url)
        wait_for(driver, lambda: (driver.execute_script("return !!window.inbox && inbox.rows().length > 0"), None), "the page shows rows")
        # Typed key by key, as a user types: the page searches once typing pauses.
        box = driver.find_element("id", "search")
        for character in text:
            box.send_keys(character)
        def searched():
            view = shown(driver)
            ready = view["searched"] == text and len(view["rows"]) > 0 and view["total"].endswith(" found") and view["placeholders"] == 0
            return (ready, view)
        print(json.dumps(wait_for(driver, searched, "the search's rows")), flush=True)
        print("searched", flush=True)
        deadline = time.monotonic() + 300
        while not os.path.exists(state + ".go"):
            if time.monotonic() > deadline:
                raise TimeoutError("the writer never finished")
            time.sleep(0.05)
        with open(state + ".json") as file:
            first = json.load(file)["first"]
        def entered():
            view = shown(driver)
            rows = sorted(view["rows"], key=lambda r: r["position"])
            return (bool(rows) and rows[0]["id"] == first and rows[0]["position"] == 0, view)
        print(json.dumps(wait_for(driver, entered, "the new match at the top")), flush=True)
    finally:
        driver.quit()


main()
