"""The practicals as a student sees them: JupyterLab in a headless Chromium.

Headless runs (nbclient) check what the kernel sends; what a frontend makes of it is another
matter (a widget a saved notebook cannot show again, a video the browser cannot play, a
traceback through the check's frames). This test drives Debian's ``chromium`` with
Selenium (its ``chromedriver``, no download) against a JupyterLab served on 127.0.0.1 with
a token, at the fast-test profile:

- a solution notebook, Run All: the progress bar's widget renders and ends complete, the
  video plays, the check lines are visible; saved, its kernel shut down and the page
  reloaded, the bar's final state is still there and no "Error displaying widget";
- a student notebook with a wrong answer, Run All: it stops at the check, with the ``✗``
  line and no traceback.

It skips, saying why, where no browser can be installed (``.ci/run`` installs one:
``apt-get install chromium chromium-driver``). Screenshots of what the student sees go to
``$RL_MIND_BROWSER_SCREENSHOTS`` when set (and beside the test's files on a failure).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def _missing() -> str | None:
    """Why the test cannot run here (None: it can)."""
    for program in (CHROMIUM, CHROMEDRIVER):
        if not program.is_file():
            return (
                f"no {program} (Debian: apt-get install chromium chromium-driver; .ci/run "
                f"installs them)"
            )
    for module in ("selenium", "jupyterlab", "ipywidgets"):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed (it is in the test extra: pip install -e '.[test]')"
    return None


pytestmark = [pytest.mark.slow, pytest.mark.skipif(_missing() is not None, reason=str(_missing()))]

# While Run All works, a page script records what the student would have seen at any time:
# the bar's widget, and any "Error displaying widget".
WATCH = """
window.rlMindSeen = {widget: false, widgetError: false};
new MutationObserver(() => {
    const seen = window.rlMindSeen;
    if (document.querySelector('.jp-OutputArea-output .widget-hprogress')) seen.widget = true;
    if (document.body.innerText.includes('Error displaying widget')) seen.widgetError = true;
}).observe(document.body, {childList: true, subtree: true, characterData: true});
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Lab:
    """A JupyterLab server and a headless Chromium on it; ``stop()`` ends both."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        self.shots = Path(os.environ.get("RL_MIND_BROWSER_SCREENSHOTS", root / "screenshots"))
        settings = root / ".settings"
        # (no "Would you like to get notified about official Jupyter news?" over the page)
        news = settings / "lab" / "@jupyterlab" / "apputils-extension"
        news.mkdir(parents=True)
        (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
        env = {
            **os.environ,
            "RL_MIND_FAST_TEST": "1",
            "RL_MIND_OUTPUTS": str(root / "outputs"),
            "MPLBACKEND": "module://matplotlib_inline.backend_inline",  # (the tests' is Agg)
            "JUPYTER_RUNTIME_DIR": str(settings / "runtime"),
            "JUPYTERLAB_SETTINGS_DIR": str(settings / "lab"),
            "JUPYTERLAB_WORKSPACES_DIR": str(settings / "workspaces"),
        }
        command = [
            sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
            f"--port={self.port}", f"--ServerApp.token={self.token}",
            f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0", "--allow-root",
            "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: its commands
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ]  # fmt: skip
        self.log = (root / "jupyterlab.log").open("w")
        # (a session of its own: stop() ends the server and its kernels together)
        self.server = subprocess.Popen(
            command, cwd=root, env=env, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        self.driver: Any = None
        try:
            self._wait_for_server()
            self.driver = self._browser()
        except BaseException:
            self.stop()
            raise

    def _wait_for_server(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.server.poll() is not None:
                raise RuntimeError(f"JupyterLab exited: {self.logged()}")
            try:
                self.api("GET", "/api/status")
                return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"JupyterLab did not answer in {timeout:.0f} s: {self.logged()}")

    def logged(self) -> str:
        self.log.flush()
        return (self.root / "jupyterlab.log").read_text()[-3000:]

    def api(self, method: str, path: str) -> Any:
        request = urllib.request.Request(
            f"{self.url}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def _browser(self) -> Any:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                         "--window-size=1400,1000", "--autoplay-policy=no-user-gesture-required",
                         f"--user-data-dir={self.root / '.settings' / 'chromium'}"):  # fmt: skip
            options.add_argument(argument)
        service = Service(
            executable_path=str(CHROMEDRIVER), log_output=str(self.root / "driver.log")
        )
        driver = webdriver.Chrome(options=options, service=service)
        driver.set_script_timeout(60)
        return driver

    def stop(self) -> None:
        driver, self.driver = self.driver, None
        try:
            if driver is not None:
                driver.quit()  # the browser
        finally:
            self._stop_server()

    def _stop_server(self) -> None:
        if self.server.poll() is None:
            os.killpg(self.server.pid, signal.SIGTERM)  # the server and its kernels
            try:
                self.server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.server.pid, signal.SIGKILL)
                self.server.wait(timeout=20)
        self.log.close()

    # ------------------------------------------------------------------ in the page
    def screenshot(self, name: str) -> Path:
        self.shots.mkdir(parents=True, exist_ok=True)
        path = self.shots / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def wait(self, what: str, ready: Callable[[], Any], timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = ready()
            if value:
                return value
            if time.monotonic() > deadline:
                shot = self.screenshot(f"timeout-{what.replace(' ', '-')}")
                raise AssertionError(f"{what}: not after {timeout:.0f} s (screenshot: {shot})")
            time.sleep(0.5)

    def run(self, script: str, *args: Any) -> Any:
        return self.driver.execute_script(script, *args)

    def command(self, name: str) -> None:
        """Run a JupyterLab command (what its menu item runs) and wait until it is done."""
        error = self.driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "window.jupyterapp.commands.execute(arguments[0]).then(() => done(null),"
            " (error) => done(String(error)));",
            name,
        )
        assert error is None, f"JupyterLab's command {name} failed: {error}"

    def open(self, notebook: str) -> None:
        """Open ``notebook`` alone (a workspace of its own: no tab restored from another
        test), and wait until it is the current tab with its kernel idle."""
        workspace = notebook.removesuffix(".ipynb")
        self.driver.get(f"{self.url}/lab/workspaces/{workspace}/tree/{notebook}?token={self.token}")
        self.wait(
            f"{notebook} open with its kernel idle",
            lambda: self.run(
                "const app = window.jupyterapp; const widget = app && app.shell.currentWidget;"
                "return !!(widget && widget.context && widget.context.path === arguments[0]"
                " && widget.sessionContext && widget.content && widget.content.widgets.length"
                " && widget.sessionContext.session && widget.sessionContext.session.kernel"
                " && widget.sessionContext.kernelDisplayStatus === 'idle');",
                notebook,
            ),
            120,
        )

    def run_all(self, timeout: float) -> None:
        """Run All (the command of Run → Run All Cells), then wait until the first code
        cell ran and no cell is running or queued any more."""
        self.run(WATCH)
        self.run("window.jupyterapp.commands.execute('notebook:run-all-cells'); return null;")
        self.wait(
            "Run All done",
            lambda: self.run(
                "const widget = window.jupyterapp.shell.currentWidget;"
                "const cells = widget.content.widgets.filter((c) => c.model.type === 'code');"
                "return widget.sessionContext.kernelDisplayStatus === 'idle'"
                " && cells[0].model.executionCount !== null"
                " && !cells.some((c) => c.model.executionState === 'running');"
            ),
            timeout,
        )

    def outputs(self) -> list[dict[str, Any]]:
        """Every code cell of the notebook: its index, source, execution count, number of
        errors, and the text of its outputs (from the notebook's model: a cell scrolled
        out of view is not drawn)."""
        return list(
            self.run(
                "const text = (o) => o.output_type === 'stream' ? o.text"
                " : o.output_type === 'error' ? o.traceback.join('\\n')"
                " : (o.data && o.data['text/plain']) || '';"
                "return window.jupyterapp.shell.currentWidget.content.widgets"
                ".map((cell, index) => ({cell, index}))"
                ".filter(({cell}) => cell.model.type === 'code').map(({cell, index}) => {"
                " const outputs = cell.model.outputs.toJSON(); return {index,"
                " source: cell.model.sharedModel.getSource(),"
                " count: cell.model.executionCount,"
                " errors: outputs.filter((o) => o.output_type === 'error').length,"
                " widgets: outputs.filter((o) => o.data"
                " && o.data['application/vnd.jupyter.widget-view+json']).length,"
                " html: outputs.map((o) => (o.data && o.data['text/html']) || '').join(''),"
                " text: outputs.map(text).join('')};});"
            )
        )

    def shown(self, index: int) -> dict[str, Any]:
        """What the student sees of cell ``index``'s outputs once scrolled to it: the text
        drawn, and its height on the page."""
        self.driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "const notebook = window.jupyterapp.shell.currentWidget.content;"
            "notebook.activeCellIndex = arguments[0];"
            "Promise.resolve(notebook.scrollToItem(arguments[0], 'center'))"
            ".then(() => setTimeout(() => done(null), 500));",
            index,
        )
        return dict(
            self.run(
                "const cell = window.jupyterapp.shell.currentWidget.content.widgets[arguments[0]];"
                "const node = cell.outputArea.node;"
                "return {text: node.innerText, height: node.getBoundingClientRect().height};",
                index,
            )
        )

    def bar(self) -> dict[str, Any] | None:
        """The progress bar on the page (None: none): its state, its text, and whether it
        is drawn."""
        return self.run(
            "const bar = document.querySelector('.rl-mind-progress');"
            "return bar && {state: bar.dataset.state, text: bar.innerText,"
            " visible: bar.getBoundingClientRect().height > 0};"
        )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """One JupyterLab and one browser for the tests of this module, ended after them
    whatever happens."""
    running = Lab(tmp_path_factory.mktemp("lab"))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def lab(server: Lab, request: pytest.FixtureRequest) -> Iterator[Lab]:
    yield server
    # what the page showed last (on a failure: where it stopped)
    server.screenshot(f"{request.node.name}-last")


def test_a_solution_notebook_runs_plays_and_keeps_its_bar_once_saved(lab: Lab) -> None:
    shutil.copy(ROOT / "notebooks" / "solutions" / "dqn.ipynb", lab.root / "dqn_solution.ipynb")
    lab.open("dqn_solution.ipynb")
    started = time.monotonic()
    lab.run_all(timeout=300)
    ran_in = time.monotonic() - started
    cells = lab.outputs()
    lab.screenshot("solution-after-run-all")
    assert all(cell["count"] for cell in cells), [c["source"][:40] for c in cells if not c["count"]]
    assert not [c["text"] for c in cells if c["errors"]], "a cell failed"

    # the bar: its widget rendered while training, and it ended complete (green, 100%)
    seen = lab.run("return window.rlMindSeen")
    assert seen["widget"], "the progress bar's widget never rendered"
    assert not seen["widgetError"]
    bar = lab.bar()
    assert bar and bar["visible"], bar
    assert bar["state"] == "success" and "100%" in bar["text"], bar

    # the checks' lines are visible
    checks = [c for c in cells if c["source"].startswith("check_")]
    assert len(checks) == 2
    for cell in checks:
        assert cell["text"].startswith("✓ ") and " passes " in cell["text"], cell
        shown = lab.shown(cell["index"])
        assert shown["text"].strip() == cell["text"].strip() and shown["height"] > 0, shown
    lab.screenshot("solution-check")

    # the video plays
    video = lab.run(
        "const video = document.querySelector('.jp-OutputArea-output video');"
        "if (!video) return null;"
        "video.scrollIntoView(); video.play();"
        "return {ready: video.readyState, duration: video.duration, error: video.error"
        " && video.error.message};"
    )
    assert video is not None, "no video in the notebook"
    video = lab.wait(
        "the video ready to play",
        lambda: lab.run(
            "const video = document.querySelector('.jp-OutputArea-output video');"
            "return video.readyState === 4 && {ready: video.readyState,"
            " duration: video.duration, error: video.error && video.error.message,"
            " time: video.currentTime};"
        ),
        30,
    )
    assert video["duration"] > 0 and video["error"] is None, video
    lab.screenshot("solution-video")

    # saved, its kernel shut down (no widget model left anywhere), reopened
    lab.command("docmanager:save")
    for session in lab.api("GET", "/api/sessions"):
        lab.api("DELETE", f"/api/sessions/{session['id']}")
    lab.open("dqn_solution.ipynb")
    reopened = lab.outputs()
    assert [c["text"] for c in reopened] == [c["text"] for c in cells]  # as saved
    assert not any(c["widgets"] for c in reopened), "a widget that a reopened notebook lacks"
    (training,) = [c for c in reopened if "rl-mind-progress" in c["html"]]
    lab.shown(training["index"])
    lab.wait(
        "the training cell drawn",
        lambda: lab.run("return !!document.querySelector('.rl-mind-progress')"),
        30,
    )
    time.sleep(2)  # (a widget view that cannot find its model says so at once)
    shown = lab.shown(training["index"])
    bar = lab.bar()
    lab.screenshot("solution-reopened")
    assert "Error displaying widget" not in shown["text"] + lab.run(
        "return document.body.innerText"
    )
    assert bar and bar["visible"] and bar["state"] == "success" and "100%" in bar["text"], bar
    print(f"solution notebook: Run All took {ran_in:.0f} s in the browser")


def test_a_wrong_answer_stops_run_all_at_its_check_with_one_line(lab: Lab) -> None:
    import nbformat

    from tests.student_notebooks import wrong_dqn_student

    student = wrong_dqn_student()
    solution = nbformat.read(ROOT / "notebooks" / "solutions" / "dqn.ipynb", as_version=4)
    (loss,) = [c.source for c in student.cells if "def dqn_loss" in c.source]
    assert loss not in [c.source for c in solution.cells], "the loss is the solution's"
    nbformat.write(student, lab.root / "dqn_student.ipynb")
    lab.open("dqn_student.ipynb")
    lab.run_all(timeout=180)
    cells = lab.outputs()
    lab.screenshot("student-wrong-answer")
    failed = [i for i, c in enumerate(cells) if "✗" in c["text"]]
    assert len(failed) == 1, [c["text"][:80] for c in cells]
    check = cells[failed[0]]
    assert check["source"] == "check_dqn_loss(dqn_loss)" and check["errors"] == 1
    assert "✗ dqn_loss: case 1/2 (the greedy actions were taken) fails" in check["text"]
    assert all(cell["count"] is None for cell in cells[failed[0] + 1 :]), "Run All went on"
    shown = lab.shown(check["index"])
    lab.screenshot("student-wrong-answer-check")
    # (above it, torch's own warning about the broadcast, at the student's line)
    assert shown["height"] > 0 and "\n✗ dqn_loss: case 1/2" in "\n" + shown["text"], shown
    for text in (check["text"], shown["text"]):  # the message alone: no traceback
        assert "Traceback" not in text and "Cell In[" not in text and "----" not in text
        assert "rl_mind" not in text and "engine.py" not in text


def test_the_student_notebook_as_shipped_stops_at_its_first_gap_with_one_line(lab: Lab) -> None:
    shutil.copy(ROOT / "notebooks" / "dqn.ipynb", lab.root / "dqn.ipynb")
    lab.open("dqn.ipynb")
    lab.run_all(timeout=120)
    cells = lab.outputs()
    failed = [c for c in cells if c["errors"]]
    assert [c["source"] for c in failed] == ["check_dqn_td_target(dqn_td_target)"]
    shown = lab.shown(failed[0]["index"])
    lab.screenshot("student-as-shipped")
    assert shown["height"] > 0, shown
    (line,) = shown["text"].strip().split("\n")  # one line (wrapped on the page, if long)
    assert line.startswith("✗ dqn_td_target is not written yet") and "YOUR CODE HERE" in line
    assert "rl_mind" not in line and "Traceback" not in line
