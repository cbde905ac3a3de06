"""The unmodified e2b-code-interpreter SDK (pinned with hashes in requirements.txt) against the code interpreter
server on an ephemeral loopback port. As in sdk/sdk.test.mjs, the SDK's sandbox_url points straight at the server
(what E2B_SANDBOX_URL does), so the requests and the parsing of the answers are the SDK's own. run.sh runs it in a
venv it makes.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from e2b import ConnectionConfig, TimeoutException
from e2b_code_interpreter import Sandbox
from e2b_code_interpreter.charts import BarChart
from packaging.version import Version

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "server", "server.py")
PROC = HOME = SBX = None


def setUpModule():
    global PROC, HOME, SBX
    HOME = tempfile.mkdtemp(prefix="hutch-interp-sdkpy-")
    env = dict(os.environ, HOME=HOME, TEST_ENV_VAR="supertest")
    # Debian's python3 runs the server and its kernels; this venv's python only runs the SDK
    PROC = subprocess.Popen(["/usr/bin/python3", SERVER, "--host", "127.0.0.1", "--port", "0"], cwd=HOME, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    line = PROC.stdout.readline().decode()
    assert "listening on" in line, line
    port = int(line.rsplit(":", 1)[1])
    cfg = ConnectionConfig(api_key="e2b_" + "0" * 40, sandbox_url=f"http://127.0.0.1:{port}", request_timeout=30)
    SBX = Sandbox(sandbox_id="local", envd_version=Version("0.6.3"), envd_access_token="token", sandbox_domain=None,
                  connection_config=cfg)


def tearDownModule():
    PROC.terminate()
    try:
        PROC.wait(timeout=15)
    except subprocess.TimeoutExpired:
        PROC.kill()
        PROC.wait()
    shutil.rmtree(HOME, ignore_errors=True)


class SDK(unittest.TestCase):
    def test_statefulness(self):
        ctx = SBX.create_code_context()
        SBX.run_code("x = 1", context=ctx)
        r = SBX.run_code("x += 1; x", context=ctx)
        self.assertEqual(r.text, "2")
        self.assertEqual(r.execution_count, 2)

    def test_callbacks(self):
        out, err, res, errors = [], [], [], []
        SBX.run_code("print('hello')", on_stdout=out.append)
        self.assertEqual([m.line for m in out], ["hello\n"])
        SBX.run_code("import sys; print('bad', file=sys.stderr)", on_stderr=err.append)
        self.assertEqual([m.line for m in err], ["bad\n"])
        SBX.run_code("x = 1; x", on_result=res.append)
        self.assertEqual(len(res), 1)
        r = SBX.run_code("xyz", on_error=errors.append)
        self.assertEqual(len(errors), 1)
        self.assertEqual(r.error.name, "NameError")
        self.assertEqual(r.error.value, "name 'xyz' is not defined")

    def test_png_chart_and_dataframe(self):
        r = SBX.run_code("import matplotlib.pyplot as plt\nplt.bar(['a', 'b'], [3, 4], label='n')\nplt.show()")
        self.assertIsNotNone(r.results[0].png)
        self.assertEqual(r.results[0].formats(), ["text", "png", "chart"])
        chart = r.results[0].chart
        self.assertIsInstance(chart, BarChart)
        self.assertEqual([(b.label, b.group, b.value) for b in chart.elements], [("a", "n", 3), ("b", "n", 4)])
        r = SBX.run_code("import pandas as pd\npd.DataFrame({'a': [1, 2, 3]})")
        self.assertIn("<table", r.results[0].html)
        self.assertEqual(r.results[0].data, {"a": [1, 2, 3]})

    def test_contexts(self):
        ctx = SBX.create_code_context(language="python", cwd="/tmp")
        self.assertEqual(ctx.cwd, "/tmp")
        self.assertIn(ctx.id, [c.id for c in SBX.list_code_contexts()])
        SBX.run_code("x = 1", context=ctx)
        SBX.restart_code_context(ctx)
        self.assertEqual(SBX.run_code("x", context=ctx).error.value, "name 'x' is not defined")
        SBX.remove_code_context(ctx)
        self.assertNotIn(ctx.id, [c.id for c in SBX.list_code_contexts()])

    def test_env_vars(self):
        r = SBX.run_code("import os; os.getenv('TEST_ENV_VAR')", envs={"TEST_ENV_VAR": "overwrite"})
        self.assertEqual(r.results[0].text.strip(), "overwrite")
        r = SBX.run_code("import os; os.getenv('TEST_ENV_VAR')")
        self.assertEqual(r.results[0].text.strip(), "supertest")
        r = SBX.run_code("echo $FOO", language="bash", envs={"FOO": "bar"})
        self.assertEqual(r.logs.stdout[0], "bar\n")

    def test_other_languages(self):
        self.assertEqual(SBX.run_code("console.log('Hello World!')", language="js").logs.stdout, ["Hello World!\n"])
        self.assertEqual(SBX.run_code("const m: string = 'typed'; m", language="ts").text, "typed")
        self.assertEqual(SBX.run_code("pwd", language="bash").logs.stdout[0].strip(), HOME)

    def test_timeout_interrupts(self):
        with self.assertRaises(TimeoutException):
            SBX.run_code("import time; time.sleep(300)", timeout=2)
        self.assertEqual(SBX.run_code("1 + 1", timeout=10).text, "2")


if __name__ == "__main__":
    unittest.main()
