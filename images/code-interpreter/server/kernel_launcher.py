"""Starts ipykernel as `python3 -m ipykernel_launcher` does, without two imports nobody here uses.

IPython's completer imports jedi (with parso) when it is installed, and ipykernel's debugger imports debugpy (with
its pydevd bundle): together several MB in every kernel and a part of its start, for code completion and the
Jupyter debugger, which the code-interpreter SDKs never ask for. They are marked missing while the kernel starts
(IPython completes without jedi; the kernel says it has no debugger) and unmarked before the first cell
(ipython_startup.py), so that a cell can still import them.
"""
import sys

# this file's folder (the server's modules) is no module path of the user's: ipykernel_launcher drops it too
del sys.path[0]
for name in ("jedi", "debugpy"):
    sys.modules.setdefault(name, None)

from ipykernel import kernelapp  # noqa: E402

kernelapp.launch_new_instance()
