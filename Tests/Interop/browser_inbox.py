"""Loads the demo inbox page in a real browser (Debian's chromium, headless, driven through
WebDriver by chromedriver and selenium) and reports what its DOM shows.

Usage: browser_inbox.py URL SCROLL-POSITION SCREENSHOT
Prints `ready` once the page shows rows, then waits for the file SCREENSHOT.go (the writer has
finished; SCREENSHOT.json holds the header's texts, the store's message count and, for the
positions the checks look at, the ids there, as {"ids": {position: id}}), and for the page to
show them: the rows at the top, then, scrolled to SCROLL-POSITION, the rows there, then, scrolled
to the end, the last row. Prints what the DOM showed each time as JSON ({"top": {...},
"scrolled": {...}, "end": {...}}: rows with their senders and dates, the sticky header, the
scroll area's height, the placeholders drawn) and saves a screenshot of each at SCREENSHOT,
with -scrolled and -end before .png. A page that never shows the store fails with what it
showed last.
"""

import json
import os
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service


def wait_for(driver, script, what, *args, limit=120):
    """Waits until `script` returns something true; the limit guards against a hang."""
    deadline = time.monotonic() + limit
    while True:
        value = driver.execute_script(script, *args)
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {limit} s")
        time.sleep(0.05)


def shown(driver):
    return {
        "rows": driver.execute_script("return inbox.rows()"),
        "sticky": driver.execute_script("return inbox.sticky()"),
        "scrollHeight": driver.execute_script("return inbox.scrollHeight()"),
        "placeholders": driver.execute_script("return inbox.placeholders()"),
        "total": driver.find_element("id", "total").text,
        "unread": driver.find_element("id", "unread").text,
        "folders": driver.find_element("id", "folders").text,
    }


def main():
    url, position, screenshot = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1100,760"]:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get(url)
        wait_for(driver, "return window.inbox && inbox.rows().length > 0", "the page shows rows")
        print("ready", flush=True)
        deadline = time.monotonic() + 300
        while not os.path.exists(screenshot + ".go"):
            if time.monotonic() > deadline:
                raise TimeoutError("the writer never finished")
            time.sleep(0.05)
        with open(screenshot + ".json") as file:
            store = json.load(file)

        ids = {int(position): id for position, id in store["ids"].items()}

        def shows_store(view):
            rows = view["rows"]
            return (len(rows) >= 20 and all(ids.get(r["position"], r["id"]) == r["id"] for r in rows)
                    and not any(r["sender"].startswith("contact ") for r in rows)
                    and all(view[k] == store[k] for k in ["total", "unread"]))

        def settle(what, extra=lambda view: True):
            deadline = time.monotonic() + 120
            while True:
                driver.execute_script("inbox.render()")
                view = shown(driver)
                if shows_store(view) and extra(view):
                    return view
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{what}: the page still shows {json.dumps(view)[:1500]}")
                time.sleep(0.05)

        top = settle("the top of the list")
        driver.save_screenshot(screenshot)
        # The jump draws at once: rows the window has not brought yet are placeholders.
        jumped = driver.execute_script("inbox.scrollTo(arguments[0]); return inbox.placeholders()", position)
        scrolled = settle("the scrolled window", lambda view: any(r["position"] == position for r in view["rows"]))
        driver.save_screenshot(screenshot.removesuffix(".png") + "-scrolled.png")
        last = store["count"] - 1
        driver.execute_script("inbox.scrollTo(arguments[0])", last)
        end = settle("the end of the list", lambda view: any(r["position"] == last for r in view["rows"]))
        driver.save_screenshot(screenshot.removesuffix(".png") + "-end.png")
        print(json.dumps({"top": top, "scrolled": scrolled, "end": end, "placeholdersAfterJump": jumped}), flush=True)
    finally:
        driver.quit()


main()
