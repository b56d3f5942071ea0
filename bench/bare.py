"""The ingest baseline of DESIGN §11: bare markdown-it-py parsing + SHA-256 of the same bytes.

`python bench/bare.py FILE` prints the median seconds of 3 for FILE's bytes, in an interpreter holding nothing
else (the 2 MB latency figure's baseline: `benchmark.bare_in_fresh_interpreter`).
"""
from __future__ import annotations

import hashlib
import statistics
import sys
import time


def bare_parse_and_hash(data: bytes) -> float:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    times = []
    for _ in range(3):
        start = time.perf_counter()
        md.parse(data.decode("utf-8"))
        hashlib.sha256(data).hexdigest()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


if __name__ == "__main__":
    with open(sys.argv[1], "rb") as file:
        print(bare_parse_and_hash(file.read()))
