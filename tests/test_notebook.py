"""Tests of rl_mind.notebook, and of a small notebook executed headless (nbclient)."""

from __future__ import annotations

import base64
import concurrent.futures
import io
import multiprocessing
import os
import re
import sys
from pathlib import Path
from typing import Any

import imageio_ffmpeg
import pytest

import rl_mind.notebook as notebook
from rl_mind import (
    Profile,
    is_notebook,
    outputs_directory,
    progress_bar,
    run_directory,
    setup_tensorboard,
    video_display,
)

NOTEBOOKS = Path(__file__).parent / "notebooks"


def fake_shell(monkeypatch: pytest.MonkeyPatch, class_name: str, module: str) -> None:
    """Make IPython.get_ipython() return an instance of a class called ``class_name``."""
    import IPython

    shell_class = type(class_name, (), {})
    shell_class.__module__ = module
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell_class())


# ---------------------------------------------------------------------- is_notebook
def test_is_notebook_is_false_in_a_script() -> None:
    assert is_notebook() is False


@pytest.mark.parametrize(
    ("class_name", "module", "expected"),
    [
        ("ZMQInteractiveShell", "ipykernel.zmqshell", True),  # Jupyter, VS Code
        ("Shell", "google.colab._shell", True),  # Colab
        ("TerminalInteractiveShell", "IPython.terminal.interactiveshell", False),
    ],
)
def test_is_notebook_recognises_the_front_end(
    monkeypatch: pytest.MonkeyPatch, class_name: str, module: str, expected: bool
) -> None:
    fake_shell(monkeypatch, class_name, module)
    assert is_notebook() is expected


# ---------------------------------------------------------------------- folders
def test_outputs_directory_is_absolute_and_configurable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(notebook.OUTPUTS_ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)
    assert outputs_directory() == (tmp_path / "outputs").resolve()
    assert (tmp_path / "outputs").is_dir()
    monkeypatch.setenv(notebook.OUTPUTS_ENV_VAR, "elsewhere/out")
    assert outputs_directory() == (tmp_path / "elsewhere" / "out").resolve()
    (tmp_path / "a_file").write_text("x")
    monkeypatch.setenv(notebook.OUTPUTS_ENV_VAR, str(tmp_path / "a_file"))
    with pytest.raises(ValueError, match="is a file"):
        outputs_directory()


def test_run_directory_is_a_fresh_timestamped_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(notebook.OUTPUTS_ENV_VAR, str(tmp_path))
    first = run_directory("dqn cartpole/v1")
    second = run_directory("dqn cartpole/v1")
    assert first != second and first.is_dir() and second.is_dir()
    assert first.parent == tmp_path.resolve() and not list(first.iterdir())
    assert re.fullmatch(r"dqn_cartpole_v1-\d{8}-\d{6}(-\d+)?", first.name), first.name
    assert run_directory("x", root=tmp_path / "runs").parent == (tmp_path / "runs").resolve()


def _make_run_directory(root: str) -> str:
    return str(run_directory("same-second", root=root))


def test_run_directory_never_reuses_a_folder_under_concurrent_calls(tmp_path: Path) -> None:
    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        threads = list(pool.map(_make_run_directory, [str(tmp_path)] * 64))
    context = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=4, mp_context=context) as pool:
        processes = list(pool.map(_make_run_directory, [str(tmp_path)] * 16))
    folders = threads + processes
    assert len(set(folders)) == len(folders) == 80
    assert len(list(tmp_path.iterdir())) == 80


# ---------------------------------------------------------------------- TensorBoard
def test_setup_tensorboard_prints_the_command_from_a_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_dir = setup_tensorboard(tmp_path / "logs")
    assert log_dir == (tmp_path / "logs").resolve() and log_dir.is_dir()
    assert f'tensorboard --logdir "{log_dir}"' in capsys.readouterr().out


def test_setup_tensorboard_shows_the_magics_in_a_notebook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import IPython.display

    shown: list[Any] = []
    monkeypatch.setattr(notebook, "is_notebook", lambda: True)
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **_: shown.extend(objs))
    log_dir = setup_tensorboard(tmp_path)
    text = shown[0].data
    assert "%load_ext tensorboard" in text and f'%tensorboard --logdir "{log_dir}"' in text


def test_setup_tensorboard_finds_the_tensorboard_beside_the_kernels_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Jupyter started from a virtual environment that was not activated: the kernel's
    # python is the environment's, PATH has no `tensorboard`, or another one
    import IPython.display

    folder = tmp_path / "venv" / "bin"
    folder.mkdir(parents=True)
    (folder / "python").touch()
    program = folder / "tensorboard"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(folder / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("TENSORBOARD_BINARY", "")  # (restored, or removed, after the test)
    monkeypatch.delenv("TENSORBOARD_BINARY")
    log_dir = setup_tensorboard(tmp_path / "logs")  # a script: the command, with its path
    assert f'{program} --logdir "{log_dir}"' in capsys.readouterr().out
    assert "TENSORBOARD_BINARY" not in os.environ
    shown: list[Any] = []
    monkeypatch.setattr(notebook, "is_notebook", lambda: True)
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **_: shown.extend(objs))
    setup_tensorboard(tmp_path / "logs")
    assert os.environ["TENSORBOARD_BINARY"] == str(program)  # what %tensorboard starts
    assert f'`{program} --logdir "{log_dir}"`' in shown[0].data
    # on PATH, it is named as it is typed; a $TENSORBOARD_BINARY already set is kept
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.setenv("TENSORBOARD_BINARY", "/opt/tb/tensorboard")
    setup_tensorboard(tmp_path / "logs")
    assert f'`tensorboard --logdir "{log_dir}"`' in shown[1].data
    assert os.environ["TENSORBOARD_BINARY"] == "/opt/tb/tensorboard"


_EMBED_TENSORBOARD = """
import os, signal
from rl_mind import setup_tensorboard
log_dir = setup_tensorboard(embed=True)
from tensorboard import manager
started = [info for info in manager.get_all() if str(log_dir) in info.logdir]
print("started", len(started))
for info in started:
    os.kill(info.pid, signal.SIGTERM)
"""


@pytest.mark.slow
def test_tensorboard_starts_in_a_kernel_whose_path_does_not_have_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not (Path(sys.executable).parent / "tensorboard").is_file():
        pytest.skip(f"no tensorboard program beside {sys.executable}")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # (the kernel is `python`: sys.executable)
    monkeypatch.delenv("TENSORBOARD_BINARY", raising=False)
    monkeypatch.setenv("RL_MIND_OUTPUTS", str(tmp_path / "outputs"))
    (outputs,) = _run_cells([_EMBED_TENSORBOARD], tmp_path)
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "Could not find `tensorboard`" not in text and "started 1" in text, outputs


# ---------------------------------------------------------------------- videos
def make_video(path: Path, n_frames: int = 5) -> Path:
    import numpy as np

    from rl_mind import write_video

    frames = [np.full((16, 24, 3), 40 * i, dtype=np.uint8) for i in range(n_frames)]
    return write_video(frames, path, fps=10)


def test_video_display_prints_the_path_from_a_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = make_video(tmp_path / "clip.mp4")
    video_display(path)
    assert str(path) in capsys.readouterr().out
    with pytest.raises(FileNotFoundError, match="missing.mp4"):
        video_display(tmp_path / "missing.mp4")


def test_video_display_embeds_the_video_in_a_notebook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import IPython.display

    shown: list[Any] = []
    monkeypatch.setattr(notebook, "is_notebook", lambda: True)
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **_: shown.extend(objs))
    path = make_video(tmp_path / "clip.mp4")
    video_display(path)
    html = shown[0]._repr_html_()
    payload = re.search(r"data:video/mp4;base64,([A-Za-z0-9+/=\s]+)", html)
    assert payload is not None
    assert base64.b64decode(payload.group(1)) == path.read_bytes()


# ---------------------------------------------------------------------- progress and profile
class FakeResult:
    def __init__(self, mean: float, step: int = 0) -> None:
        self.mean = mean
        self.step = step


class FakeEvaluator:
    def __init__(self) -> None:
        self.history: list[FakeResult] = []
        self.best_reward: float | None = None


def test_progress_bar_refuses_swapped_or_wrong_arguments_at_once() -> None:
    # (the swap used to fail only at update_to, inside the training loop)
    with pytest.raises(
        TypeError, match=r"total must be .*call progress_bar\(total_steps, evaluator\)"
    ):
        progress_bar(FakeEvaluator(), 100)  # type: ignore[arg-type]
    for total in (-1, 2.5, None):
        with pytest.raises(TypeError, match="total must be the number of training steps"):
            progress_bar(total)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="evaluator must be an Evaluator"):
        progress_bar(100, 100)  # type: ignore[arg-type]


def test_progress_bar_tracks_steps_and_shows_the_latest_evaluation() -> None:
    evaluator = FakeEvaluator()
    output = io.StringIO()
    with progress_bar(
        1000, evaluator, file=output, mininterval=0, ascii=True, disable=False
    ) as progress:
        progress.update_to(100)
        assert progress.n == 100
        evaluator.history.append(FakeResult(12.25))
        evaluator.best_reward = 12.25
        progress.update_to(300)
        progress.update_to(250)  # a step counter never goes back
        assert progress.n == 300
        progress.update_to(400, loss=0.5)
        assert progress.bar.postfix is not None
        assert "eval=12.2" in progress.bar.postfix and "loss=0.5" in progress.bar.postfix
    assert "eval=12.2" in output.getvalue()


def test_a_bar_stopped_at_its_target_ends_full_and_says_so() -> None:
    evaluator = FakeEvaluator()
    output = io.StringIO()
    progress = progress_bar(
        1000, evaluator, target=475, file=output, mininterval=0, ascii=True, disable=False
    )
    progress.update_to(200)
    evaluator.history += [FakeResult(120.0, step=200), FakeResult(480.0, step=300)]
    progress.update_to(300)
    assert progress.target_step == 300
    progress.close()
    progress.close()  # closing twice does nothing
    final = output.getvalue().split("\r")[-1]
    assert "training: target reached at step 300" in final and "100%" in final, final
    assert "300/300" in final and "1000" not in final, final


def test_a_bar_stopped_before_its_target_or_by_an_error_keeps_its_budget() -> None:
    evaluator = FakeEvaluator()
    for reached in (False, True):
        output = io.StringIO()
        evaluator.history = [FakeResult(480.0 if reached else 100.0, step=300)]
        with (
            pytest.raises(RuntimeError),
            progress_bar(
                1000, evaluator, target=475, file=output, mininterval=0, ascii=True, disable=False
            ) as progress,
        ):
            progress.update_to(300)
            raise RuntimeError("interrupted")  # an error: never "target reached"
        final = output.getvalue().split("\r")[-1]
        assert "300/1000" in final and "target reached" not in final, final
    output = io.StringIO()
    evaluator.history = [FakeResult(100.0, step=300)]
    with progress_bar(1000, evaluator, target=475, file=output, disable=False) as progress:
        progress.update_to(300)  # a break before the target
    assert "300/1000" in output.getvalue() and "target reached" not in output.getvalue()


def test_progress_bar_refuses_a_bad_target_at_once() -> None:
    with pytest.raises(TypeError, match="target must be a return"):
        progress_bar(100, FakeEvaluator(), target="475")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="a target needs the evaluator"):
        progress_bar(100, target=475)


def _run_cells(cells: list[str], tmp_path: Path) -> list[Any]:
    """Execute ``cells`` in a fresh Jupyter kernel; the outputs of each cell."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code) for code in cells])
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    return [cell.outputs for cell in nb.cells]


_TRAIN = """
import warnings
warnings.simplefilter("always")  # (a warning shown once per session must show here)
from rl_mind import progress_bar
progress = progress_bar(200)
for steps in range(0, 201, 50):
    progress.update_to(steps)
progress.close()
"""


def test_the_progress_bar_shows_in_a_notebook_with_or_without_ipywidgets(tmp_path: Path) -> None:
    # a plain Jupyter install has no ipywidgets: a text bar, without tqdm's warning
    without, with_widgets = _run_cells(
        ['import sys\nsys.modules["ipywidgets"] = None  # as if not installed\n' + _TRAIN,
         'del sys.modules["ipywidgets"]\n' + _TRAIN],
        tmp_path,
    )  # fmt: skip
    text = "".join(o.get("text", "") for o in without if o.output_type == "stream")
    assert "200/200" in text and "100%" in text, without
    assert all(o.output_type == "stream" and o.name == "stdout" for o in without), without
    assert "Warning" not in text and "IProgress" not in text
    # with ipywidgets installed, tqdm's widget, and nothing else; once closed, the widget is
    # replaced by a static picture of its final state (a saved notebook keeps no widget
    # state: a frontend would show "Error displaying widget: model not found")
    assert [o.output_type for o in with_widgets] == ["display_data"], with_widgets
    assert "application/vnd.jupyter.widget-view+json" not in with_widgets[0].data
    html, plain = with_widgets[0].data["text/html"], with_widgets[0].data["text/plain"]
    assert 'class="rl-mind-progress" data-state="success"' in html, html
    assert "100%" in html and "200/200" in html and "100%" in plain and "200/200" in plain


_TRAIN_TO_TARGET = """
from types import SimpleNamespace
from rl_mind import progress_bar
evaluator = SimpleNamespace(history=[], best_reward=None)
progress = progress_bar(1000, evaluator, target=475)
for steps in range(0, 1001, 100):
    evaluator.history.append(SimpleNamespace(step=steps, mean=steps * 1.6))
    progress.update_to(steps)
    if evaluator.history[-1].mean >= 475:
        break
progress.close()
print(getattr(progress.bar, "container", None) and progress.bar.container.children[1].bar_style)
"""


def test_a_notebook_bar_stopped_at_its_target_ends_green_and_saves_its_final_state(
    tmp_path: Path,
) -> None:
    without, with_widgets = _run_cells(
        ['import sys\nsys.modules["ipywidgets"] = None  # as if not installed\n' + _TRAIN_TO_TARGET,
         'del sys.modules["ipywidgets"]\n' + _TRAIN_TO_TARGET],
        tmp_path,
    )  # fmt: skip
    text = "".join(o.get("text", "") for o in without if o.output_type == "stream")
    final = text.split("\r")[-1]
    assert "target reached at step 300" in final and "300/300" in final, text
    # the widget: green, and what a saved notebook shows instead is the final state
    widget, style = with_widgets
    assert style.text.strip() == "success", with_widgets
    plain = widget.data["text/plain"]
    assert "target reached at step 300" in plain and "100%" in plain, plain
    assert "application/vnd.jupyter.widget-view+json" not in widget.data
    html = widget.data["text/html"]
    assert "target reached at step 300" in html and 'data-state="success"' in html, html
    assert "width: 100.0%; height: 100%; background-color: #5cb85c" in html


def test_a_loop_that_passes_its_budget_ends_with_a_count_and_a_percentage() -> None:
    # (a collector counts steps in chunks: the last update passes total_steps, where tqdm
    # would end "1183/?" with no percentage)
    output = io.StringIO()
    with progress_bar(1000, file=output, mininterval=0, ascii=True, disable=False) as progress:
        for steps in (512, 1024, 1183):
            progress.update_to(steps)
    final = output.getvalue().split("\r")[-1]
    assert "1183/1183" in final and "100%" in final and "?" not in final, final


def test_the_unit_of_a_bar_is_what_it_counts() -> None:
    output = io.StringIO()
    with progress_bar(300, unit="s", file=output, mininterval=0, disable=False) as progress:
        progress.update_to(150)
    final = output.getvalue().split("\r")[-1]
    assert "150/300" in final and "step" not in final and "s/s" in final, final


_INTERRUPTED = """
from rl_mind import progress_bar
for stop, steps in ((KeyboardInterrupt, 300), (RuntimeError, 1000)):
    try:
        with progress_bar(1000) as progress:
            progress.update_to(steps)
            raise stop  # the ■ button mid-way, an error once the budget is spent
    except stop:
        pass
    print(progress.bar.container.children[1].bar_style)
with progress_bar(1000) as progress:
    for steps in (512, 1024, 1183):
        progress.update_to(steps)
"""


def test_a_notebook_bar_left_by_an_interrupt_or_an_error_ends_red(tmp_path: Path) -> None:
    (outputs,) = _run_cells([_INTERRUPTED], tmp_path)
    shown = [o.data for o in outputs if o.output_type == "display_data"]
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert printed.split() == ["danger", "danger"], outputs
    assert len(shown) == 3 and all(
        "application/vnd.jupyter.widget-view+json" not in d for d in shown
    )
    interrupted, full, past = shown
    assert 'data-state="danger"' in interrupted["text/html"]
    assert "300/1000" in interrupted["text/plain"] and " 30%" in interrupted["text/plain"]
    assert "background-color: #d9534f" in interrupted["text/html"]  # red
    assert 'data-state="danger"' in full["text/html"] and "1000/1000" in full["text/plain"]
    assert 'data-state="success"' in past["text/html"] and "1183/1183" in past["text/plain"]
    assert "100%" in past["text/plain"]


def test_the_progress_bar_shows_in_a_terminal_and_not_in_a_log(tmp_path: Path) -> None:
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import termios

    script = "import warnings\nwarnings.simplefilter('always')\n" + _TRAIN.split("\n", 3)[3]
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 100 columns
    process = subprocess.Popen(
        [sys.executable, "-c", script], stdin=secondary, stdout=secondary, stderr=secondary
    )
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(primary, 4096)
        except OSError:  # the terminal closes when the process ends
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(primary)
    assert process.wait(timeout=60) == 0
    screen = b"".join(chunks).decode(errors="replace")
    assert "200/200" in screen and "100%" in screen, screen
    assert "Warning" not in screen, screen
    # written to a file (a log), the bar stays out of it
    logged = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert "200/200" not in logged.stdout + logged.stderr and "Warning" not in logged.stderr


def test_profile_pick_switches_on_the_environment_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RL_MIND_FAST_TEST", raising=False)
    assert Profile.pick(100_000, fast_test=500) == 100_000 and Profile.name() == "full"
    for value in ("1", "true", "YES"):
        monkeypatch.setenv("RL_MIND_FAST_TEST", value)
        assert Profile.pick(100_000, fast_test=500) == 500 and Profile.name() == "fast_test"
    monkeypatch.setenv("RL_MIND_FAST_TEST", "0")
    assert Profile.pick("full", fast_test="tiny") == "full"


# ---------------------------------------------------------------------- an executed notebook
def test_a_notebook_evaluates_an_actor_and_embeds_its_video(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("RL_MIND_FAST_TEST", "1")
    monkeypatch.setenv(notebook.OUTPUTS_ENV_VAR, str(tmp_path / "outputs"))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(NOTEBOOKS / "evaluate_and_watch.ipynb", as_version=4)
    client = NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    saved = tmp_path / "executed.ipynb"
    nbformat.write(nb, saved)
    outputs = [
        o for cell in nbformat.read(saved, as_version=4).cells for o in cell.get("outputs", [])
    ]
    html = "".join(str(o.get("data", {}).get("text/html", "")) for o in outputs)
    payload = re.search(r"data:video/mp4;base64,([A-Za-z0-9+/=\s]+)", html)
    assert payload is not None, "the video is embedded in the saved notebook"
    video = tmp_path / "from_notebook.mp4"
    video.write_bytes(base64.b64decode(payload.group(1)))
    reader = imageio_ffmpeg.read_frames(str(video))
    meta = next(reader)
    assert meta["size"] == (600, 400) and sum(1 for _ in reader) == 31  # fast-test: 30 steps
    # the run folder holds the event file and the best actor; the plot and widget were shown
    runs = list((tmp_path / "outputs").glob("notebook-test-*"))
    assert len(runs) == 1
    assert (runs[0] / "best_actor.pt").is_file() and list(runs[0].glob("events.out.tfevents.*"))
    assert any("image/png" in o.get("data", {}) for o in outputs)
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)
    text = "".join(str(o.get("text", "")) for o in outputs)
    assert "best mean return: 500.0" in text
    assert re.search(r"FrameViewer\([2-8] frames kept of 13", text), text
