"""What each paper found, as one seed's answers of an ablation exercise can show it
(``PAPER_EFFECT``), whether the book's recorded seeds show it at each scale (``SHOWS_PAPER_EFFECT``:
where not, the exercise asks an honest question), and the recorded seeds themselves (the spread
file, written from data/classroom by ``python -m idmap_class spread``)."""
from __future__ import annotations

from . import ablations as ab


def _k_falls(t):
    ks = [t[f"mean_k_d{d}"] for d in ab.K_DEPTHS]
    return all(x > y for x, y in zip(ks, ks[1:]))


# What each paper found, as one seed's answers of an exercise can show it.
PAPER_EFFECT = {
    # Paper A Table 1: the shortcut scaled by 0.5 trains worse than the identity
    "constant_scaling": lambda t: t["scaled_is_worse"],
    # Paper A Table 1: exclusive gating works at b_g = -6 and fails at b_g = 0
    "exclusive_gate_bias": lambda t: t["loss_b-6_minus_b0"] < 0,
    # Paper A Fig 6 and Table 2: BN after the addition starts slower and ends worse
    "bn_after_addition": lambda t: t["slower_start"] and t["ends_worse"],
    # Paper B Table 1 and its gate: plain nets break deep, and the gate lets the plain layers reach
    # the identity
    "plain_depth": lambda t: t["plain_breaks_at"] is not None and (
        t["gated_breaks_at"] is None or t["gated_breaks_at"] > t["plain_breaks_at"]),
    # Paper B Table 2: the mean learned k falls with every step of depth
    "gate_depth": _k_falls,
    # Paper B Sec 4.1: smallest k first beats random, and the pruned GResNet beats the pruned ResNet
    "prune_by_k": lambda t: t["greedy_beats_random"] and t["gated_prunes_better"],
}

# Whether an exercise shows the paper's effect, at each scale a student runs, in every seed the book
# recorded (data/classroom). Where not, it is an honest question: its statement says, before the
# prediction, what the paper found at its depth and length, what the book's runs show instead, and
# asks why. tests/test_ablation_effects.py checks both on the recorded runs. The MNIST exercises'
# gpu scale is their classroom scale.
SHOWS_PAPER_EFFECT = {"constant_scaling": {"classroom": True, "gpu": True},
                      "exclusive_gate_bias": {"classroom": False, "gpu": False},
                      "bn_after_addition": {"classroom": False, "gpu": False},
                      "plain_depth": {"classroom": False, "gpu": False},
                      "gate_depth": {"classroom": True, "gpu": True},
                      "prune_by_k": {"classroom": False, "gpu": False}}


def recorded(name, scale="classroom"):
    """The book's recorded runs of ablation `name` at `scale`, seed by seed: (seeds, {answer: [its
    value in each seed]}), as the spread file has them (written from data/classroom by ``python -m
    idmap_class spread``; tests/test_ablation_effects.py checks that they agree with the
    runs)."""
    sp = ab.spread().get(ab.spread_key(name, scale)) or {}
    return sp.get("seeds", []), sp.get("answers_by_seed", {})


def recorded_mean(name, key, metric, scale="classroom"):
    """The mean over the book's seeds of one metric of run `key` of ablation `name` (the spread
    file)."""
    return ab.spread()[ab.spread_key(name, scale)]["runs"][key]["mean"][metric]


def shown(name, scale="classroom") -> list[bool]:
    """Seed by seed: do the book's recorded runs of `name` at `scale` show the paper's effect
    (``PAPER_EFFECT``)?"""
    seeds, answers = recorded(name, scale)
    return [bool(PAPER_EFFECT[name]({a: v[i] for a, v in answers.items()}))
            for i in range(len(seeds))]


def of_seeds(flags) -> str:
    """[True, True, False] -> '2 of 3 seeds'."""
    flags = list(flags)
    return f"{sum(map(bool, flags))} of {len(flags)} seeds"


def effect_in_words(name, scale="classroom") -> str:
    """What the book's recorded seeds of `name` at `scale` show of the paper's effect, in a
    sentence."""
    flags = shown(name, scale)
    if not flags:
        return (f"not recorded yet: `python -m idmap_class spread {name} --scale {scale}` (on "
                f"a GPU, or hours "
                "on a CPU)")
    if SHOWS_PAPER_EFFECT[name][scale]:
        return (f"the book's runs show the paper's effect in every seed they recorded "
                f"({of_seeds(flags)}).")
    return f"the book's runs show the paper's effect in {of_seeds(flags)}: not reliably."
