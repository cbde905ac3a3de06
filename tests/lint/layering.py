#!/usr/bin/env python3
"""The include rules of src/, checked: the architecture as it is written in
docs/architecture.md ("Layers"), so that the tree cannot drift from it.

- The daemon's folders form layers. A file may include its own folder and
  any folder of a lower layer, never one of its own layer or above.
- Outside the daemon: util < proto < runtime, template < daemon < cli, and
  hutch-init (src/init) uses util, proto and runtime only.
- No include cycle between files anywhere in src/, and none between the
  modules of daemon/http and daemon/store (a module is x.c with x.h and
  x_internal.h: "a uses b" when a's files include b.h).

Prints one line per violation and "layering: N passed, N failed".
"""
import os
import re
import sys

# daemon folder -> layer (lower numbers are used by higher ones)
DAEMON_LAYERS = {
    "common": 0,     # log, counters, fault points, JSON helpers
    "http": 1,       # the HTTP server: knows nothing of sandboxes, teams or the store
    "store": 1,      # persistence behind store.h
    "core": 2,       # the daemon's context and its settings
    "sandboxes": 3,  # registry, lifecycle, pools, admission, glue to the runtime
    "api": 4,        # control-plane handlers
    "envd": 4,       # data-plane handlers
    "dns": 4,        # the DNS proxy
    # nodes of a shared store: registration and leases now, placement and
    # forwarding next; it reads the sandboxes' budgets (3) and the store,
    # and the dispatcher (5) will forward through it
    "cluster": 4,
    "ingress": 4,    # port ingress: dial a sandbox's port through its init, relay bytes
    ".": 5,          # src/daemon/*.c: the dispatcher and the routing table
}

# top-level folder of src/ -> the top-level folders it may include
SRC_DEPS = {
    "util": {"util"},
    "proto": {"util", "proto"},
    "runtime": {"util", "proto", "runtime"},
    "template": {"util", "runtime", "template"},
    "init": {"util", "proto", "runtime", "init"},
    "daemon": {"util", "proto", "runtime", "template", "daemon"},
    "cli": {"util", "proto", "runtime", "template", "daemon", "cli"},
}

MODULE_ACYCLIC = ("daemon/http", "daemon/store")

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def daemon_folder(rel):
    """'daemon/http/x.h' -> 'http'; 'daemon/routes.h' -> '.'"""
    parts = rel.split("/")
    return parts[1] if len(parts) > 2 else "."


def main(root):
    src = os.path.join(root, "src")
    files = {}
    for dirpath, _, names in os.walk(src):
        for n in names:
            if n.endswith((".c", ".h")):
                path = os.path.join(dirpath, n)
                rel = os.path.relpath(path, src)
                with open(path, encoding="utf-8") as f:
                    files[rel] = INCLUDE.findall(f.read())

    bad = []
    checked = 0
    for rel, incs in sorted(files.items()):
        top = rel.split("/")[0]
        for inc in incs:
            if inc not in files:
                continue  # a local header of the same directory or a system one
            checked += 1
            itop = inc.split("/")[0]
            if itop not in SRC_DEPS.get(top, {top}):
                bad.append(f"{rel}: includes {inc}: src/{top} may not use src/{itop}")
                continue
            if top == "daemon" and itop == "daemon":
                mine, theirs = daemon_folder(rel), daemon_folder(inc)
                if mine == theirs:
                    continue
                if mine not in DAEMON_LAYERS or theirs not in DAEMON_LAYERS:
                    bad.append(f"{rel}: includes {inc}: folder not in the layer table")
                elif DAEMON_LAYERS[theirs] >= DAEMON_LAYERS[mine]:
                    bad.append(f"{rel}: includes {inc}: daemon/{mine} (layer {DAEMON_LAYERS[mine]}) "
                               f"may not use daemon/{theirs} (layer {DAEMON_LAYERS[theirs]})")

    # cycles between files (headers and the sources that include them)
    state = {}

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for inc in files.get(node, []):
            if inc not in files:
                continue
            if state.get(inc) == 1:
                cycle = stack[stack.index(inc):] + [inc]
                bad.append("include cycle: " + " -> ".join(cycle))
            elif inc not in state:
                visit(inc, stack)
        stack.pop()
        state[node] = 2

    for rel in sorted(files):
        if rel not in state:
            visit(rel, [])

    # cycles between modules of the folders that must have none
    def module(rel):
        base = rel.rsplit(".", 1)[0]
        return base[: -len("_internal")] if base.endswith("_internal") else base

    uses = {}
    for rel, incs in files.items():
        for inc in incs:
            if inc in files and os.path.dirname(inc) == os.path.dirname(rel) and module(inc) != module(rel):
                uses.setdefault(module(rel), set()).add(module(inc))
    for folder in MODULE_ACYCLIC:
        mods = sorted(m for m in uses if os.path.dirname(m) == folder)
        color = {}

        def walk(m, path):
            color[m] = 1
            for n in sorted(uses.get(m, ())):
                if color.get(n) == 1:
                    bad.append("module cycle: " + " -> ".join(path[path.index(n):] + [n]))
                elif n not in color:
                    walk(n, path + [n])
            color[m] = 2

        for m in mods:
            if m not in color:
                walk(m, [m])

    for b in bad:
        print("not ok -", b)
    # one result per file (its includes) and per acyclic folder
    failed_files = {b.split(":")[0] for b in bad if not b.startswith(("include cycle", "module cycle"))}
    failed_folders = {f for f in MODULE_ACYCLIC if any(b.startswith("module cycle: " + f) for b in bad)}
    cycles = sum(1 for b in bad if b.startswith("include cycle"))
    total = len(files) + len(MODULE_ACYCLIC) + 1
    failed = len(failed_files) + len(failed_folders) + (1 if cycles else 0)
    print(f"layering: {total - failed} passed, {failed} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")))
