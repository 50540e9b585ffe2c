"""``rl-mind play``: the pygame window, driven by posted key events under SDL's dummy driver."""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np
import pytest

os.environ["SDL_VIDEODRIVER"] = "dummy"  # (before pygame opens a display)
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
pygame = pytest.importorskip("pygame")

from rl_mind.arena.play import PlayWindow, main  # noqa: E402
from rl_mind.envs.pong_game import PongDuelRules  # noqa: E402
from rl_mind.envs.pong_render import FRAME_HEIGHT, render_match  # noqa: E402


@pytest.fixture
def window() -> Iterator[PlayWindow]:
    play = PlayWindow("scripted", "scripted", seed=3, fps=0)
    yield play
    play.close()


def _press(key: int, down: bool = True) -> None:
    pygame.event.post(pygame.event.Event(pygame.KEYDOWN if down else pygame.KEYUP, key=key))


def test_keys_move_the_persons_paddle(window: PlayWindow) -> None:
    speed = PongDuelRules().paddle_speed
    start = float(window.game.paddle_y[0, 0])
    _press(pygame.K_UP)
    for _ in range(5):
        window.frame()
    assert window.game.paddle_y[0, 0] == pytest.approx(start + 5 * speed)
    _press(pygame.K_UP, down=False)
    window.frame()
    held = float(window.game.paddle_y[0, 0])
    assert held == pytest.approx(start + 5 * speed), "releasing the key stops the paddle"
    _press(pygame.K_s)  # W/S work as well as the arrows
    for _ in range(3):
        window.frame()
    assert window.game.paddle_y[0, 0] == pytest.approx(held - 3 * speed)
    _press(pygame.K_s, down=False)
    _press(pygame.K_w)
    _press(pygame.K_DOWN)  # both held: the paddle stays
    before = float(window.game.paddle_y[0, 0])
    window.frame()
    assert window.game.paddle_y[0, 0] == pytest.approx(before)


def test_a_match_ends_with_the_right_score_on_screen(window: PlayWindow) -> None:
    frames = 0
    while window.finished is None:
        window.frame()
        frames += 1
        assert frames <= PongDuelRules().max_steps + 1, "the match never ended"
    result = window.finished
    score = (int(window.game.score[0, 0]), int(window.game.score[1, 0]))
    assert result.score == score
    if max(score) == 3:  # first to 3 points wins
        assert result.outcome == (1 if score[0] == 3 else -1)
    else:  # the time limit: a draw
        assert result.outcome == 0 and result.steps == PongDuelRules().max_steps
    assert window.outcomes == [result]
    # the screen shows the game's own frame (the score in its header) and the verdict
    shown = pygame.surfarray.array3d(window.screen).swapaxes(0, 1)[:FRAME_HEIGHT]
    np.testing.assert_array_equal(shown, render_match(window.game, 0, trail=list(window.trail)))
    assert f"{score[0]}-{score[1]}" in window.message()
    assert ("scripted wins" in window.message()) == (result.outcome < 0)
    # a finished match stays on screen until Space starts the next one
    time_over = int(window.game.time[0])
    window.frame()
    assert int(window.game.time[0]) == time_over
    _press(pygame.K_SPACE)
    window.frame()
    assert window.finished is None and int(window.game.score.sum()) == 0


def test_escape_quits_and_run_returns_the_matches(window: PlayWindow) -> None:
    _press(pygame.K_ESCAPE)
    assert window.run(max_frames=100) == []
    assert window.quit


def test_play_command_refuses_a_bad_agent(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "agent.pkl"
    bad.write_bytes(b"not read")
    assert main([str(bad)]) == 1
    assert "not a submission" in capsys.readouterr().err
