"""The code interpreter's server against real kernels, on loopback (python3 -m pytest images/code-interpreter/tests).

One server runs for the whole module, on an ephemeral port of 127.0.0.1, with a temporary home; each test uses
contexts of its own where state matters. Needs python3-ipykernel, python3-jupyter-client, python3-matplotlib,
python3-pandas, nodejs and node-typescript (scripts/install-deps.sh installs them).
"""
import base64
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "..", "server", "server.py")
sys.path.insert(0, os.path.join(HERE, "..", "server"))
import kernels  # noqa: E402

PORT = None
PROC = None
HOME = None


def start_server(home, extra_env=None):
    env = dict(os.environ, TEST_ENV_VAR="supertest", HOME=home, **(extra_env or {}))
    proc = subprocess.Popen([sys.executable, SERVER, "--host", "127.0.0.1", "--port", "0", "--keepalive", "1",
                             "--env-file", os.path.join(home, "sandbox-envs.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=home,
                            start_new_session=True)
    line = proc.stdout.readline().decode()
    if "listening on" not in line:
        proc.kill()
        raise RuntimeError(f"the server did not start: {line!r}")
    return proc, int(line.rsplit(":", 1)[1])


def stop_server(proc):
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def setUpModule():
    global PORT, PROC, HOME
    HOME = tempfile.mkdtemp(prefix="hutch-interp-test-")
    PROC, PORT = start_server(HOME)


def tearDownModule():
    stop_server(PROC)
    shutil.rmtree(HOME, ignore_errors=True)


def request(method, path, body=None, port=None, timeout=60):
    conn = http.client.HTTPConnection("127.0.0.1", port or PORT, timeout=timeout)
    try:
        conn.request(method, path, body=json.dumps(body) if body is not None else None,
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, data
    finally:
        conn.close()


def execute(code, port=None, timeout=60, **kw):
    """The events of one /execute, each with the monotonic time it was read at ("_t")."""
    conn = http.client.HTTPConnection("127.0.0.1", port or PORT, timeout=timeout)
    try:
        conn.request("POST", "/execute", body=json.dumps(dict(code=code, **kw)),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            return resp.status, resp.read().decode()
        out = []
        for line in resp:
            ev = json.loads(line)
            ev["_t"] = time.monotonic()
            out.append(ev)
        return 200, out
    finally:
        conn.close()


def run(code, **kw):
    status, evs = execute(code, **kw)
    assert status == 200, (status, evs)
    assert evs[-1]["type"] == "end_of_execution", evs
    return evs


def of(evs, kind):
    return [e for e in evs if e["type"] == kind]


def text(evs):
    main = [e for e in of(evs, "result") if e["is_main_result"]]
    return main[0].get("text") if main else None


def stdout(evs):
    return "".join(e["text"] for e in of(evs, "stdout"))


def new_context(language="python", cwd=None):
    status, data = request("POST", "/contexts", {"language": language, "cwd": cwd})
    assert status == 200, data
    return json.loads(data)


def abandon(code, context_id, after=1.0):
    """Sends a cell and goes away after `after` seconds, as a client that times out does."""
    body = json.dumps({"code": code, "context_id": context_id}).encode()
    s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    s.sendall(b"POST /execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    time.sleep(after)
    s.close()


class Python(unittest.TestCase):
    def test_state_and_count(self):
        ctx = new_context()
        evs = run("x = 1", context_id=ctx["id"])
        self.assertEqual(of(evs, "number_of_executions")[0]["execution_count"], 1)
        evs = run("x += 1; x", context_id=ctx["id"])
        self.assertEqual(text(evs), "2")
        self.assertEqual(of(evs, "number_of_executions")[0]["execution_count"], 2)

    def test_streaming_arrives_before_the_end(self):
        evs = run("import time\nprint('a', flush=True)\ntime.sleep(1.5)\nprint('b')")
        out = of(evs, "stdout")
        self.assertEqual([e["text"] for e in out], ["a\n", "b\n"])
        self.assertGreater(evs[-1]["_t"] - out[0]["_t"], 1.0)
        self.assertIn("timestamp", out[0])

    def test_a_slow_cell_answers_its_head_before_its_end(self):
        # a short cell's head goes out with its last lines (one write); a longer one's must not wait for them
        conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
        try:
            t0 = time.monotonic()
            conn.request("POST", "/execute", body=json.dumps({"code": "import time; time.sleep(1.5)"}),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            t_head = time.monotonic() - t0
            lines = [json.loads(line) for line in resp]
            t_end = time.monotonic() - t0
        finally:
            conn.close()
        self.assertEqual(resp.status, 200)
        self.assertEqual(lines[-1]["type"], "end_of_execution")
        self.assertGreater(t_end, 1.4)
        self.assertLess(t_head, 1.0)

    def test_the_kernel_imports_what_its_start_left_out(self):
        # kernel_launcher.py keeps jedi and debugpy out of the kernel's start only; and the server's own
        # modules are not on the user's path
        ctx = new_context()
        evs = run("import sys\nfor m in ('jedi', 'debugpy'):\n    try:\n        __import__(m); print(m, 'ok')\n"
                  "    except ModuleNotFoundError as e:\n        print(m, 'halted' if 'halted' in str(e) else 'absent')\n"
                  "print(any(m in sys.modules for m in ('kernels', 'contexts', 'events')))\n"
                  "import importlib.util; print(importlib.util.find_spec('kernel_launcher'))",
                  context_id=ctx["id"])
        self.assertEqual(of(evs, "error"), [])
        lines = stdout(evs).splitlines()
        for m, line in zip(("jedi", "debugpy"), lines):
            # importable wherever installed (the template has both); never "halted" by the start's mark
            self.assertIn(line, (f"{m} ok", f"{m} absent"))
        self.assertEqual(lines[2:], ["False", "None"])

    def test_stderr(self):
        evs = run("import sys; print('oops', file=sys.stderr)")
        self.assertEqual([e["text"] for e in of(evs, "stderr")], ["oops\n"])

    def test_error(self):
        evs = run("undefined_name")
        err = of(evs, "error")
        self.assertEqual(len(err), 1)
        self.assertEqual(err[0]["name"], "NameError")
        self.assertEqual(err[0]["value"], "name 'undefined_name' is not defined")
        self.assertIn("NameError", err[0]["traceback"])
        self.assertNotIn("\x1b[", err[0]["traceback"])  # no terminal colours

    def test_string_result_reads_unquoted(self):
        self.assertEqual(text(run("'bar'")), "bar")

    def test_matplotlib_png(self):
        evs = run("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\n42")
        res = of(evs, "result")
        self.assertEqual(len(res), 2)
        fig = res[0]
        self.assertFalse(fig["is_main_result"])
        self.assertTrue(base64.b64decode(fig["png"]).startswith(b"\x89PNG\r\n\x1a\n"))
        self.assertIn("Figure", fig["text"])
        self.assertEqual(fig["extra"], {})
        self.assertEqual(text(evs), "42")

    def test_pandas_html_and_data(self):
        evs = run("import pandas as pd\npd.DataFrame({'a': [1, 2, 3], 'b': ['x', 'y', 'z']})")
        res = [e for e in of(evs, "result") if e["is_main_result"]][0]
        self.assertIn("<table", res["html"])
        self.assertEqual(res["data"], {"a": [1, 2, 3], "b": ["x", "y", "z"]})
        self.assertNotIn("application/vnd.hutch.data+json", res["extra"])

    def test_startup_leaves_the_namespace_alone(self):
        ctx = new_context()
        evs = run("sorted(k for k in globals() if not k.startswith('_') and k not in ('In', 'Out', 'exit', 'quit', "
                  "'get_ipython', 'open'))", context_id=ctx["id"])
        self.assertEqual(text(evs), "[]")

    def test_pillow_show_and_save_display_the_image(self):
        make = ("import numpy\nfrom PIL import Image\n"
                "im = Image.fromarray((numpy.random.rand(16, 16, 3) * 255).astype('uint8')).convert('RGBA')\n")
        for code in (make + "im.show()\nprint('done')", make + "im.save('pil-test.png')", make + "im"):
            evs = run(code)
            pngs = [e for e in of(evs, "result") if e.get("png")]
            self.assertEqual(len(pngs), 1, code)
            self.assertTrue(base64.b64decode(pngs[0]["png"]).startswith(b"\x89PNG"))

    def test_display_data_is_not_main(self):
        evs = run("from IPython.display import display, HTML\ndisplay(HTML('<b>hi</b>'))")
        res = of(evs, "result")
        self.assertEqual(res[0]["html"], "<b>hi</b>")
        self.assertFalse(res[0]["is_main_result"])



def chart(code):
    """The chart of the one figure the code shows (each test draws in a context of its own)."""
    evs = run("import matplotlib.pyplot as plt\nimport numpy as np\n" + code, context_id=new_context()["id"])
    figs = [e for e in of(evs, "result") if e.get("png")]
    assert len(figs) == 1 and not of(evs, "error"), evs
    return figs[0].get("chart")


class Charts(unittest.TestCase):
    """A figure's "chart": the fields the code-interpreter SDKs' charts/ tests read, one test a chart type."""

    def assert_axes(self, c, x_scale, y_scale, x_tick=float):
        self.assertEqual((c["x_scale"], c["y_scale"]), (x_scale, y_scale))
        self.assertTrue(c["x_ticks"] and all(isinstance(t, x_tick) for t in c["x_ticks"]), c["x_ticks"])
        self.assertTrue(c["y_ticks"] and all(isinstance(t, float) for t in c["y_ticks"]), c["y_ticks"])
        for labels in (c["x_tick_labels"], c["y_tick_labels"]):
            self.assertTrue(labels and all(isinstance(t, str) for t in labels))

    def test_line_with_dates_and_units(self):
        c = chart("import datetime\nday = datetime.date(2024, 3, 1)\nt = np.linspace(0, 3, 50)\n"
                  "plt.plot([day + datetime.timedelta(days=i) for i in range(50)], t ** 2, label='square')\n"
                  "plt.plot([day + datetime.timedelta(days=i) for i in range(50)], -t)\n"
                  "plt.xlabel('Day [d]'); plt.ylabel('Distance (m)'); plt.title('Two lines'); plt.show()")
        self.assertEqual((c["type"], c["title"]), ("line", "Two lines"))
        self.assertEqual((c["x_label"], c["y_label"], c["x_unit"], c["y_unit"]), ("Day [d]", "Distance (m)", "d", "m"))
        self.assert_axes(c, "datetime", "linear", x_tick=str)
        self.assertEqual([e["label"] for e in c["elements"]], ["square", "Line 1"])
        pts = c["elements"][0]["points"]
        self.assertEqual(len(pts), 50)
        self.assertEqual(pts[0], ["2024-03-01T00:00:00+00:00", 0.0])
        self.assertTrue(all(isinstance(x, str) and isinstance(y, float) for x, y in pts))

    def test_log_and_categorical_scales(self):
        c = chart("x = np.linspace(1, 20, 30)\nplt.plot(x, np.exp(x), label='e^x')\nplt.yscale('log')\n"
                  "plt.ylabel('Growth (log scale)'); plt.grid(True); plt.axhline(10); plt.show()")
        self.assertEqual((c["type"], c["title"], c["x_label"], c["x_unit"]), ("line", None, None, None))
        self.assertEqual(c["y_unit"], "log scale")
        self.assert_axes(c, "linear", "log")
        self.assertEqual([(e["label"], len(e["points"])) for e in c["elements"]], [("e^x", 30)])  # not the axhline
        c = chart("plt.plot([1, 2, 3], ['low', 'mid', 'high']); plt.show()")
        self.assertEqual((c["x_scale"], c["y_scale"]), ("linear", "categorical"))
        self.assertEqual(c["y_tick_labels"], ["low", "mid", "high"])
        self.assertEqual(c["elements"][0]["points"], [[1.0, "low"], [2.0, "mid"], [3.0, "high"]])

    def test_scatter(self):
        c = chart("plt.scatter(np.random.rand(4), np.random.rand(4), label='first')\n"
                  "plt.scatter(np.random.rand(7), np.random.rand(7), label='second')\n"
                  "plt.xlabel('P'); plt.ylabel('Q'); plt.show()")
        self.assertEqual((c["type"], c["title"], c["x_label"], c["y_label"]), ("scatter", None, "P", "Q"))
        self.assert_axes(c, "linear", "linear")
        self.assertEqual([(e["label"], len(e["points"])) for e in c["elements"]], [("first", 4), ("second", 7)])
        self.assertTrue(all(isinstance(v, float) for e in c["elements"] for p in e["points"] for v in p))

    def test_bar(self):
        c = chart("plt.bar(['north', 'south', 'east'], [3, 1, 2], label='sales')\n"
                  "plt.xlabel('Region'); plt.ylabel('Units'); plt.title('Sales'); plt.show()")
        self.assertEqual((c["type"], c["title"], c["x_label"], c["y_label"]), ("bar", "Sales", "Region", "Units"))
        self.assertEqual((c["x_unit"], c["y_unit"]), (None, None))
        self.assertEqual([(e["label"], e["group"], e["value"]) for e in c["elements"]],
                         [("north", "sales", 3), ("south", "sales", 1), ("east", "sales", 2)])
        # bars along y name their category axis x
        c = chart("plt.barh(['a', 'b'], [5, 6]); plt.xlabel('Count'); plt.ylabel('Letter'); plt.show()")
        self.assertEqual((c["x_label"], c["y_label"]), ("Letter", "Count"))
        self.assertEqual([(e["label"], e["group"], e["value"]) for e in c["elements"]],
                         [("a", "Group 0", 5), ("b", "Group 0", 6)])

    def test_pie(self):
        c = chart("fig, ax = plt.subplots()\nax.pie([75, 20, 5], labels=['yes', 'no', 'maybe'], startangle=45, "
                  "autopct='%1.0f%%')\nax.set_title('Votes'); plt.show()")
        self.assertEqual((c["type"], c["title"]), ("pie", "Votes"))
        self.assertEqual([(e["label"], e["angle"], e["radius"]) for e in c["elements"]],
                         [("yes", 270, 1), ("no", 72, 1), ("maybe", 18, 1)])

    def test_box_and_whisker(self):
        c = chart("fig, ax = plt.subplots()\n"
                  "ax.boxplot([[1, 2, 3, 4, 5], [10, 11, 12, 13, 40], [2, 4, 6]], labels=['a', 'b', 'c'], "
                  "patch_artist=True)\nax.set_title('Spread'); ax.set_xlabel('Set'); ax.set_ylabel('Value (kg)')\n"
                  "plt.show()")
        self.assertEqual((c["type"], c["title"], c["x_label"], c["y_label"]), ("box_and_whisker", "Spread", "Set",
                                                                               "Value (kg)"))
        self.assertEqual((c["x_unit"], c["y_unit"]), (None, "kg"))
        got = [(e["label"], e["min"], e["first_quartile"], e["median"], e["third_quartile"], e["max"], e["outliers"])
               for e in c["elements"]]
        self.assertEqual(got, [("a", 1, 2, 3, 4, 5, []), ("b", 10, 11, 12, 13, 13, [40]),
                               ("c", 2, 3, 4, 5, 6, [])])

    def test_pandas_plots(self):
        # pandas places a bar group around its tick, and plots a time series over period ordinals
        c = chart("import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': [3, 4]}, index=['x', 'y']).plot.bar()\n"
                  "plt.show()")
        self.assertEqual([(e["label"], e["group"], e["value"]) for e in c["elements"]],
                         [("x", "a", 1), ("y", "a", 2), ("x", "b", 3), ("y", "b", 4)])
        c = chart("import pandas as pd\n"
                  "pd.Series([1.0, 2.0], index=pd.date_range('2024-01-01', periods=2, freq='M')).plot(); plt.show()")
        self.assertEqual(c["x_scale"], "datetime")
        self.assertEqual(c["elements"][0]["points"], [["2024-01-01T00:00:00", 1.0], ["2024-02-01T00:00:00", 2.0]])

    def test_superchart(self):
        c = chart("fig, (a, b) = plt.subplots(1, 2)\nfig.suptitle('Both')\n"
                  "a.plot(np.arange(10)); a.set_title('Left')\n"
                  "b.scatter([1, 2, 3], [3, 2, 1]); b.set_title('Right'); b.set_xlabel('X'); plt.show()")
        self.assertEqual((c["type"], c["title"]), ("superchart", "Both"))
        got = [(e["type"], e["title"], e["x_label"], len(e["elements"][0]["points"])) for e in c["elements"]]
        self.assertEqual(got, [("line", "Left", None, 10), ("scatter", "Right", "X", 3)])

    def test_unknown_and_blank(self):
        c = chart("fig, ax = plt.subplots()\nax.add_patch(plt.Circle((0, 0), 1))\nax.set_title('Ring'); plt.show()")
        self.assertEqual(c, {"type": "unknown", "title": "Ring", "elements": []})
        self.assertIsNone(chart("plt.figure(); plt.title('empty'); plt.show()"))

    def test_nan_and_many_points(self):
        # JSON has no NaN: a gap in a line is a null; past MAX_POINTS a figure's points are cut and said to be
        c = chart("plt.plot([1.0, float('nan'), 3.0]); plt.plot(np.zeros(150000)); plt.show()")
        self.assertEqual(c["elements"][0]["points"], [[0.0, 1.0], [1.0, None], [2.0, 3.0]])
        self.assertEqual(len(c["elements"][1]["points"]), 100000 - 3)
        self.assertIs(c["truncated"], True)

    def test_no_figure_no_matplotlib(self):
        ctx = new_context()
        evs = run("1 + 1", context_id=ctx["id"])
        self.assertNotIn("chart", of(evs, "result")[0])
        self.assertEqual(text(run("import sys; 'matplotlib' in sys.modules", context_id=ctx["id"])), "False")

class Contexts(unittest.TestCase):
    def test_create_list_remove(self):
        ctx = new_context("python", "/tmp")
        self.assertEqual(ctx["language"], "python")
        self.assertEqual(ctx["cwd"], "/tmp")
        status, data = request("GET", "/contexts")
        self.assertEqual(status, 200)
        listed = json.loads(data)
        self.assertIn(ctx, listed)
        self.assertTrue({"python", "javascript"} <= {c["language"] for c in listed})
        self.assertEqual(request("DELETE", f"/contexts/{ctx['id']}")[0], 200)
        self.assertNotIn(ctx["id"], [c["id"] for c in json.loads(request("GET", "/contexts")[1])])
        status, _ = execute("1", context_id=ctx["id"])
        self.assertEqual(status, 404)
        self.assertEqual(request("DELETE", f"/contexts/{ctx['id']}")[0], 404)

    def test_isolated_with_own_directory(self):
        a, b = new_context(cwd="/tmp"), new_context()
        run("secret = 7; import os; os.chdir('/')", context_id=a["id"])
        evs = run("import os; (os.getcwd(), 'secret' in globals())", context_id=b["id"])
        self.assertEqual(text(evs), f"('{HOME}', False)")
        self.assertEqual(text(run("os.getcwd()", context_id=a["id"])), "/")

    def test_default_cwd_is_home(self):
        self.assertEqual(stdout(run("from pathlib import Path; print(Path.cwd())", language="python")).strip(), HOME)
        self.assertEqual(text(run("process.cwd()", language="js")), HOME)
        self.assertEqual(stdout(run("pwd", language="bash")).strip(), HOME)

    def test_restart_forgets(self):
        ctx = new_context()
        run("x = 1", context_id=ctx["id"])
        self.assertEqual(request("POST", f"/contexts/{ctx['id']}/restart")[0], 200)
        err = of(run("x", context_id=ctx["id"]), "error")
        self.assertEqual(err[0]["value"], "name 'x' is not defined")
        self.assertEqual(request("POST", "/contexts/nope/restart")[0], 404)

    def test_bad_requests(self):
        ctx = new_context()
        self.assertEqual(execute("1", context_id=ctx["id"], language="python")[0], 400)
        self.assertEqual(execute("1", language="cobol")[0], 400)
        self.assertEqual(execute("1", env_vars={"A-B": "x"})[0], 400)
        self.assertEqual(execute(None)[0], 400)
        self.assertEqual(request("POST", "/contexts", {"cwd": "relative"})[0], 400)
        self.assertEqual(request("GET", "/nothing")[0], 404)
        self.assertEqual(request("GET", "/health"), (200, b"OK"))


class EnvVars(unittest.TestCase):
    def check(self, language, read, read_default):
        evs = run(read, language=language, env_vars={"FOO": "bar", "TEST_ENV_VAR": "overwrite"})
        got = stdout(evs).strip() or (text(evs) or "").strip()
        self.assertEqual(got, "bar overwrite")
        evs = run(read_default, language=language)
        got = stdout(evs).strip() or (text(evs) or "").strip()
        self.assertEqual(got, "default supertest")

    def test_python(self):
        self.check("python", "import os; print(os.getenv('FOO'), os.getenv('TEST_ENV_VAR'))",
                   "import os; print(os.getenv('FOO', 'default'), os.getenv('TEST_ENV_VAR'))")

    def test_javascript(self):
        self.check("javascript", "console.log(process.env.FOO, process.env.TEST_ENV_VAR)",
                   "console.log(process.env.FOO || 'default', process.env.TEST_ENV_VAR)")

    def test_bash(self):
        self.check("bash", "echo $FOO $TEST_ENV_VAR", "echo ${FOO:-default} $TEST_ENV_VAR")

    def test_quotes_survive(self):
        value = "it's \"quoted\" $HOME `x` \\ ünïcode"
        evs = run("import os; print(os.environ['Q'])", env_vars={"Q": value})
        self.assertEqual(stdout(evs), value + "\n")
        evs = run("echo \"$Q\"", language="bash", env_vars={"Q": value})
        self.assertEqual(stdout(evs), value + "\n")


class SandboxEnv(unittest.TestCase):
    """A create that takes a pooled sandbox: its envs arrive in the env file after the kernels started."""

    def test_envs_written_after_start_reach_every_kernel(self):
        py = new_context("python")["id"]
        js_used = new_context("javascript")["id"]
        run("let kept = 41", context_id=js_used)
        js_fresh = new_context("javascript")["id"]
        sh = new_context("bash")["id"]
        run("import os; os.getenv('POOL_TAKE', 'unset')", context_id=py)  # started and used before the take
        path = os.path.join(HOME, "sandbox-envs.json")
        with open(path + ".tmp", "w") as f:
            json.dump({"POOL_TAKE": "taken", "SECOND": "2"}, f)
        os.replace(path + ".tmp", path)
        try:
            self.assertEqual(text(run("import os; os.environ['POOL_TAKE'] + os.environ['SECOND']", context_id=py)),
                             "taken2")
            self.assertEqual(text(run("import os; os.environ['POOL_TAKE']")), "taken")  # the default context
            self.assertEqual(text(run("process.env.POOL_TAKE + kept", context_id=js_used)), "taken41")
            self.assertEqual(text(run("process.env.POOL_TAKE", context_id=js_fresh)), "taken")
            self.assertEqual(stdout(run("echo $POOL_TAKE", context_id=sh)), "taken\n")
            later = new_context("python")["id"]
            self.assertEqual(text(run("import os; os.environ['POOL_TAKE']", context_id=later)), "taken")
            # a cell's env_vars still win, for that cell only
            self.assertEqual(text(run("import os; os.environ['POOL_TAKE']", context_id=py,
                                      env_vars={"POOL_TAKE": "cell"})), "cell")
            self.assertEqual(text(run("import os; os.environ['POOL_TAKE']", context_id=py)), "taken")
            # a file that is not an object of strings changes nothing
            with open(path + ".tmp", "w") as f:
                f.write('{"POOL_TAKE": 3}')
            os.replace(path + ".tmp", path)
            self.assertEqual(text(run("import os; os.environ['POOL_TAKE']", context_id=py)), "taken")
        finally:
            os.unlink(path)
            for c in (py, js_used, js_fresh, sh):
                request("DELETE", f"/contexts/{c}")


class JavaScript(unittest.TestCase):
    def test_declarations_persist(self):
        ctx = new_context("javascript")
        run("const a = 5; let [b, c] = [1, 2]; function f(x) { return x * a } class K { v() { return 3 } }",
            context_id=ctx["id"])
        self.assertEqual(text(run("f(b + c) + new K().v()", context_id=ctx["id"])), "18")
        # a notebook re-runs cells: declaring again is no error
        self.assertEqual(text(run("const a = 6; a", context_id=ctx["id"])), "6")

    def test_console_and_objects(self):
        evs = run("console.log('Hello World!'); ({x: [1, 2]})", language="js")
        self.assertEqual(stdout(evs), "Hello World!\n")
        self.assertEqual(text(evs), "{ x: [ 1, 2 ] }")

    def test_imports_and_await(self):
        evs = run("import { readFileSync } from 'fs'\nimport * as p from 'node:path'\nconsole.log(typeof readFileSync)\n"
                  "await Promise.resolve(p.join('a', 'b'))", language="js")
        self.assertEqual(stdout(evs), "function\n")
        self.assertEqual(text(evs), "a/b")
        self.assertEqual(text(run("(await import('os')).EOL.length", language="js")), "1")

    def test_error(self):
        err = of(run("null.x", language="js"), "error")[0]
        self.assertEqual(err["name"], "TypeError")
        self.assertIn("null", err["value"])
        err = of(run("await Promise.reject(new RangeError('no'))", language="js"), "error")[0]
        self.assertEqual((err["name"], err["value"]), ("RangeError", "no"))

    def test_typescript(self):
        ctx = new_context("ts")
        self.assertEqual(ctx["language"], "typescript")
        evs = run("interface P { n: number }\nconst message: string = 'Hello World!'\nconst p: P = { n: 2 }\n"
                  "console.log(message)\np.n as number", context_id=ctx["id"])
        self.assertEqual(stdout(evs), "Hello World!\n")
        self.assertEqual(text(evs), "2")


class Bash(unittest.TestCase):
    def test_state(self):
        ctx = new_context("bash")
        run("X=3; cd /tmp; f() { echo f$1; }; declare -a arr=(a b); declare -i n=4", context_id=ctx["id"])
        self.assertEqual(stdout(run("echo $X; pwd; f 1; echo ${arr[1]} $n", context_id=ctx["id"])),
                         "3\n/tmp\nf1\nb 4\n")

    def test_a_large_cell(self):
        # far more than a pipe holds
        evs = run("x=1\n" + "true\n" * 100000 + "echo $x", language="bash")
        self.assertEqual(stdout(evs), "1\n")
        self.assertEqual(text(run("let s = 0\n" + "s += 1\n" * 50000 + "s", language="js")), "50000")

    def test_status_is_an_error(self):
        evs = run("echo out; false", language="bash")
        self.assertEqual(stdout(evs), "out\n")
        self.assertEqual(of(evs, "error")[0]["value"], "exit status 1")


class Interrupts(unittest.TestCase):
    """A client that goes away interrupts its cell; the context keeps its state and takes the next cell."""

    def check(self, language, setup, endless, probe, want):
        ctx = new_context(language)
        run(setup, context_id=ctx["id"])
        abandon(endless, ctx["id"])
        t0 = time.monotonic()
        evs = run(probe, context_id=ctx["id"], timeout=20)
        self.assertLess(time.monotonic() - t0, 8)
        self.assertEqual(stdout(evs).strip() or text(evs), want)
        self.assertEqual(of(evs, "stderr"), [])  # no restart: the state is still there

    def test_python(self):
        self.check("python", "kept = 41", "import time; time.sleep(300)", "kept + 1", "42")

    def test_javascript_busy_loop(self):
        self.check("javascript", "var kept = 41", "while (true) {}", "kept + 1", "42")

    def test_javascript_await(self):
        self.check("javascript", "var kept = 41", "await new Promise(() => {})", "kept + 1", "42")

    def test_bash(self):
        self.check("bash", "kept=42", "sleep 300; echo never", "echo $kept", "42")

    def test_a_kernel_that_ignores_the_interrupt_is_restarted(self):
        ctx = new_context()
        run("kept = 1", context_id=ctx["id"])
        abandon("import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(300)", ctx["id"])
        evs = run("'kept' in globals()", context_id=ctx["id"], timeout=30)
        self.assertIn("did not stop", of(evs, "stderr")[0]["text"])
        self.assertEqual(text(evs), "False")

    def test_keepalives_while_silent(self):
        evs = run("import time; time.sleep(2.5)")
        self.assertGreaterEqual(len(of(evs, "keepalive")), 1)

    def test_parallel_contexts(self):
        # a long cell in one context does not hold up another
        ctx = new_context()
        abandon("import time; time.sleep(300)", ctx["id"], after=0.2)
        t0 = time.monotonic()
        self.assertEqual(text(run("1 + 1")), "2")
        self.assertLess(time.monotonic() - t0, 5)


class KernelDeath(unittest.TestCase):
    def check(self, language, setup, suicide, probe):
        ctx = new_context(language)
        run(setup, context_id=ctx["id"])
        evs = run(suicide, context_id=ctx["id"])
        err = of(evs, "error")
        self.assertEqual(err[0]["name"], "DeadKernelError")
        self.assertIn("lost", err[0]["value"])
        evs = run(probe, context_id=ctx["id"])
        return evs

    def test_python(self):
        evs = self.check("python", "kept = 1", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "kept")
        self.assertEqual(of(evs, "error")[0]["name"], "NameError")
        self.assertIn("restarted", of(evs, "stderr")[0]["text"])

    def test_javascript(self):
        evs = self.check("javascript", "var kept = 1", "process.kill(process.pid, 'SIGKILL')", "typeof kept")
        self.assertEqual(text(evs), "undefined")

    def test_death_between_cells_is_said(self):
        ctx = new_context("bash")
        run("kept=1", context_id=ctx["id"])
        run("(sleep 0.3; kill -9 $$) &", context_id=ctx["id"])
        time.sleep(1)
        evs = run("echo ${kept:-gone}", context_id=ctx["id"])
        self.assertIn("lost", of(evs, "stderr")[0]["text"])
        self.assertEqual(stdout(evs), "gone\n")


class Restarts(unittest.TestCase):
    def test_a_new_server_says_the_state_was_lost(self):
        home = tempfile.mkdtemp(prefix="hutch-interp-test-")
        try:
            proc, port = start_server(home)
            try:
                self.assertEqual(text(run("x = 5; x", port=port)), "5")
                status, data = request("POST", "/contexts", {"language": "bash"}, port=port)
                mine = json.loads(data)["id"]
            finally:
                stop_server(proc)
            proc, port = start_server(home)
            try:
                evs = run("'x' in globals()", port=port)
                self.assertIn("restarted", of(evs, "stderr")[0]["text"])
                self.assertEqual(text(evs), "False")
                evs = run("echo ok", port=port, context_id=mine)  # the context still exists, fresh
                self.assertIn("restarted", of(evs, "stderr")[0]["text"])
                self.assertEqual(of(run("echo again", port=port, context_id=mine), "stderr"), [])
            finally:
                stop_server(proc)
        finally:
            shutil.rmtree(home, ignore_errors=True)


@unittest.skipUnless(kernels.r_available(), "R with IRkernel is not installed here (the template has it)")
class R(unittest.TestCase):
    def test_r(self):
        ctx = new_context("r")
        run("x <- 41", context_id=ctx["id"])
        self.assertEqual(text(run("x + 1", context_id=ctx["id"])), "[1] 42")
        evs = run("Sys.getenv('FOO')", context_id=ctx["id"], env_vars={"FOO": "bar"})
        self.assertEqual(text(evs), '[1] "bar"')
        self.assertEqual(text(run("Sys.getenv('FOO', 'default')", context_id=ctx["id"])), '[1] "default"')


if __name__ == "__main__":
    unittest.main()
