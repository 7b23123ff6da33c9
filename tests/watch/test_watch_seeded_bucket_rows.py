"""The watched page's buckets table at every height from short to tall: the buckets shown are
the first ones, the "… and k more" line counts exactly the rest, and it never stands in for a
single bucket while fewer than the table's eight rows are shown (the line takes a bucket's row:
with one left, the bucket itself is drawn there). The bucket count comes from the raw timing
lines. A seeded bug that cut the last bucket for "… and 1 more" at the one height where the
buckets exactly fit passed every test: every fixed size was well above or below it."""

from __future__ import annotations

import re

from tests.watch.test_watch_page import frame, timings

MAX_ROWS = 8  # the page's table rows (the Run tab lists every bucket)


def test_every_height_shows_the_first_buckets_and_counts_the_rest() -> None:
    step = 2
    n = len(timings(step)[0])
    assert 2 <= n <= MAX_ROWS
    whole = cut = 0
    for h in range(300, 1400, 4):
        _, f = frame(step, h=h)
        rows = sorted(
            {int(m.group(1)) for t in f.texts if (m := re.match(r"bucket(\d+)\.", t.key or ""))}
        )
        more = [m for t in f.texts if (m := re.match(r"… and (\d+) more bucket", t.text))]
        if not rows:
            continue  # a short stage: the buckets go to the Run tab
        if not more:
            assert len(rows) == n, h
            whole += 1
            continue
        k = int(more[0].group(1))
        assert len(rows) + k == n, h
        assert k >= 2, f"height {h}: '… and 1 more' hides a bucket that fits in its row"
        cut += 1
    assert whole and cut  # both sides of the boundary were met
