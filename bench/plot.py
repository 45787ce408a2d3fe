#!/usr/bin/python3
"""bench/plot.py: the scale curves of issue 40 as PNGs for bench/RESULTS.md (Debian's matplotlib).

Usage: /usr/bin/python3 bench/plot.py --store STORE.json [--store MORE.json]...
           [--rdzv RDZV.json]... [--out bench/plots] [--note TEXT]
--store: what bench/store/ranks_run.py --out writes ({"date", "loadavg", "rows": [...]}, or a bare
list of rows); rows of several files are merged, a later file's (target, size) replacing an earlier
one's. Draws store_time.png (ms until every simulated rank passed torch's barrier; a failed run is
an 'x' at the top edge) and store_memory.png (peak RSS of the store or head agent, dashed: of the
other agents).
--rdzv: what bench/rendezvous/run.py --scale --json writes (a list of runs, or one run); a later
file's (backend, conns per agent, nodes) replaces an earlier one's. Draws rdzv_time.png (close and
re-form after a lost node) and rdzv_memory.png (the store host's peak RSS). Rows with "target" or
"backend" "torchrun", or a "torchrun" object inside a row, are drawn as torchrun's.
The footnote names the runs' dates, load and "machine" from the JSON where present, then --note.
Prints the PNGs written; exits 2 on a file it cannot read."""
import argparse
import json
import os
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after the backend)
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator  # noqa: E402
from matplotlib.transforms import blended_transform_factory, offset_copy  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GOAL_MS = 10000  # issue 40: every rank past the store barrier within 10 s
RDZV_TARGET_MS = 2000  # bench/rendezvous/run.py --scale flags close and rejoin over 2 s
COLORS = {"store": "tab:blue", "torch": "tab:red", "ptrun": "tab:orange",
          "ptrun-relay": "tab:green", "torchrun": "tab:red"}
STORE_LABELS = {"store": "ptrun-store alone", "torch": "PyTorch 1.13 TCPStore",
                "ptrun": "ptrun, {n} agents (every rank to the head)",
                "ptrun-relay": "ptrun --store-relay, {n} agents"}


def load(path):
    """(rows, meta) of a JSON file: a list of rows, {"rows": [...], ...}, or one row."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        print(f"plot: cannot read {path}: {e}", file=sys.stderr)
        sys.exit(2)
    if isinstance(data, list):
        return [r for r in data if isinstance(r, dict)], {}
    if isinstance(data, dict) and isinstance(data.get("rows"), list):
        return [r for r in data["rows"] if isinstance(r, dict)], data
    if isinstance(data, dict):
        return [data], data
    print(f"plot: cannot read {path}: neither a JSON list nor an object", file=sys.stderr)
    sys.exit(2)


def dig(row, *paths):
    """The first number found at one of paths (tuples of keys) in row."""
    for path in paths:
        v = row
        for k in path:
            v = v.get(k) if isinstance(v, dict) else None
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return v
    return None


def footnote(metas, note, extra=""):
    """One line: machine, the runs' dates and load where the JSON has them, extra, --note."""
    machines = sorted({str(m["machine"]) for m in metas if m.get("machine")})
    dates = sorted(str(m["date"]) for m in metas if m.get("date"))
    loads = [m["loadavg"][0] for m in metas if isinstance(m.get("loadavg"), list) and m["loadavg"]]
    parts = machines[:]
    if dates:
        parts.append("run " + dates[0] + (f" to {dates[-1]}" if dates[-1] != dates[0] else ""))
    if loads:
        parts.append(f"1-min load {min(loads):.1f}" + (f"-{max(loads):.1f}" if len(loads) > 1
                                                        else ""))
    if not parts and not note:
        note = "no machine or date in the JSON (bench/plot.py --note TEXT names them)"
    return "; ".join(parts + [p for p in (extra, note) if p])


def log_y(ax):
    """Log y, ticks at 1, 2, 5 x 10^k unless it spans over 3 decades, labelled as plain numbers."""
    ax.set_yscale("log")
    lo, hi = ax.get_ylim()
    ax.yaxis.set_major_locator(LogLocator(subs=(1,) if hi / lo > 1000 else (1, 2, 5)))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def size_axis(ax, sizes, label):
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(sizes))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(
        lambda v, _: f"{v / 1000:g}K" if v >= 1000 and v % 1000 == 0 else f"{v:,.0f}"))
    ax.set_xlim(min(sizes) / 1.5, max(sizes) * 1.5)
    ax.set_xlabel(label)
    ax.grid(True, which="major", alpha=0.3)


def finish(fig, ax, text, path, written, handles=None, loc="upper left"):
    if loc == "outside":  # right of the plot: the lines fill it
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    else:
        ax.legend(handles=handles, loc=loc, fontsize=8, framealpha=0.9)
    text = textwrap.fill(text, 160)
    fig.text(0.01, 0.01, text, fontsize=7, color="dimgray", va="bottom")
    fig.tight_layout(rect=(0, 0.03 + 0.022 * (text.count("\n") + 1), 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)


def why(row):
    """A failed store run's cause in two words, from its recorded errors."""
    text = json.dumps(row.get("error", "")) + str(row.get("server_said", ""))
    if "Too many open files" in text:
        return "fd limit"
    if any(k in text for k in ("--timeout-s", "deadline", "passed the barrier")):
        return "timed out"
    return "failed"


def store_plots(rows, metas, a, written):
    by = {}
    for r in rows:
        size = r.get("size", r.get("ranks"))
        if r.get("target") and isinstance(size, int):
            by[(r["target"], size)] = r
    ok = {k: r for k, r in by.items() if dig(r, ("barrier_ms",)) is not None}
    if not ok and not any("error" in r for r in by.values()):
        print("plot: store plots skipped: no row has target, size and barrier_ms or error",
              file=sys.stderr)
        return
    known = list(STORE_LABELS)
    targets = sorted({t for t, _ in by}, key=lambda t: (known.index(t) if t in known else 9, t))
    sizes = sorted({s for _, s in by})
    agents = max((r.get("processes", 0) for (t, _), r in by.items() if t.startswith("ptrun")),
                 default=0)

    def label(t):
        return STORE_LABELS.get(t, t).format(n=agents or "N")

    def color(t):
        return COLORS.get(t, f"C{4 + targets.index(t)}")

    how = (f"simulated ranks from bench_store_ranks (bench/store/ranks_run.py); ptrun targets: "
           f"{agents} agents on this one machine, each running a generator as its worker")
    note = footnote(metas, a.note, how)

    # store_time.png
    fig, ax = plt.subplots(figsize=(8.5, 5.6))
    top = blended_transform_factory(ax.transData, ax.transAxes)
    handles, stacked = [], {}
    for t in targets:
        pts = sorted((s, r["barrier_ms"]) for (tt, s), r in ok.items() if tt == t)
        if pts:
            ax.plot(*zip(*pts), marker="o", color=color(t))
            for x, y in pts:
                ax.annotate(f"{y / 1000:.1f} s" if y >= 1000 else f"{y:.0f} ms", (x, y),
                            xytext=(-7, 0), textcoords="offset points", ha="right",
                            va="center", fontsize=7, color=color(t))
        handles.append(Line2D([], [], marker="o", color=color(t), label=label(t)))
        for s in sizes:
            r = by.get((t, s))
            if r is None or (t, s) in ok:
                continue
            k = stacked[s] = stacked.get(s, -1) + 1
            ax.plot([s], [1], "x", color=color(t), ms=10, mew=2.5, clip_on=False,
                    transform=offset_copy(top, fig=fig, x=13 * k, units="points"))
            ax.annotate(f"{t} failed: {why(r)}", (s, 1), xycoords=top, xytext=(-4, -12 - 12 * k),
                        textcoords="offset points", ha="right", fontsize=8, color=color(t))
    if stacked:
        handles.append(Line2D([], [], marker="x", ls="", color="black", mew=2,
                              label="run failed (drawn at the top edge)"))
    ax.axhline(GOAL_MS, ls="--", color="gray", lw=1)
    handles.append(Line2D([], [], ls="--", color="gray", label="goal: 10 s"))
    vals = [r["barrier_ms"] for r in ok.values()] or [GOAL_MS]
    ax.set_yscale("log")
    ax.set_ylim(min(vals) / 2, max(max(vals), GOAL_MS) * 5)
    log_y(ax)
    size_axis(ax, sizes, "simulated PyTorch ranks (log scale)")
    ax.set_ylabel("ms until every rank passed torch's store barrier (log scale)")
    ax.set_title("Workers' store: time until every rank passed the start-up barrier")
    finish(fig, ax, note, os.path.join(a.out, "store_time.png"), written, handles,
           loc="lower right")

    # store_memory.png
    fig, ax = plt.subplots(figsize=(10, 5.6))
    handles, styles = [], {}
    for t in targets:
        drawn = False
        for key, ls, mk in (("head_rss_kb", "-", "o"), ("agent_rss_kb", "--", "s")):
            pts = sorted((s, r[key] / 1024) for (tt, s), r in ok.items() if tt == t and r.get(key))
            bad = sorted((s, r[key] / 1024) for (tt, s), r in by.items()
                         if tt == t and (tt, s) not in ok and r.get(key))
            if pts:
                ax.plot(*zip(*pts), ls=ls, marker=mk, color=color(t), ms=5)
                styles[key] = True
            if bad:
                ax.plot(*zip(*bad), "x", color=color(t), ms=9, mew=2)
                styles["x"] = True
            drawn = drawn or bool(pts or bad)
        if drawn:
            handles.append(Line2D([], [], lw=6, color=color(t), label=label(t)))
    if not handles:
        print("plot: store_memory.png skipped: no row has head_rss_kb or agent_rss_kb",
              file=sys.stderr)
        return
    for key, kw, text in (
            ("head_rss_kb", {"marker": "o"}, "the store process (store, torch), the head agent"),
            ("agent_rss_kb", {"marker": "s", "ls": "--"}, "the largest of the other agents"),
            ("x", {"marker": "x", "ls": "", "mew": 2}, "failed run: its peak until it gave up")):
        if key in styles:
            handles.append(Line2D([], [], color="black", ms=5, label=text, **kw))
    ax.set_yscale("log")
    log_y(ax)
    size_axis(ax, sizes, "simulated PyTorch ranks (log scale)")
    ax.set_ylabel("peak RSS (VmHWM), MiB (log scale)")
    ax.set_title("Workers' store: peak memory of the store (or head agent) and of the other agents")
    finish(fig, ax, note, os.path.join(a.out, "store_memory.png"), written, handles, "outside")


def rdzv_norm(sub, backend, parent):
    return {"backend": backend, "conns": sub.get("conns_per_agent", parent.get("conns_per_agent")),
            "nodes": dig(sub, ("nodes",)) or dig(parent, ("nodes",)),
            "close": dig(sub, *CLOSE_KEYS), "rejoin": dig(sub, *REJOIN_KEYS),
            "floor": dig(sub, ("floor", "barrier_ms")), "mem": dig(sub, *MEM_KEYS)}


CLOSE_KEYS = (("close", "total_ms"), ("close_ms",))
REJOIN_KEYS = (("rejoin", "rejoin_ms"), ("rejoin_ms",), ("reform_ms",))
MEM_KEYS = (("host", "vmhwm_kb"), ("host_rss_kb",), ("store_rss_kb",))


def keys_text(paths):
    return " or ".join(".".join(p) for p in paths)


def rdzv_plots(rows, metas, a, written):
    by = {}
    for r in rows:
        subs = [rdzv_norm(r, r.get("target") or r.get("backend") or "ptrun", r)]
        if isinstance(r.get("torchrun"), dict):
            subs.append(rdzv_norm(r["torchrun"], "torchrun", r))
        for n in subs:
            if n["nodes"]:
                by[(n["backend"], n["conns"], n["nodes"])] = n
    series = sorted({(b, c) for b, c, _ in by}, key=lambda s: (s[0] != "ptrun", s[0],
                                                                -(s[1] or 0)))

    def name(s):
        return s[0] + (f", {s[1]} conn{'s' if s[1] != 1 else ''}/agent" if s[1] else "")

    def color(s):
        return COLORS["torchrun"] if s[0] == "torchrun" else f"C{series.index(s)}"

    procs = sorted({str(r["agent_processes"]) for r in rows if "agent_processes" in r})
    beats = sorted({str(r["heartbeat_ms"]) for r in rows if "heartbeat_ms" in r})
    how = ("bench_rdzv_load (bench/rendezvous/run.py --scale): the store host (server + "
           "Coordinator) in one process, N simulated agents"
           + (f" in {'/'.join(procs)} other processes" if procs else "")
           + (f", heartbeat {'/'.join(beats)} ms" if beats else "")
           + "; rejoin: one node lost, the survivors re-form")
    note = footnote(metas, a.note, how)
    if by and not any(b == "torchrun" for b, _, _ in by):
        print('plot: no torchrun rendezvous figures (looked for "target" or "backend" "torchrun", '
              'or a "torchrun" object in a row): ptrun\'s alone', file=sys.stderr)
    timed = {k: n for k, n in by.items() if n["close"] is not None or n["rejoin"] is not None}
    if not timed:
        print(f"plot: rdzv_time.png skipped: no row has nodes and {keys_text(CLOSE_KEYS)} or "
              f"{keys_text(REJOIN_KEYS)}", file=sys.stderr)
    else:
        fig, ax = plt.subplots(figsize=(8.5, 5.6))
        for s in series:
            for key, ls, mk, what in (("close", "-", "o", "close"),
                                      ("rejoin", "--", "s", "re-form after a lost node")):
                pts = sorted((n, v[key]) for (b, c, n), v in timed.items()
                             if (b, c) == s and v[key] is not None)
                if pts:
                    ax.plot(*zip(*pts), ls=ls, marker=mk, color=color(s),
                            label=f"{name(s)}: {what}")
        floor = {}
        for (b, _, n), v in by.items():
            if b == "ptrun" and v["floor"] is not None:
                floor.setdefault(n, []).append(v["floor"])
        if floor:
            pts = sorted((n, sorted(f)[len(f) // 2]) for n, f in floor.items())
            ax.plot(*zip(*pts), ls=":", marker=".", color="gray",
                    label="the store's own floor (one ADD+WAIT barrier of N)")
        ax.axhline(RDZV_TARGET_MS, ls="--", color="black", lw=0.8,
                   label="2 s (run.py --scale marks what is over)")
        ax.set_ylim(bottom=0)
        size_axis(ax, sorted({n for _, _, n in timed}), "nodes (simulated agents, log scale)")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.set_ylabel("ms")
        ax.set_title("ptrun's rendezvous: close (first join to all assigned) and re-form")
        finish(fig, ax, note, os.path.join(a.out, "rdzv_time.png"), written)
    mem = {k: n for k, n in by.items() if n["mem"] is not None}
    if not mem:
        print(f"plot: rdzv_memory.png skipped: no row has nodes and {keys_text(MEM_KEYS)}",
              file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(8.5, 5.6))
    for s in series:
        pts = sorted((n, v["mem"] / 1024) for (b, c, n), v in mem.items() if (b, c) == s)
        if pts:
            ax.plot(*zip(*pts), marker="o", color=color(s), label=name(s))
    ax.set_ylim(bottom=0)
    size_axis(ax, sorted({n for _, _, n in mem}), "nodes (simulated agents, log scale)")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_ylabel("peak RSS (VmHWM) of the store host process, MiB")
    ax.set_title("ptrun's rendezvous: peak memory of the store host (close, then re-form)")
    finish(fig, ax, note, os.path.join(a.out, "rdzv_memory.png"), written)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", action="append", default=[], metavar="FILE",
                    help="bench/store/ranks_run.py --out JSON (repeatable; later files win)")
    ap.add_argument("--rdzv", action="append", default=[], metavar="FILE",
                    help="bench/rendezvous/run.py --scale --json JSON (repeatable)")
    ap.add_argument("--out", default=os.path.join(HERE, "plots"), help="folder for the PNGs")
    ap.add_argument("--note", default="", help="footnote: the machine, where the JSON lacks it")
    a = ap.parse_args()
    if not a.store and not a.rdzv:
        ap.error("give --store FILE and/or --rdzv FILE")
    store = [load(p) for p in a.store]
    rdzv = [load(p) for p in a.rdzv]
    try:
        os.makedirs(a.out, exist_ok=True)
    except OSError as e:
        print(f"plot: cannot make {a.out}: {e}", file=sys.stderr)
        sys.exit(2)
    written = []
    if store:
        store_plots([r for rows, _ in store for r in rows], [m for _, m in store], a, written)
    if rdzv:
        rdzv_plots([r for rows, _ in rdzv for r in rows], [m for _, m in rdzv], a, written)
    for path in written:
        print(path)


if __name__ == "__main__":
    main()
