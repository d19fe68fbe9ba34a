"""``python -m realload.table RUN.json ...``: the side-by-side tables of several realload runs
(``scripts/realload.sh sides`` prints them at the end).

One row per master in two tables (what the clients saw; what the master logged and spent): each
figure as the median of its runs with [min–max] beside it, the runs' 1-minute load averages
(start → end), and, for fault runs (``--pause-s``), what each master did
to the paused client and the keys on its segment, run by run. Order: legacy, rfc, serve, then
any other label.
"""

import json
import statistics
import sys

ORDER = {"legacy": 0, "rfc": 1, "serve": 2}


def _ms(us):
    return f"{us / 1000:.2f}" if us >= 1000 else f"{us / 1000:.3f}"


def _num(v):
    """A figure as written: whole numbers without a decimal point (an even count's median may
    fall between two runs: one decimal then)."""
    return str(int(v)) if float(v).is_integer() else f"{v:.1f}"


def spread(values, fmt=_num):
    """``median [min–max]`` (just the value for one run)."""
    if not values:
        return "—"
    med = statistics.median(values)
    if len(values) == 1 or min(values) == max(values):
        return fmt(med)
    return f"{fmt(med)} [{fmt(min(values))}–{fmt(max(values))}]"


def _group(runs):
    by = {}
    for r in runs:
        by.setdefault(r["master"], []).append(r)
    return sorted(by.items(), key=lambda kv: (ORDER.get(kv[0], 9), kv[0]))


def summary(runs):
    """The per-master tables (markdown): what the clients saw, then what the master logged and
    spent."""
    clients = [
        "| master | runs | load (start → end) | keys preloaded | ops/s | Get p50 / p99 (ms) "
        "| Put p50 / p99 (ms) | client errors |",
        "|" + "---|" * 8,
    ]
    masters = [
        "| master | Ping p50 / p99 / max (µs) | worst heartbeat gap (s) | false Suspected / Offline / expired "
        "| joiners' Mount p50 / max (µs) | joiners' ReMount p50 / max (µs) | master CPU in the mix (s) "
        "| master CPU per 1 000 ops (ms) | master peak RSS (MiB) |",
        "|" + "---|" * 9,
    ]
    one = lambda v: f"{v:.1f}"  # noqa: E731
    for master, rs in _group(runs):
        lat = lambda k, q: [r["latency_us"][k][q] for r in rs]  # noqa: E731
        ping = lambda q: [r["ping_latency_us"][q] for r in rs]  # noqa: E731
        rem = lambda q: [r["remount_us"][q] for r in rs]  # noqa: E731
        mnt = lambda q: [r["mount_us"][q] for r in rs]  # noqa: E731
        timed = [r for r in rs if r.get("master_cpu_mix_s") is not None]
        cpu = [r["master_cpu_mix_s"] for r in timed]
        # ops in the mix = ops/s x mix seconds; the master's CPU over the same window.
        per_kop = [1e6 * r["master_cpu_mix_s"] / max(1, r["ops_per_s"] * r["run_s"]) for r in timed]
        rss = [r["master_peak_rss_mb"] for r in rs if r.get("master_peak_rss_mb")]
        t = lambda k: sum(r["transitions"].get(k, 0) for r in rs)  # noqa: E731
        loads = ", ".join(f"{r['load_before']:.1f} → {r['load_after']:.1f}" for r in rs)
        clients.append(
            f"| {master} | {len(rs)} | {loads} | {spread([r['keys'] for r in rs])} "
            f"| {spread([r['ops_per_s'] for r in rs])} "
            f"| {spread(lat('get', 'p50'), _ms)} / {spread(lat('get', 'p99'), _ms)} "
            f"| {spread(lat('put', 'p50'), _ms)} / {spread(lat('put', 'p99'), _ms)} "
            f"| {sum(r['errors'] for r in rs)} |"
        )
        masters.append(
            f"| {master} | {spread(ping('p50'))} / {spread(ping('p99'))} / {spread(ping('max'))} "
            f"| {spread([r['worst_gap_s'] for r in rs], lambda v: f'{v:.3f}')} "
            f"| {t('suspected')} / {t('offline')} / {t('expired')} "
            f"| {spread(mnt('p50'))} / {spread(mnt('max'))} "
            f"| {spread(rem('p50'))} / {spread(rem('max'))} "
            f"| {spread(cpu, one)} | {spread(per_kop, one)} | {spread(rss, lambda v: f'{v:.0f}')} |"
        )
    return "\n".join(clients) + "\n\n" + "\n".join(masters)


def faults(runs):
    """The per-run fault table (markdown), or '' when no run had a fault."""
    rs = [r for r in runs if "fault" in r]
    if not rs:
        return ""
    head = (
        "| master | started (UTC) | load | pause (s) | what the master logged for the paused client (s after SIGSTOP) "
        "| its first Ping after SIGCONT | ReMounted | keys on its segment before → after "
        "| keys found before → after | ops/s | client errors |"
    )
    rows = [head, "|" + "---|" * 11]
    for master, group in _group(rs):
        for r in group:
            f = r["fault"]
            acts = ", ".join(f"{a} @ {t}" for t, a in f["victim_actions"]) or "nothing"
            first = f["first_ping_after_resume"]
            ping = "—" if first is None else f"{first['status']} (+{first['after_s']} s)"
            rows.append(
                f"| {master} | {r['started']} | {r['load_before']:.1f} → {r['load_after']:.1f} | {f['pause_s']} | {acts} "
                f"| {ping} | {'yes' if f['victim_remounted'] else 'no'} "
                f"| {f['keys_on_victim_before']} → {f['keys_on_victim_after']} "
                f"| {f['keys_found_before']} → {f['keys_found_after']} | {r['ops_per_s']} | {r['errors']} |"
            )
    return "\n".join(rows)


def runs_table(runs):
    """One line per run: when, the load, the version and the thread count each master logged."""
    rows = ["| master | started (UTC) | version | rpc threads (flag / logged) | load start → end |", "|---|---|---|---|---|"]
    for master, group in _group(runs):
        for r in group:
            rows.append(
                f"| {master} | {r['started']} | {r.get('version') or '?'} "
                f"| {r.get('rpc_threads') or 'default'} / {r.get('rpc_thread_num_logged') or '?'} "
                f"| {r['load_before']:.1f} → {r['load_after']:.1f} |"
            )
    return "\n".join(rows)


def main(paths):
    if not paths:
        print("usage: python -m realload.table RUN.json ...", file=sys.stderr)
        return 2
    runs = []
    for p in paths:
        with open(p) as f:
            runs.append(json.load(f))
    print(summary(runs))
    print()
    print(runs_table(runs))
    table = faults(runs)
    if table:
        print()
        print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
