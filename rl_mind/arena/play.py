"""``rl-mind play AGENT``: a person plays Pong Duel with the keyboard against an agent.

The person is the left player (blue; W / S or the arrow keys), the agent the right one
(orange). The frames are the game's own (:func:`~rl_mind.envs.render_match`: the score in
the header), shown in a pygame window at the game's 50 steps a second, with a line of
help below. When a match ends the result stays on screen: Space plays another, Escape
(or closing the window) quits.

``AGENT`` is a submission (``.safetensors`` from :func:`~rl_mind.arena.export_agent`, or a
``.json`` description), a ``rl-mind selfplay`` run directory (its best agent), or a bot's
name (``random``, ``scripted``, ``predictive``).

What the reader must not get wrong: the keys are read from pygame's events (key down,
key up), not from the keyboard's state, so a script can play by posting events (the
tests do, with SDL's dummy video driver and no display).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["MatchOutcome", "PlayWindow", "main"]

_FOOTER = 40
_STAY, _UP, _DOWN = 0, 1, 2


@dataclasses.dataclass(frozen=True)
class MatchOutcome:
    """A finished match: the final score (person, agent) and the outcome for the person
    (+1 won, -1 lost, 0 draw at the time limit)."""

    score: tuple[int, int]
    outcome: int
    steps: int


class PlayWindow:
    """The window and the match; :meth:`run` is the loop, :meth:`frame` one step of it.

    Args:
        opponent: the agent (a bot name, or any policy Pong Duel's opponents accept).
        name: the agent's name, shown in the window's caption and help line.
        seed: seeds the serves.
        fps: steps (and frames) a second; 0 runs as fast as possible (tests).
    """

    def __init__(self, opponent: Any, name: str, seed: int | None = None, fps: int = 50) -> None:
        import pygame

        from rl_mind.envs.pong_game import PongDuelGame
        from rl_mind.envs.pong_opponents import as_numpy_policy
        from rl_mind.envs.pong_render import FRAME_HEIGHT, FRAME_WIDTH

        self.pygame = pygame
        pygame.init()
        self.screen = pygame.display.set_mode((FRAME_WIDTH, FRAME_HEIGHT + _FOOTER))
        pygame.display.set_caption(f"Pong Duel: you (blue) against {name} (orange)")
        self.font = pygame.font.Font(None, 24)
        self.clock = pygame.time.Clock()
        self.fps = fps
        self.name = name
        self.opponent = as_numpy_policy(opponent)
        self.game = PongDuelGame(1, seed=seed)
        self.game.reset()
        self.trail: deque[tuple[float, float]] = deque(maxlen=6)
        self.up = self.down = False
        self.quit = False
        self.finished: MatchOutcome | None = None  # the match on screen, once it ended
        self.outcomes: list[MatchOutcome] = []

    # ------------------------------------------------------------------ input
    def handle(self, event: Any) -> None:
        """Update the keys held (and quit / restart) from one pygame event."""
        pg = self.pygame
        if event.type == pg.QUIT:
            self.quit = True
        elif event.type in (pg.KEYDOWN, pg.KEYUP):
            pressed = event.type == pg.KEYDOWN
            if event.key in (pg.K_UP, pg.K_w):
                self.up = pressed
            elif event.key in (pg.K_DOWN, pg.K_s):
                self.down = pressed
            elif pressed and event.key in (pg.K_ESCAPE, pg.K_q):
                self.quit = True
            elif pressed and event.key == pg.K_SPACE and self.finished is not None:
                self.game.reset_matches(np.zeros(1, dtype=np.int64))
                self.trail.clear()
                self.finished = None

    def action(self) -> int:
        """The person's action from the keys held (both or none: stay)."""
        if self.up == self.down:
            return _STAY
        return _UP if self.up else _DOWN

    # ------------------------------------------------------------------ the loop
    def frame(self) -> None:
        """Read the events, play one step (unless the match is over), draw."""
        for event in self.pygame.event.get():
            self.handle(event)
        if self.finished is None and not self.quit:
            self._step()
        self.draw()
        self.clock.tick(self.fps)

    def _step(self) -> None:
        game = self.game
        agent_action = self.opponent.act_numpy(game.observe(1))
        ball = (float(game.ball_x[0]), float(game.ball_y[0]))
        points = int(game.score.sum())
        result = game.step(np.array([[self.action()], [int(agent_action[0])]]))
        if int(game.score.sum()) != points and not result.terminated[0]:
            self.trail.clear()  # a new serve: no trail across the court
        else:
            self.trail.append(ball)
        if result.terminated[0] or result.truncated[0]:
            self.finished = MatchOutcome(
                (int(game.score[0, 0]), int(game.score[1, 0])),
                int(result.outcome[0]),
                int(game.time[0]),
            )
            self.outcomes.append(self.finished)

    def message(self) -> str:
        """The help line under the court (the result, once the match is over)."""
        if self.finished is None:
            return f"you: W/S or arrow keys  |  first to 3  |  Esc quits  |  vs {self.name}"
        you, agent = self.finished.score
        verdict = {1: "You win", -1: f"{self.name} wins", 0: "Draw (time is up)"}
        return f"{verdict[self.finished.outcome]} {you}-{agent}  |  Space: again  |  Esc: quit"

    def draw(self) -> None:
        from rl_mind.envs.pong_render import FRAME_HEIGHT, render_match

        pg = self.pygame
        frame = render_match(self.game, 0, trail=list(self.trail))  # [H, W, 3]
        self.screen.blit(pg.surfarray.make_surface(frame.swapaxes(0, 1)), (0, 0))
        self.screen.fill((12, 13, 18), pg.Rect(0, FRAME_HEIGHT, self.screen.get_width(), _FOOTER))
        text = self.font.render(self.message(), True, (230, 230, 230))
        self.screen.blit(text, (10, FRAME_HEIGHT + (_FOOTER - text.get_height()) // 2))
        pg.display.flip()

    def run(self, max_frames: int | None = None) -> list[MatchOutcome]:
        """Play until the person quits (or ``max_frames`` frames); returns the finished matches."""
        frames = 0
        try:
            while not self.quit and (max_frames is None or frames < max_frames):
                self.frame()
                frames += 1
        finally:
            self.close()
        return self.outcomes

    def close(self) -> None:
        self.pygame.display.quit()


def main(argv: Sequence[str] | None = None) -> int:
    """``rl-mind play AGENT [--seed S] [--fps F]``."""
    from rl_mind.arena.submission import SubmissionError, load_agent

    parser = argparse.ArgumentParser(
        prog="rl-mind play",
        description=(
            "Play Pong Duel with the keyboard (W/S or the arrow keys) against an agent: a "
            "submission file, a rl-mind selfplay run directory, or random / scripted / predictive."
        ),
    )
    parser.add_argument("agent", metavar="SUBMISSION_OR_RUN_DIR")
    parser.add_argument("--seed", type=int, default=None, help="seed of the serves")
    parser.add_argument("--fps", type=int, default=50, help="steps a second (default 50)")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        agent = load_agent(args.agent)
    except (SubmissionError, OSError, ValueError) as error:
        print(f"rl-mind play: {args.agent}: {error}", file=sys.stderr)
        return 1
    name = agent if isinstance(agent, str) else agent.name
    outcomes = PlayWindow(agent, name, seed=args.seed, fps=args.fps).run()
    won = sum(o.outcome > 0 for o in outcomes)
    print(f"{len(outcomes)} matches played against {name}: you won {won}")
    return 0
