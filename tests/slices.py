"""Check-full's rotation: the integration cells `make check` lacks, cut
into N slices of about SLICE_SECONDS each, so that CI can run one slice per
landing after make check and so run all of them in N landings
(Documentation/harness.md, "Rotation"). tests/run is the only user; this
file holds the arithmetic, which tests/test_slices.py checks.

Everything here is a function of the tree: the cells come from the test
headers, their seconds from tests/estimates, so every checkout cuts the
same slices. Which slice a landing runs comes from the counter in
tests/rotation.
"""

import math
import re

# What one slice may cost, boots included, by the estimates. CI's hard
# limit is 90 minutes; .ci/run gives the slice until 75 minutes after its
# own start (tests/run --slice-end), and a fresh-clone make check took
# 3578 s here (2026-11-29), which leaves 4500 - 3578 = 922 s.
SLICE_SECONDS = 900

# The debug kernel (KASAN, lockdep, kmemleak) runs the same test about 4
# times as long as Debian's kernels (measured: verify 68 s vs 15-17 s,
# kverbs 30 vs 7, provider-verbs 20 vs 5); the others count as 1.
DEBUG_FACTOR = 4

# NAME[KERNEL] or NAME[KERNEL,LOCAL:PEER]; a boot of one test adds :TEST
LABEL = re.compile(r"^(?P<stem>[^\[\]]+)\[(?P<kernel>[^,\]:]+)"
                   r"(?:,(?P<pair>[^\]:]+:[^\]:]+))?(?::[^\]]+)?\]$")


def speed(kernel):
    """How much longer than on 6.1 a test takes on this kernel."""
    return DEBUG_FACTOR if kernel.partition("@")[0] == "debug" else 1


def load_estimates(text):
    """{label: seconds} from tests/estimates ("LABEL SECONDS" lines, # comments)."""
    table = {}
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) == 2:
            table[fields[0]] = float(fields[1])
        elif fields:
            raise ValueError(f"tests/estimates: bad line '{line}'")
    return table


def cell_label(stem, kernel, pair):
    """The name tests/run gives a result: verify[6.1,sroce:rxe], kunit[debug]."""
    return f"{stem}[{kernel}{'' if pair == 'none' else ',' + pair}]"


class Estimator:
    """Seconds a cell or a boot is expected to take, and how that was
    decided, from the measured table; the fallbacks are deliberately
    pessimistic, since an estimate too low makes CI overrun, one too high
    only defers a group or adds a slice."""

    def __init__(self, table):
        self.tests, self.boots = {}, {}
        for label, secs in table.items():
            m = LABEL.match(label)
            if not m:
                raise ValueError(f"tests/estimates: bad label '{label}'")
            if m["stem"] == "boot":
                key = (m["kernel"], m["pair"] or "none")
                self.boots[key] = max(secs, self.boots.get(key, 0))
            else:
                self.tests.setdefault(m["stem"], {})[label] = (m["kernel"], secs)

    def cell(self, stem, kernel, pair, timeout):
        """(seconds, how): measured; else the script's slowest measurement
        on another cell scaled by speed(); else half its time limit."""
        label = cell_label(stem, kernel, pair)
        seen = self.tests.get(stem, {})
        if label in seen:
            return seen[label][1], "measured"
        if seen:
            src, (skernel, secs) = max(seen.items(), key=lambda i: (i[1][1] / speed(i[1][0]), i[0]))
            return secs / speed(skernel) * speed(kernel), f"from {src}"
        return timeout / 2, "half its timeout"

    def boot(self, kernel, pair):
        """Boot, setup and shutdown of a group: measured for (kernel, pair);
        else the slowest boot measured on that kernel; else the slowest
        anywhere, scaled by speed()."""
        if (kernel, pair) in self.boots:
            return self.boots[(kernel, pair)]
        same = [s for (k, _), s in self.boots.items() if k.partition("@")[0] == kernel.partition("@")[0]]
        if same:
            return max(same)
        return max((s / speed(k) for (k, _), s in self.boots.items()), default=60) * speed(kernel)


def lpt(items, n):
    """items [(key, seconds, payload)] into n bins, longest first, each to
    the least loaded bin (ties: the lower index): deterministic, and within
    4/3 of the best possible largest bin."""
    bins, loads = [[] for _ in range(n)], [0.0] * n
    for item in sorted(items, key=lambda i: (-i[1], i[0])):
        j = min(range(n), key=lambda b: (loads[b], b))
        bins[j].append(item)
        loads[j] += item[1]
    return [b for b in bins if b]


def split_group(boot, cells, limit):
    """A boot group's cells [(key, seconds, payload)] as few chunks as
    keep boot + chunk within limit; a cell alone over it is its own chunk."""
    total = sum(c[1] for c in cells)
    if boot + total <= limit or len(cells) == 1:
        return [sorted(cells, key=lambda c: c[0])]
    room = max(limit - boot, 1)
    k = max(1, math.ceil(total / room))
    while True:
        chunks = lpt(cells, k)
        if k >= len(cells) or max(sum(c[1] for c in ch) for ch in chunks) <= room:
            return [sorted(ch, key=lambda c: c[0]) for ch in chunks]
        k += 1


def chunk_seconds(chunk):
    """(key, boot, cells) -> boot + its cells' seconds."""
    return chunk[1] + sum(c[1] for c in chunk[2])


def chunk_all(groups, limit=SLICE_SECONDS):
    """groups [(key, boot, cells)] -> (chunks, outsized): chunks (key,
    boot, cells) each within limit; outsized: the cells (key, boot, cell)
    that alone with their boot exceed it, which no slice can hold."""
    chunks, outsized = [], []
    for key, boot, cells in groups:
        fit = [c for c in cells if boot + c[1] <= limit]
        outsized += [(key, boot, c) for c in cells if boot + c[1] > limit]
        chunks += [(key, boot, ch) for ch in split_group(boot, fit, limit)] if fit else []
    return chunks, outsized


def pack(chunks, n):
    """The chunks into exactly n slices (some empty if there are fewer
    chunks), each slice's chunks in key order."""
    packed = lpt([((c[0], i), chunk_seconds(c), c) for i, c in enumerate(chunks)], n)
    slices = [sorted((i[2] for i in b), key=lambda c: c[0]) for b in packed]
    return slices + [[] for _ in range(n - len(slices))]


def cut(groups, limit=SLICE_SECONDS):
    """(slices, outsized): the chunks packed into the smallest number of
    slices that keeps each within limit."""
    chunks, outsized = chunk_all(groups, limit)
    n = max(1, math.ceil(sum(chunk_seconds(c) for c in chunks) / limit))
    while n < len(chunks) and max(map(slice_seconds, pack(chunks, n))) > limit:
        n += 1
    return pack(chunks, n), outsized


def slice_seconds(chunks):
    return sum(chunk_seconds(c) for c in chunks)


def read_counter(text):
    """The landing counter of tests/rotation: its one number."""
    fields = [f for line in text.splitlines() for f in line.split("#", 1)[0].split()]
    if len(fields) != 1 or not fields[0].isdigit():
        raise ValueError("tests/rotation must hold one non-negative number")
    return int(fields[0])


def slice_of(counter, n):
    """1-based slice a landing counter selects out of n."""
    return counter % n + 1
