"""Runs in every Python kernel before the first cell, in a namespace of its own (runpy.run_path from
ipykernel's exec_lines), so that nothing of it shows in the user's.

It adds what the server relies on, kept out of the user's namespace in a module named _hutch:
- env_push/env_pop, which set a cell's env_vars for that cell only and then put back what was there;
- a formatter that gives a pandas DataFrame a data representation (its columns as lists), which the server
  sends as the result's "data";
- a formatter that gives a matplotlib Figure a chart representation (charts.py), the result's "chart".
"""
import os
import sys
import types

import IPython
from IPython.core.formatters import BaseFormatter
from traitlets import ObjectName, Unicode

_hutch = types.ModuleType("_hutch")
_saved = []


def _env_push(env):
    _saved.append({k: os.environ.get(k) for k in env})
    os.environ.update(env)


def _env_pop():
    for k, v in (_saved.pop() if _saved else {}).items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


class _ClassFormatter(BaseFormatter):
    """A representation of the instances of one class, of a module that is looked up, never imported: a plain
    `1 + 1` costs nothing, and a kernel that never imports pandas or matplotlib never loads them. A value this
    does not foresee gets no representation (its others, a figure's PNG, still go)."""
    _return_type = (dict,)
    module = cls = None

    def __call__(self, obj):
        module = sys.modules.get(self.module)
        if module is None or not isinstance(obj, getattr(module, self.cls)):
            return None
        try:
            return self.represent(obj)
        except Exception:
            return None


class _DataFormatter(_ClassFormatter):
    """A DataFrame's columns as lists."""
    format_type = Unicode("application/vnd.hutch.data+json")
    print_method = ObjectName("_repr_hutch_data_")
    module, cls = "pandas", "DataFrame"

    def represent(self, obj):
        cols = obj.to_dict(orient="list")
        return {str(k): [v.isoformat() if hasattr(v, "isoformat") else v for v in vals] for k, vals in cols.items()}


class _ChartFormatter(_ClassFormatter):
    """A matplotlib Figure's data (charts.py)."""
    format_type = Unicode("application/vnd.hutch.chart+json")
    print_method = ObjectName("_repr_hutch_chart_")
    module, cls = "matplotlib.figure", "Figure"

    def represent(self, obj):
        return _charts().describe(obj)


_charts_module = []


def _charts():
    """charts.py, next to this file (not on the kernel's path), loaded when the first figure is shown."""
    if not _charts_module:
        import importlib.util

        spec = importlib.util.spec_from_file_location("_hutch_charts", os.path.join(os.path.dirname(__file__),
                                                                                    "charts.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _charts_module.append(module)
    return _charts_module[0]


class _PillowHook:
    """Shows Pillow images as results, as E2B's interpreter does: Image.show() displays the image (there is no
    viewer in a sandbox), and so does Image.save() to a file. Patched when PIL.Image is first imported, so a
    kernel that never uses Pillow never loads it."""

    def find_spec(self, name, path=None, target=None):
        if name != "PIL.Image":
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _patch_pillow(module)

        spec.loader.exec_module = exec_module
        return spec


def _patch_pillow(image_module):
    from IPython.display import display

    cls = image_module.Image
    save = cls.save

    def show(self, *args, **kwargs):
        display(self)

    def save_and_show(self, fp, *args, **kwargs):
        save(self, fp, *args, **kwargs)
        # a file, not the in-memory buffer Pillow's own PNG representation saves into
        if isinstance(fp, (str, os.PathLike)):
            display(self)

    cls.show = show
    cls.save = save_and_show


sys.meta_path.insert(0, _PillowHook())


def _skip_empty_flushes():
    """ipykernel flushes stdout and stderr before and after every cell, each flush a round trip to its IOPub
    thread and back (two thread wake-ups) even when nothing was written. With nothing pending there is nothing to
    wait for: whatever the stream sent before is already ahead, in the IOPub thread's queue, of what the kernel
    sends next (the cell's idle status). Only in the kernel's own process, and only where ipykernel has the flag
    (6.x); otherwise its flush runs as it is."""
    try:
        from ipykernel.iostream import OutStream
    except ImportError:
        return
    flush = OutStream.flush

    def flush_if_pending(self):
        if getattr(self, "_flush_pending", True) is False and self._is_master_process():
            return
        flush(self)

    OutStream.flush = flush_if_pending


_skip_empty_flushes()


def _lighter_cells():
    """What ipykernel does for every cell that the server does not use, measured under cProfile (docs/benchmarks.md):
    - it publishes the cell's code back on IOPub (execute_input), for other frontends of the same kernel; this
      kernel has one, the server, which sent that code and ignores the echo: a message to sign and serialize and a
      handoff to the IOPub thread a cell;
    - it asks inspect.signature, twice a cell, whether do_execute and run_cell_async take a cell_id: the answer
      belongs to the function, so it is asked once per function."""
    try:
        from ipykernel import ipkernel, kernelbase
    except ImportError:
        return
    kernel = getattr(IPython.get_ipython(), "kernel", None)
    if kernel is not None and hasattr(kernel, "_publish_execute_input"):
        kernel._publish_execute_input = lambda code, parent, execution_count: None
    accepts = getattr(kernelbase, "_accepts_cell_id", None)
    if accepts is None:
        return
    known = {}

    def accepts_cell_id(meth):
        func = getattr(meth, "__func__", meth)
        if func not in known:
            known[func] = accepts(meth)
        return known[func]

    kernelbase._accepts_cell_id = accepts_cell_id
    if getattr(ipkernel, "_accepts_cell_id", None) is accepts:
        ipkernel._accepts_cell_id = accepts_cell_id


_lighter_cells()

# kernel_launcher.py marked these missing for the kernel's start only: a cell may import them
for _name in ("jedi", "debugpy"):
    if _name in sys.modules and sys.modules[_name] is None:
        del sys.modules[_name]

_hutch.env_push = _env_push
_hutch.env_pop = _env_pop
sys.modules["_hutch"] = _hutch

_ip = IPython.get_ipython()
if _ip is not None:
    for _formatter in (_DataFormatter, _ChartFormatter):
        _ip.display_formatter.formatters[_formatter.format_type.default_value] = _formatter(
            parent=_ip.display_formatter)
