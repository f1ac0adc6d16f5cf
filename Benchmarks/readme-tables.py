#!/usr/bin/env python3
"""Copies a results file of Benchmarks/results into the README, between the markers
<!-- results:NAME --> and <!-- /results:NAME -->, so the README shows the tables of the last run
exactly as the benchmark wrote them."""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
for name in sys.argv[1:]:
    results = (root / "Benchmarks" / "results" / f"{name}.md").read_text().strip()
    readme = root / "README.md"
    text = readme.read_text()
    pattern = re.compile(rf"(<!-- results:{re.escape(name)} -->\n)[\s\S]*?(<!-- /results:{re.escape(name)} -->)")
    if not pattern.search(text):
        sys.exit(f"README.md has no <!-- results:{name} --> block")
    readme.write_text(pattern.sub(lambda m: m.group(1) + results + "\n" + m.group(2), text))
    print(f"README.md: {name} tables updated from Benchmarks/results/{name}.md")
