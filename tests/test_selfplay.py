"""rl_mind.selfplay: opponent pool sampling and eviction, Elo and Bradley–Terry, head-to-head matches."""

import copy
import io
import re
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from rl_mind import (
    EloTable,
    LeaderboardRow,
    MatchStats,
    OpponentPool,
    TwoPlayerGame,
    bradley_terry,
    play_matches,
    round_robin,
)


def _frequencies(pool, strategy, n=20_000):
    ids = [s.id for s in pool]
    counts = np.zeros(len(ids))
    for _ in range(n):
        counts[ids.index(pool.sample(strategy).id)] += 1
    return counts / n


def _pool_with_results(**kwargs):
    pool = OpponentPool(capacity=4, seed=0, **kwargs)
    for step in range(4):
        pool.add(nn.Linear(10, 3), step=step * 100)
    # Learner's results: beats snapshot 0 always, snapshot 3 never.
    for snapshot_id, (wins, draws, losses) in enumerate(
        [(9, 0, 0), (6, 0, 3), (3, 2, 4), (0, 0, 9)]
    ):
        for outcome, count in ((1, wins), (0, draws), (-1, losses)):
            for _ in range(count):
                pool.record(snapshot_id, outcome)
    return pool


def test_pool_sampling_frequencies_match_their_definitions():
    pool = _pool_with_results(pfsp_exponent=2.0)
    np.testing.assert_allclose(_frequencies(pool, "latest"), [0, 0, 0, 1])
    np.testing.assert_allclose(_frequencies(pool, "uniform"), [0.25] * 4, atol=0.015)
    # PFSP: p_i = (losses + draws/2 + 1/2) / (games + 1), weight p_i ** 2
    p = np.array([(0 + 0.5) / 10, (3 + 0.5) / 10, (4 + 1 + 0.5) / 10, (9 + 0.5) / 10])
    expected = p**2 / (p**2).sum()
    np.testing.assert_allclose(pool.probabilities("pfsp"), expected)
    np.testing.assert_allclose(_frequencies(pool, "pfsp"), expected, atol=0.015)
    mix = {"latest": 0.5, "uniform": 0.5}
    np.testing.assert_allclose(pool.probabilities(mix), [0.125, 0.125, 0.125, 0.625])
    np.testing.assert_allclose(_frequencies(pool, mix), [0.125, 0.125, 0.125, 0.625], atol=0.015)


def test_pool_snapshots_are_frozen_copies_with_id_and_step():
    learner = nn.Linear(10, 3)
    pool = OpponentPool(capacity=3)
    snapshot = pool.add(learner, step=40)
    with torch.no_grad():
        learner.weight.add_(1.0)
    assert not torch.equal(snapshot.policy.weight, learner.weight)
    assert not snapshot.policy.weight.requires_grad and not snapshot.policy.training
    assert (snapshot.id, snapshot.step, pool.latest) == (0, 40, snapshot)


def test_pool_evicts_the_oldest_or_the_weakest_and_can_keep_the_first():
    fifo = OpponentPool(capacity=3)
    for step in range(5):
        fifo.add(nn.Linear(1, 1), step)
    assert [s.id for s in fifo] == [2, 3, 4]
    keep = OpponentPool(capacity=3, keep_first=True)
    for step in range(5):
        keep.add(nn.Linear(1, 1), step)
    assert [s.id for s in keep] == [0, 3, 4]
    weakest = _pool_with_results(eviction="weakest")
    weakest.add(nn.Linear(10, 3), step=400)
    assert [s.id for s in weakest] == [1, 2, 3, 4]  # snapshot 0 was always beaten


def test_pool_state_dict_round_trips_through_a_weights_only_checkpoint():
    pool = _pool_with_results(pfsp_exponent=1.0)
    pool.sample("pfsp")
    buffer = io.BytesIO()
    torch.save(pool.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    restored = OpponentPool(capacity=4, pfsp_exponent=1.0)
    restored.load_state_dict(state, lambda: nn.Linear(10, 3))
    assert [(s.id, s.step, s.wins, s.losses) for s in restored] == [
        (s.id, s.step, s.wins, s.losses) for s in pool
    ]
    assert torch.equal(restored.latest.policy.weight, pool.latest.policy.weight)
    assert [restored.sample("pfsp").id for _ in range(20)] == [
        pool.sample("pfsp").id for _ in range(20)
    ]
    assert restored.add(nn.Linear(10, 3), 500).id == pool.add(nn.Linear(10, 3), 500).id


def test_pool_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="empty"):
        OpponentPool().sample()
    with pytest.raises(ValueError, match="unknown sampling strategy 'best'"):
        OpponentPool(sampling="best")
    with pytest.raises(ValueError, match="capacity"):
        OpponentPool(capacity=0)
    with pytest.raises(ValueError, match="outcome"):
        OpponentPool().record(0, 2)


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sampling": {"latest": NAN}}, "the mixture weight of 'latest' must be a finite number >= 0, got nan"),
        ({"sampling": {"latest": 1.0, "pfsp": INF}}, "the mixture weight of 'pfsp' must be a finite number >= 0, got inf"),
        ({"sampling": {"uniform": "1"}}, "the mixture weight of 'uniform' must be a finite number >= 0, got str '1'"),
        ({"pfsp_exponent": NAN}, "pfsp_exponent must be a finite number >= 0, got nan"),
        ({"pfsp_exponent": -INF}, "pfsp_exponent must be a finite number >= 0, got -inf"),
        ({"decay": NAN}, "decay must be in (0, 1], got nan"),
        ({"seed": -1}, "seed must be None or an int >= 0, got -1"),
    ],
)  # fmt: skip
def test_pool_refuses_numbers_that_are_not_numbers_when_it_is_built(kwargs, message):
    # (they used to be taken, and sample() then failed inside numpy)
    with pytest.raises((ValueError, TypeError), match="OpponentPool: " + re.escape(message)):
        OpponentPool(**kwargs)


def test_pool_sampling_refuses_a_mixture_of_weights_that_are_not_numbers():
    pool = _pool_with_results()
    for weights in ({"latest": NAN, "pfsp": 1.0}, {"uniform": INF}):
        with pytest.raises(ValueError, match="mixture weight of .* must be a finite number"):
            pool.sample(weights)
        with pytest.raises(ValueError, match="mixture weight of .* must be a finite number"):
            pool.probabilities(weights)  # type: ignore[arg-type]


def test_pool_add_names_a_step_that_is_not_a_step():
    pool = OpponentPool(capacity=2)
    for step in (NAN, INF, -1, 2.5, "10", None):
        with pytest.raises(
            ValueError, match=r"OpponentPool.add: step \(the training step\) must be an int >= 0"
        ):
            pool.add(nn.Linear(1, 1), step)
    assert len(pool) == 0
    assert pool.add(nn.Linear(1, 1), np.int64(5)).id == 0  # (no id was spent)


def test_pool_record_refuses_what_is_not_an_id_and_ignores_only_evicted_snapshots():
    pool = OpponentPool(capacity=2)
    with pytest.raises(ValueError, match=r"no snapshot 0 was ever added \(ids so far: none"):
        pool.record(0, 1)
    first = pool.add(nn.Linear(10, 3), step=0)
    # (a wrong id used to be taken for an evicted snapshot: the result was silently lost)
    with pytest.raises(TypeError, match=r"got the Snapshot itself; pass snapshot.id \(0\)"):
        pool.record(first, -1)  # type: ignore[arg-type]
    for wrong in (first.policy, "0", 0.0, True):
        with pytest.raises(TypeError, match="expected a snapshot id"):
            pool.record(wrong, -1)  # type: ignore[arg-type]
    for never_added in (1, -1, 99):
        with pytest.raises(ValueError, match=f"no snapshot {never_added} was ever added"):
            pool.record(never_added, -1)
    assert first.games == 0  # nothing was recorded by the refused calls
    pool.record(np.int64(0), -1)  # (an id from numpy is an id)
    assert first.losses == 1
    pool.add(nn.Linear(10, 3), step=1)
    pool.add(nn.Linear(10, 3), step=2)  # evicts snapshot 0
    pool.record(0, 1)  # the results of an evicted snapshot are ignored
    assert [s.games for s in pool] == [0, 0]


SAVED_POOL = _pool_with_results().state_dict()
BAD_VALUES = [NAN, INF, -1, "x", None, [1]]  # (wrong for every entry)


def _pool_to_restore_into():
    pool = OpponentPool(capacity=4, seed=5)
    for step in (7, 8):
        pool.add(nn.Linear(10, 3), step)
    pool.record(1, -1)
    return pool


def _assert_same_state(a, b):
    if isinstance(a, torch.Tensor):
        assert torch.equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            _assert_same_state(a[key], b[key])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same_state(x, y)
    else:
        assert a == b


@st.composite
def damaged_pool_states(draw):
    """A pool's state_dict with one thing missing or wrong."""
    state = copy.deepcopy(SAVED_POOL)
    snapshot = draw(st.sampled_from(state["snapshots"]))
    damage = draw(
        st.sampled_from(["drop", "replace", "drop in snapshot", "replace in snapshot", "other"])
    )
    if damage == "drop":
        del state[draw(st.sampled_from(sorted(state)))]
    elif damage == "replace":
        state[draw(st.sampled_from(sorted(state)))] = draw(st.sampled_from(BAD_VALUES))
    elif damage == "drop in snapshot":
        del snapshot[draw(st.sampled_from(sorted(snapshot)))]
    elif damage == "replace in snapshot":
        snapshot[draw(st.sampled_from(sorted(snapshot)))] = draw(st.sampled_from(BAD_VALUES))
    else:
        other = draw(
            st.sampled_from(
                [
                    "weights of another shape",
                    "a missing weight",
                    "an id given twice",
                    "an id not issued yet",
                    "too many snapshots",
                    "another generator",
                    "no first id",
                ]
            )
        )
        if other == "weights of another shape":
            snapshot["policy"] = nn.Linear(4, 3).state_dict()
        elif other == "a missing weight":
            del snapshot["policy"]["bias"]
        elif other == "an id given twice":
            state["snapshots"][-1]["id"] = state["snapshots"][0]["id"]
        elif other == "an id not issued yet":
            snapshot["id"] = state["next_id"]
        elif other == "too many snapshots":
            state["snapshots"].append(copy.deepcopy(snapshot))
        elif other == "another generator":
            state["rng"] = np.random.MT19937(0).state
        else:
            state["first_id"] = None
    return state


@settings(max_examples=200, deadline=None)
@given(state=damaged_pool_states())
def test_pool_load_state_dict_of_a_damaged_state_changes_nothing(state):
    # (an incomplete state used to replace the snapshots, then fail with a KeyError)
    pool = _pool_to_restore_into()
    members, before = list(pool), pool.state_dict()
    with pytest.raises((ValueError, TypeError), match="OpponentPool.load_state_dict: "):
        pool.load_state_dict(state, lambda: nn.Linear(10, 3))
    assert list(pool) == members
    _assert_same_state(pool.state_dict(), before)


def test_pool_load_state_dict_names_what_is_missing_or_wrong():
    pool = _pool_to_restore_into()
    state = copy.deepcopy(SAVED_POOL)
    del state["rng"]
    with pytest.raises(ValueError, match=r"the state lacks \['rng'\]; OpponentPool.state_dict"):
        pool.load_state_dict(state, lambda: nn.Linear(10, 3))
    state = copy.deepcopy(SAVED_POOL)
    state["snapshots"][2]["wins"] = NAN
    with pytest.raises(
        ValueError, match=re.escape("state['snapshots'][2]['wins'] must be a finite number >= 0")
    ):
        pool.load_state_dict(state, lambda: nn.Linear(10, 3))
    with pytest.raises(ValueError, match=r"\['policy'\] does not fit the module make_policy"):
        pool.load_state_dict(SAVED_POOL, lambda: nn.Linear(4, 3))
    assert [s.step for s in pool] == [7, 8]
    pool.load_state_dict(SAVED_POOL, lambda: nn.Linear(10, 3))  # the intact state loads
    assert [s.step for s in pool] == [0, 100, 200, 300]


# ---------------------------------------------------------------------- ratings
TRUE_ELO = {"weak": 0.0, "medium": 200.0, "strong": 500.0}


def _simulated_results(n=400, seed=0):
    """Round-robin results drawn from the Elo model with known ratings (no draws)."""
    rng = np.random.default_rng(seed)
    names = list(TRUE_ELO)
    wins = np.zeros((3, 3))
    for i in range(3):
        for j in range(i + 1, 3):
            p = 1 / (1 + 10 ** ((TRUE_ELO[names[j]] - TRUE_ELO[names[i]]) / 400))
            w = rng.binomial(n, p)
            wins[i, j], wins[j, i] = w, n - w
    return names, wins


def test_bradley_terry_recovers_known_strengths_anchored_at_the_weakest():
    names, wins = _simulated_results()
    board = bradley_terry(wins, names=names, anchor="weak")
    assert board.names == ["strong", "medium", "weak"]
    assert board.rating("weak") == 0.0
    for name in ("medium", "strong"):
        row = next(r for r in board.rows if r.name == name)
        assert abs(row.rating - TRUE_ELO[name]) < 3 * row.stderr + 30


def test_bradley_terry_with_draws_and_an_unbeaten_player_stays_finite():
    wins = np.array([[0, 0, 0], [5, 0, 2], [10, 6, 0]])
    draws = np.array([[0, 5, 0], [5, 0, 2], [0, 2, 0]])
    board = bradley_terry(wins, draws, ["random", "b", "c"])
    assert board.names == ["c", "b", "random"] and np.isfinite(board.rating("c"))
    assert "| 1 | c |" in str(board)


def test_bradley_terry_refuses_an_anchor_index_outside_the_players_and_keeps_its_inputs():
    wins = np.array([[3.0, 2, 1], [5, 4, 2], [9, 6, 1]])  # (a diagonal to ignore)
    given = wins.copy()
    # (-1 used to anchor nobody: ratings centred at 0 and intervals of ±240,761)
    for anchor in (-1, 3):
        with pytest.raises(ValueError, match=f"anchor index {anchor} is not a player"):
            bradley_terry(wins, anchor=anchor)
    with pytest.raises(TypeError, match="anchor must be a player's name or index"):
        bradley_terry(wins, anchor=1.0)  # type: ignore[arg-type]
    board = bradley_terry(wins, anchor=np.int64(0))
    assert board.rating("0") == 0.0
    np.testing.assert_array_equal(wins, given)  # the diagonal was not zeroed in place


@pytest.mark.parametrize("bad", [NAN, INF, -1.0])
def test_bradley_terry_refuses_counts_that_are_not_counts_naming_the_entry(bad):
    # (NaN or inf counts used to give NaN ratings)
    wins = np.array([[0.0, 3, 1], [2, 0, 4], [5, 1, 0]])
    draws = np.zeros((3, 3))
    for label in ("wins", "draws"):
        matrix = (wins if label == "wins" else draws).copy()
        matrix[1, 2] = bad
        given_wins, given_draws = (matrix, draws) if label == "wins" else (wins, matrix)
        message = f"bradley_terry: {label} must be finite counts >= 0, got {bad} at {label}[1, 2]"
        with pytest.raises(ValueError, match=re.escape(message)):
            bradley_terry(given_wins, given_draws, anchor=0)
    with pytest.raises(ValueError, match=r"prior_draws must be a finite number >= 0, got"):
        bradley_terry(wins, prior_draws=bad, anchor=0)


def test_bradley_terry_of_a_single_player_puts_it_at_the_anchor():
    # (it used to fail inside numpy)
    board = bradley_terry([[0]], names=["random"], anchor_rating=100.0)
    assert board.rows == (LeaderboardRow("random", 100.0, 0.0, 0.0, None),)
    assert bradley_terry(np.zeros((1, 1)), anchor=0).rating("0") == 0.0


def test_elo_table_refuses_numbers_that_are_not_numbers_and_then_changes_nothing():
    # (k=nan or wins=nan used to give NaN ratings)
    for k in (NAN, INF, 0, -4.0):
        with pytest.raises(ValueError, match=r"EloTable: k must be a finite number > 0, got"):
            EloTable(k=k)
    with pytest.raises(ValueError, match=r"the fixed rating of 'random' must be a finite number"):
        EloTable(fixed={"random": NAN})
    table = EloTable(fixed={"random": 0.0})
    table.update("learner", "random", wins=3, losses=1)
    before = (dict(table.ratings), dict(table.games), dict(table.points))
    for counts in ({"wins": NAN}, {"draws": INF}, {"losses": -1}, {"wins": "2"}):
        (name,) = counts
        with pytest.raises(
            (ValueError, TypeError),
            match=rf"EloTable.update: {name} \(a count of matches\) must be a finite number >= 0",
        ):
            table.update("learner", "newcomer", **counts)
    assert (table.ratings, table.games, table.points) == before and "newcomer" not in table


def test_round_robin_takes_bot_names_and_says_what_a_player_must_be():
    results = round_robin(["random", ("also random", "random")], 4, seed=0)
    assert results.names == ("random", "also random")
    assert results.stats("random", "also random").matches == 4
    with pytest.raises(ValueError, match=r"no player 'scripted'; players: \('random'"):
        results.stats("random", "scripted")
    with pytest.raises(TypeError, match=r"\(name, policy\) pairs or bot names, got 3"):
        round_robin(["random", 3], 4)
    with pytest.raises(TypeError, match=r"fixed must map each fixed player to its rating"):
        EloTable(fixed={"random"})  # type: ignore[arg-type]


def test_elo_table_recovers_the_order_of_three_bots_and_keeps_the_anchor_fixed():
    rng = np.random.default_rng(1)
    names = list(TRUE_ELO)
    table = EloTable(k=8, fixed={"weak": 0.0})
    for _ in range(3000):
        i, j = rng.choice(3, 2, replace=False)
        a, b = names[i], names[j]
        p = 1 / (1 + 10 ** ((TRUE_ELO[b] - TRUE_ELO[a]) / 400))
        table.record(a, b, float(rng.random() < p))
    assert table.leaderboard().names == ["strong", "medium", "weak"]
    assert table["weak"] == 0.0


def test_real_bots_are_ranked_random_below_predictive_below_scripted():
    results = round_robin(
        {"random": "random", "predictive": "predictive", "scripted": "scripted"}, 100, seed=0
    )
    board = bradley_terry(results, anchor="random")
    assert board.names == ["scripted", "predictive", "random"]
    assert results.stats("scripted", "random").win_rate > 0.9


def test_leaderboard_plots_bars_and_rating_curves():
    import matplotlib

    matplotlib.use("Agg")
    names, wins = _simulated_results()
    board = bradley_terry(wins, names=names, anchor="weak")
    assert board.plot().get_title() == board.title
    ax = board.plot(x={"medium": 1.0, "strong": 2.0})
    assert len(ax.lines) >= 2


def test_the_leaderboard_plot_labels_the_anchor_whose_bar_has_no_length():
    import matplotlib
    from matplotlib.figure import Figure

    names, wins = _simulated_results()
    board = bradley_terry(wins, names=names, anchor="weak")
    figure = Figure()
    ax = board.plot(ax=figure.subplots())
    assert [text.get_text() for text in ax.texts] == ["anchor (0)"]
    row = [tick.get_text() for tick in ax.get_yticklabels()].index("weak")
    markers = [line for line in ax.lines if line.get_marker() == "D"]
    assert [(list(m.get_xdata()), list(m.get_ydata())) for m in markers] == [([0.0], [row])]
    svg = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # (text kept as text)
        figure.savefig(svg, format="svg")
    assert "anchor (0)" in svg.getvalue()
    # the rating curves: the anchor's reference line says so in the legend
    curves = board.plot(ax=Figure().subplots(), x={"medium": 1.0, "strong": 2.0})
    assert "weak (anchor, 0)" in curves.get_legend_handles_labels()[1]
    # an online Elo table has no anchor of a fit: nothing is labelled
    table = EloTable(fixed={"weak": 0.0})
    table.update("weak", "strong", wins=1, draws=0, losses=3)
    assert list(table.leaderboard().plot(ax=Figure().subplots()).texts) == []


# ---------------------------------------------------------------------- matches
def test_play_matches_a_policy_against_itself_scores_about_half():
    stats = play_matches("scripted", "scripted", 400, seed=3)
    assert stats.matches == 400
    low, high = stats.score_interval
    assert low < 0.5 < high and abs(stats.score - 0.5) < 0.08


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("n_matches", 0),
        ("batch_size", -1),
        ("batch_size", 0),
        ("max_steps", 0),
        ("batch_size", 2.5),
    ],
)
def test_play_matches_refuses_counts_that_are_not_positive_ints(name, value):
    # (batch_size=-1 used to play nothing and report 0 wins, 0 draws, 0 losses)
    kwargs = {"n_matches": 4, name: value}
    with pytest.raises(ValueError, match=f"play_matches: {name} must be a positive int"):
        play_matches("random", "random", **kwargs)


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (lambda obs: torch.ones(len(obs)), r"dtype float32; expected integer"),
        (lambda obs: torch.ones(1, dtype=torch.long), r"shape \[1\] for 12 observations"),
        (lambda obs: torch.ones(len(obs), 1, dtype=torch.long), r"shape \[12, 1\] for 12"),
    ],
    ids=["floats", "one action", "a column"],
)
def test_play_matches_checks_what_a_policy_returns(policy, message):
    # (written into the [2, M] actions, floats were truncated and one action broadcast to
    # every match, without a word)
    with pytest.raises(ValueError, match=f"play_matches: policy_b returned actions of {message}"):
        play_matches("random", policy, 12, seed=0)
    assert play_matches("random", lambda obs: torch.ones(len(obs), dtype=torch.int32), 4).matches


def test_play_pairs_plays_the_matches_of_round_robin():
    from rl_mind.selfplay.matches import entrants, play_pairs

    players = {"random": "random", "scripted": "scripted", "predictive": "predictive"}
    checked = round_robin(players, 4, seed=9)
    played = play_pairs(entrants(players, "test"), 4, seed=9)
    assert played.names == checked.names
    assert np.array_equal(played.wins, checked.wins)
    assert np.array_equal(played.draws, checked.draws)
    # each pair's matches as play_matches plays them from the pair's own seed (the seeds of
    # a round robin: the same seed gives the same leaderboard as before)
    names = list(players)
    for i, j in [(0, 1), (0, 2), (1, 2)]:
        pair = play_matches(names[i], names[j], 4, seed=9 + 7919 * (i * 3 + j))
        assert (played.wins[i, j], played.wins[j, i]) == (pair.wins, pair.losses)
        assert played.draws[i, j] == played.draws[j, i] == pair.draws


def test_a_pool_seeded_with_a_generator_draws_from_it_as_a_seed_would():
    by_seed = OpponentPool(capacity=4, seed=7)
    generator = np.random.default_rng(7)
    by_generator = OpponentPool(capacity=4, seed=generator)
    assert by_generator.rng is generator
    for pool in (by_seed, by_generator):
        for step in range(4):
            pool.add(nn.Linear(2, 2), step=step)
    assert [by_seed.sample().id for _ in range(20)] == [by_generator.sample().id for _ in range(20)]


@pytest.mark.parametrize("seed", ["a", -1, 1.5, True, 2**64, 10**23])
def test_play_matches_and_round_robin_refuse_a_seed_that_is_not_a_seed(seed):
    # (torch's RuntimeError, or "Overflow when unpacking long")
    for name, play in (
        ("play_matches", lambda: play_matches("random", "random", 2, seed=seed)),
        ("round_robin", lambda: round_robin(["random", ("other", "random")], 2, seed=seed)),
    ):
        message = f"{name}: seed must be None or an int from 0 to 2**64 - 1, got {seed!r}"
        with pytest.raises(ValueError, match=re.escape(message)):
            play()
    assert play_matches("random", "random", 2, seed=2**64 - 1).matches == 2
    assert round_robin(["random", ("other", "random")], 2, seed=2**64 - 1).wins.sum() <= 2


@pytest.mark.parametrize("action", [3, -1])
@pytest.mark.parametrize("side", ["policy_a", "policy_b"])
def test_play_matches_names_the_policy_that_plays_an_action_the_game_lacks(side, action):
    # (the game's own error could not say whose action it was)
    def wrong(obs):
        return torch.full((len(obs),), action)

    policies = {"policy_a": "random", "policy_b": "random", side: wrong}
    message = f"play_matches: {side} returned the action {action}; this game's actions are 0 to 2"
    with pytest.raises(ValueError, match=re.escape(message)):
        play_matches(policies["policy_a"], policies["policy_b"], 4, seed=0)


def test_play_matches_with_a_seed_is_reproducible_and_leaves_torch_random_state_alone():
    drawn = []

    def sampling_policy(obs):  # draws from torch's global generator, as an Actor does
        action = torch.randint(0, 3, (len(obs),))
        drawn.append(action)
        return action

    torch.manual_seed(123)
    before = torch.get_rng_state()
    first = play_matches(sampling_policy, "random", 40, seed=7, max_steps=50_000)
    first_actions = torch.cat(drawn)
    assert torch.equal(torch.get_rng_state(), before)  # the caller's stream is untouched
    drawn.clear()
    torch.rand(5)  # the caller's generator moved on: the seed alone decides the matches
    second = play_matches(sampling_policy, "random", 40, seed=7, max_steps=50_000)
    assert torch.equal(torch.cat(drawn), first_actions)
    assert (first.wins, first.draws, first.losses) == (second.wins, second.draws, second.losses)


def test_play_matches_plays_both_sides_equally():
    sides = []

    @dataclass
    class Outcome:
        terminated: np.ndarray
        truncated: np.ndarray
        outcome: np.ndarray

    class FirstPlayerWins:
        """A toy game that player 0 always wins at the first step; obs = the side played."""

        def __init__(self, num_matches, seed):
            self.num_matches = num_matches

        def observe(self):
            return np.stack([np.zeros((self.num_matches, 1)), np.ones((self.num_matches, 1))])

        def reset(self, seed=None):
            return self.observe()

        def step(self, actions):
            m = self.num_matches
            return Outcome(np.ones(m, bool), np.zeros(m, bool), np.ones(m, np.int8))

    def policy(obs):
        sides.extend(obs[:, 0].tolist())
        return torch.zeros(len(obs), dtype=torch.long)

    assert isinstance(FirstPlayerWins(2, None), TwoPlayerGame)
    zeros = lambda obs: torch.zeros(len(obs), dtype=torch.long)  # noqa: E731
    stats = play_matches(policy, zeros, 10, game=FirstPlayerWins)
    assert (stats.wins, stats.losses) == (5, 5)
    assert sorted(sides) == [0.0] * 5 + [1.0] * 5
    with pytest.raises(ValueError, match="no built-in policies"):
        play_matches("scripted", policy, 2, game=FirstPlayerWins)


def test_match_stats_confidence_interval():
    stats = MatchStats(wins=90, draws=0, losses=10)
    low, high = stats.win_rate_interval
    assert low < 0.9 < high and low > 0.8 and high < 0.96
    assert "90 wins" in str(stats)
    with pytest.raises(ValueError, match="unknown Pong Duel opponent"):
        play_matches("scripted", "nobody", 2)
