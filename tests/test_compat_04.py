"""rl-mind 0.4's public names: each works (warning with the new spelling) or names its
replacement. docs/guide/migration.md lists them all; tests/test_readme_04.py runs 0.4's
README examples."""

from __future__ import annotations

import importlib
import re
import sys

import gymnasium
import numpy as np
import pytest
import torch

import rl_mind
from rl_mind import Action, FrameViewer, Profile, VecEnv
from rl_mind.notebook import FAST_TEST_ENV_VAR, LEGACY_PROFILE_ENV_VAR


@pytest.fixture
def no_switch(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv(FAST_TEST_ENV_VAR, raising=False)
    monkeypatch.delenv(LEGACY_PROFILE_ENV_VAR, raising=False)
    return monkeypatch


# ---------------------------------------------------------------------- the profile
def test_the_0_4_switch_notebook_profile_fast_test_selects_the_fast_budgets_and_warns(
    no_switch: pytest.MonkeyPatch,
) -> None:
    assert Profile.pick(100, fast_test=1) == 100
    for spelling in ("fast-test", "FAST_TEST", " fast test "):
        no_switch.setenv(LEGACY_PROFILE_ENV_VAR, spelling)
        with pytest.warns(DeprecationWarning, match="RL_MIND_FAST_TEST=1"):
            assert Profile.pick(100, fast_test=1) == 1
    no_switch.setenv(LEGACY_PROFILE_ENV_VAR, "full")
    assert Profile.pick(100, fast_test=1) == 100 and Profile.name() == "full"


def test_the_new_switch_wins_without_a_warning(no_switch: pytest.MonkeyPatch) -> None:
    no_switch.setenv(FAST_TEST_ENV_VAR, "1")
    no_switch.setenv(LEGACY_PROFILE_ENV_VAR, "fast-test")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Profile.pick(100, fast_test=1) == 1


def _import_profiles() -> object:
    sys.modules.pop("rl_mind.profiles", None)
    with pytest.warns(DeprecationWarning, match="from rl_mind import Profile"):
        return importlib.import_module("rl_mind.profiles")


def test_rl_mind_profiles_keeps_0_4s_two_rungs_and_both_pick_spellings(
    no_switch: pytest.MonkeyPatch,
) -> None:
    legacy = _import_profiles().Profile  # type: ignore[attr-defined]
    assert legacy.current() is legacy.FULL and legacy.FAST_TEST < legacy.FULL
    assert legacy.pick(30_000, fast_test=600) == 30_000
    assert legacy.pick(fast_test=600, full=30_000) == 30_000
    assert legacy.pick(fast_test=600) == 600  # the only value given
    no_switch.setenv(FAST_TEST_ENV_VAR, "1")
    assert legacy.current() is legacy.FAST_TEST
    assert legacy.pick(30_000, fast_test=600) == 600
    assert legacy.pick(30_000) == 30_000
    with pytest.raises(TypeError, match="unknown rungs"):
        legacy.pick(1, small=2)
    with pytest.raises(TypeError, match="at most one positional"):
        legacy.pick(1, 2)


# ---------------------------------------------------------------------- notebook helpers
def test_silence_known_warnings_still_silences_and_says_it_is_not_needed() -> None:
    import warnings

    from rl_mind.notebook import silence_known_warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        silence_known_warnings()
        warnings.warn("pkg_resources is deprecated as an API", UserWarning, stacklevel=1)
    messages = [str(w.message) for w in caught]
    assert any("remove the call" in m for m in messages)
    assert not any(m.startswith("pkg_resources") for m in messages)


# ---------------------------------------------------------------------- environments
def test_continuous_cartpole_env_is_the_new_class_under_its_0_4_name() -> None:
    import rl_mind.envs

    with pytest.warns(DeprecationWarning, match="CartPoleContinuousEnv"):
        legacy = rl_mind.envs.ContinuousCartPoleEnv
    assert legacy is rl_mind.envs.CartPoleContinuousEnv
    env = legacy()
    env.reset(seed=0)
    _obs, reward, _terminated, _truncated, _info = env.step(np.array([0.5]))
    assert reward == 1.0 and env.action_space.shape == (1,)
    with pytest.raises(AttributeError, match="NoSuchEnv"):
        rl_mind.envs.NoSuchEnv  # noqa: B018


# ---------------------------------------------------------------------- rendering
def test_the_0_4_rendering_names_are_reachable_from_the_package_root() -> None:
    from rl_mind import rendering

    for name in sorted(rl_mind._RENDERING_04):
        assert getattr(rl_mind, name) is getattr(rendering, name)
    assert "RenderWidget" not in rl_mind.__all__
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        rl_mind.Nope  # noqa: B018


def test_render_widget_shows_a_frame_after_each_reset_and_step_of_a_gym_env() -> None:
    env = gymnasium.make("CartPole-v1", render_mode="rgb_array")
    with pytest.warns(DeprecationWarning, match=r"FrameViewer\(\)"):
        widget = rl_mind.RenderWidget(env)
    widget.reset(seed=0)
    for _ in range(3):
        widget.step(0)
    assert len(widget.viewer) == 4 and widget.action_space == env.action_space
    assert widget.viewer.frame(-1).shape == (400, 600, 3)
    widget.reset(seed=1)  # a new episode forgets the frames
    assert len(widget.viewer) == 1


def test_render_widget_shows_copy_k_of_a_vecenv_and_bounds_the_history() -> None:
    with pytest.warns(DeprecationWarning):
        window = rl_mind.WindowTrimmer(3)
    vec = VecEnv("CartPole-v1", 2, seed=0, render_mode="rgb_array")
    with pytest.warns(DeprecationWarning):
        widget = rl_mind.RenderWidget(vec, trimmer=window, k=1)
    widget.reset()
    for _ in range(5):
        widget.step(Action(torch.zeros(2, dtype=torch.long)))
    assert widget.viewer.frame_numbers == [3, 4, 5] and widget.n_actions == 2
    expected = vec.gym_env.render()[1]
    assert np.array_equal(widget.viewer.frame(-1), expected)
    vec.close()


def test_a_custom_trimmer_names_the_viewer_to_use_instead() -> None:
    class Every(rl_mind.Trimmer):
        def trim(self, history):  # type: ignore[no-untyped-def]
            return history

    env = gymnasium.make("CartPole-v1", render_mode="rgb_array")
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="FrameViewer"):
        rl_mind.RenderWidget(env, trimmer=Every())


def test_rollout_frames_then_animate_frames_replay_one_episode() -> None:
    with pytest.warns(DeprecationWarning, match="record_video"):
        history = rl_mind.rollout_frames("CartPole-v1", lambda obs: 0, seed=0)
    steps = [step for step, _frame in history]
    assert steps == list(range(len(history))) and 5 < len(history) < 100
    with pytest.warns(DeprecationWarning):
        first = rl_mind.decode_frame(history[0][1])
    assert first.shape == (400, 600, 3) and first.dtype == np.uint8
    with pytest.warns(DeprecationWarning, match=r"viewer\.show\(\)"):
        viewer = rl_mind.animate_frames(history, width="300px")
    assert len(viewer) == len(history) and viewer.width == 300
    assert np.array_equal(viewer.frame(0), first)


def test_the_trimmers_keep_what_0_4s_kept() -> None:
    history = [(i, b"") for i in range(10)]
    with pytest.warns(DeprecationWarning):
        assert [s for s, _ in rl_mind.WindowTrimmer(4).trim(history)] == [6, 7, 8, 9]
    with pytest.warns(DeprecationWarning):
        decimate = rl_mind.DecimateTrimmer(8, keep_ratio=0.5)
    assert [s for s, _ in decimate.trim(history)] == [0, 2, 4, 6, 8]
    assert decimate.trim(history[:8]) == history[:8]
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="size"):
        rl_mind.WindowTrimmer(0)


def test_encode_frame_round_trips_losslessly() -> None:
    frame = np.random.default_rng(0).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    with pytest.warns(DeprecationWarning):
        data = rl_mind.encode_frame(frame)
    with pytest.warns(DeprecationWarning):
        assert np.array_equal(rl_mind.decode_frame(data), frame)


def test_frame_viewer_update_and_reset_are_add_and_clear() -> None:
    viewer = FrameViewer()
    frame = np.zeros((4, 4, 3), dtype=np.uint8)
    with pytest.warns(DeprecationWarning, match=r"viewer\.add\(frame\)"):
        viewer.update(frame)
    viewer.add(frame)
    assert len(viewer) == 2
    with pytest.warns(DeprecationWarning, match=r"viewer\.clear\(\)"):
        viewer.reset()
    assert len(viewer) == 0


def test_frame_viewer_and_render_widget_keep_0_4s_public_attributes() -> None:
    import ipywidgets

    # 0.4's FrameViewer: trimmer, history, step_count, image, label, slider, play;
    # its RenderWidget: env, k, viewer (and the environment's attributes)
    with pytest.warns(DeprecationWarning):
        window = rl_mind.WindowTrimmer(3)
    env = gymnasium.make("CartPole-v1", render_mode="rgb_array")
    with pytest.warns(DeprecationWarning):
        widget = rl_mind.RenderWidget(env, width="300px", trimmer=window)
    assert widget.env is env and widget.k == 0 and widget.observation_space.shape == (4,)
    viewer = widget.viewer
    assert isinstance(viewer, FrameViewer) and viewer.trimmer is window
    widget.reset(seed=0)
    for _ in range(4):
        widget.step(0)
    assert viewer.step_count == 5 and [step for step, _ in viewer.history] == [2, 3, 4]
    step, data = viewer.history[-1]
    assert isinstance(data, bytes) and np.array_equal(viewer.frame(-1), env.render())
    viewer.history.clear()  # (a copy: the viewer keeps its frames)
    assert len(viewer) == 3
    assert isinstance(viewer.image, ipywidgets.Image) and viewer.image.value == data
    assert isinstance(viewer.label, ipywidgets.Label) and "5" in viewer.label.value
    assert isinstance(viewer.slider, ipywidgets.IntSlider) and viewer.slider.value == 2
    assert isinstance(viewer.play, ipywidgets.Play) and viewer.play.max == viewer.slider.max
    with pytest.warns(DeprecationWarning):
        viewer.reset()
    assert viewer.step_count == 0 and viewer.history == []
    assert FrameViewer(width="400px").width == 400 and FrameViewer().trimmer is None


# ---------------------------------------------------------------------- the migration page
def test_the_migration_pages_line_steps_cartpole_one_environment_per_copy_as_0_4_did() -> None:
    # CartPole is natively vectorized now (other start states for the same seed); any
    # wrapper gives 0.4's one gymnasium environment per copy, and 0.4's observations
    reference = gymnasium.make_vec("CartPole-v1", 3, vectorization_mode="sync")
    expected = torch.as_tensor(reference.reset(seed=0)[0])
    reference.close()
    with VecEnv("CartPole-v1", 3, seed=0, wrappers=[gymnasium.Wrapper]) as env:
        assert env.vectorization_mode == "sync" and torch.equal(env.reset(), expected)
    with VecEnv("CartPole-v1", 3, seed=0) as native:
        assert native.vectorization_mode == "vector_entry_point"
        assert not torch.equal(native.reset(), expected)
    from tests.readme_blocks import DOCS

    page = (DOCS / "guide" / "migration.md").read_text(encoding="utf-8")
    assert "wrappers=[gymnasium.Wrapper]" in page[page.index("## Same code, other numbers?") :]


# rl-mind 0.4.0's public names, module by module (each module's __all__).
NAMES_0_4 = {
    "rl_mind": [
        "Action", "ActionT", "Actor", "DecimateTrimmer", "EnvStep", "EpisodeCollector",
        "EvalResult", "Evaluator", "Episode", "FrameViewer", "RenderWidget", "ReplayBuffer",
        "Rollout", "RolloutCollector", "StochasticAction", "TensorStruct", "Transitions",
        "TransitionCollector", "Trimmer", "VecEnv", "WindowTrimmer", "actor_policy",
        "animate_frames", "build_mlp", "decode_frame", "encode_frame", "is_notebook",
        "minibatches", "outputs_directory", "record_video", "rollout_frames", "run_directory",
        "setup_tensorboard", "soft_update", "video_display",
    ],
    "rl_mind.data": ["StructT"],  # (not in its __all__, public by its name)
    "rl_mind.notebook": ["silence_known_warnings"],
    "rl_mind.envs": ["ContinuousCartPoleEnv"],
    "rl_mind.rendering": ["HistoryEntry"],
    "rl_mind.profiles": ["Profile"],
    "rl_mind.mazemdp_env": ["MazeMDPEnv"],
}  # fmt: skip


def test_the_migration_page_accounts_for_every_0_4_name() -> None:
    from tests.readme_blocks import DOCS

    page = (DOCS / "guide" / "migration.md").read_text(encoding="utf-8")
    missing = [
        f"{module}.{name}"
        for module, names in NAMES_0_4.items()
        for name in names
        if not re.search(rf"\b{name}\b", page)
    ]
    assert not missing, f"docs/guide/migration.md does not mention: {missing}"


@pytest.mark.parametrize("module_name", sorted(NAMES_0_4))
def test_every_0_4_name_is_still_importable_from_its_module(module_name: str) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            if module_name == "rl_mind.mazemdp_env":
                pytest.skip("the maze MDP (rl_mind.mazemdp_env) is not in this checkout")
            raise
        missing = [name for name in NAMES_0_4[module_name] if not hasattr(module, name)]
    assert not missing, f"{module_name} lost 0.4's {missing}"
