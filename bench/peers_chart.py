#!/usr/bin/python3
"""The chart of bench/peers.sh's JSON: one PNG, four panels.

    python3 bench/peers_chart.py [build/bench/peers.json [docs/peers.png]]

Medians as bars, p99 as whiskers, log scales (the peers differ by two orders
of magnitude): create + first command and exec (ms), the tasks as multiples of
the host, pause and resume (ms), and memory per idle sandbox (PSS, MiB).
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PEERS = ["host", "hutch", "hutch-durable", "hutch-api", "bwrap", "crun", "runsc", "podman", "docker"]
LABEL = {"hutch": "hutch run (tasks: --tmpfs /tmp)", "hutch-durable": "hutch run (tasks: /tmp on its disk layer)",
         "hutch-api": "hutch serve (API)", "runsc": "runsc (gVisor, ptrace)"}
COLOR = {"host": "#999999", "hutch": "#d62728", "hutch-durable": "#e377c2", "hutch-api": "#ff7f0e", "bwrap": "#8c564b",
         "crun": "#9467bd", "runsc": "#2ca02c", "podman": "#1f77b4", "docker": "#17becf"}


def grouped(ax, figures, groups, value, err=None, ylabel=""):
    present = [p for p in PEERS if any(p in figures.get(g, {}) for g in groups)]
    width = 0.8 / max(1, len(present))
    for i, p in enumerate(present):
        xs, ys, es = [], [], []
        for j, g in enumerate(groups):
            s = figures.get(g, {}).get(p)
            if s is None:
                continue
            xs.append(j + (i - (len(present) - 1) / 2) * width)
            ys.append(value(g, p, s))
            es.append(max(0.0, err(g, p, s) - ys[-1]) if err else 0.0)
        ax.bar(xs, ys, width, yerr=[[0] * len(es), es] if err else None, capsize=2,
               color=COLOR[p], label=LABEL.get(p, p))
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", which="both", alpha=0.3)


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "build/bench/peers.json"
    dst = sys.argv[2] if len(sys.argv) > 2 else "docs/peers.png"
    with open(src) as f:
        data = json.load(f)
    figs = data["figures"]
    fig, axes = plt.subplots(2, 2, figsize=(14, 9))

    grouped(axes[0][0], figs, [g for g in ("true", "python", "exec") if g in figs],
            lambda g, p, s: s["median"], lambda g, p, s: s["p99"], "ms (median, whisker p99)")
    axes[0][0].set_title("create + first command (fresh sandbox), exec on a kept one")

    tasks = [g for g in ("analysis", "syscalls", "files") if g in figs and "host" in figs[g]]
    grouped(axes[0][1], figs, tasks, lambda g, p, s: s["median"] / figs[g]["host"]["median"],
            None, "median / host's median")
    axes[0][1].axhline(1.0, color="black", linewidth=0.8)
    axes[0][1].set_xticklabels([{"analysis": "pandas, 50 MB CSV -> XLSX", "syscalls": "100k open/read/close\n+ 1,000 fork/exec",
                                 "files": "20,000 files: untar,\nlstat, git commit"}[g] for g in tasks])
    axes[0][1].set_title("tasks (one fresh sandbox each), as multiples of the host")

    grouped(axes[1][0], figs, [g for g in ("pause", "resume") if g in figs],
            lambda g, p, s: s["median"], lambda g, p, s: s["p99"], "ms (median, whisker p99)")
    axes[1][0].set_title("pause / resume with 200 MB resident")

    mem = data.get("memory", {})
    present = [p for p in PEERS if p in mem]
    axes[1][1].bar(range(len(present)), [mem[p]["pss_mib_per_sandbox"] for p in present],
                   color=[COLOR[p] for p in present])
    axes[1][1].set_xticks(range(len(present)))
    axes[1][1].set_xticklabels([LABEL.get(p, p) for p in present], rotation=30, ha="right")
    axes[1][1].set_yscale("log")
    axes[1][1].set_ylabel("MiB per idle sandbox (PSS of its processes)")
    axes[1][1].grid(axis="y", which="both", alpha=0.3)
    n = max((m["sandboxes"] for m in mem.values()), default=0)
    axes[1][1].set_title(f"memory: {n} idle sandboxes with a shell, per sandbox")

    # one legend for all panels: a peer may appear in one only (hutch-durable in the tasks')
    legend = {}
    for ax in (axes[0][0], axes[0][1], axes[1][0]):
        for h, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, h)
    fig.legend(legend.values(), legend.keys(), loc="upper center", ncol=min(len(legend), 5), frameon=False)
    v = data.get("versions", {})
    fig.text(0.01, 0.005, f"{data['date'][:16]} UTC, {data['rounds']} rounds{' (PARTIAL)' if data.get('partial') else ''}; "
             f"kernel {v.get('kernel')}; {v.get('runsc')}; {v.get('podman')}; {v.get('docker')}; {v.get('crun')}",
             fontsize=7)
    fig.tight_layout(rect=(0, 0.02, 1, 0.95))
    fig.savefig(dst, dpi=90)
    print(f"chart written to {dst}")


if __name__ == "__main__":
    main()
