"""Chapter 6's pointers from a classroom exercise to where its claim is tested at the paper's depth
or recipe, each with that claim's verdict and numbers as the records give them (Markdown)."""
from __future__ import annotations

from idmap_lib.engine import recipes
from . import claim_words, claims, judge


def _evaluated(key, out_dir=None):
    return judge.evaluate(claims.CLAIMS_BY_KEY[key], out_dir=out_dir)


def gate_bias(out_dir=None) -> str:
    """Paper A's exclusive-gate claim (Table 1), tested at ResNet-110 in chapter 7."""
    v = _evaluated("t1_gating_bias", out_dir)
    return (f"At the paper's depth, [chapter 7](07_shortcuts.ipynb) tests Paper A's claim "
            f"(*{v.claim.words}*) with ResNet-110: "
            f"{claim_words.sentence('t1_gating_bias', out_dir=out_dir)} A short run trains "
            "neither gate far, so whether $b_g = -6$ pulls ahead is a question for the paper's "
            "length.")


def slow_start(out_dir=None) -> str:
    """Fig 6's slow start of BN after the addition, tested at ResNet-110 in chapter 8: the steps
    each run took to its threshold, a run that never got there counted at its length."""
    v = _evaluated("fig6_bn_after_add_slow_start", out_dir)
    test, part = v.parts[0]
    steps = recipes.config("a_table2_activations", "bn_after_add-110", v.claim.scale)["steps"]

    def side(xs):
        return f"{' / '.join(f'{x:.0f}' for x in xs)} ({len(xs)} seeds)"
    return (f"At the paper's depth, [chapter 8](08_activations.ipynb) tests the slow start "
            f"(*{v.claim.words}*) with ResNet-110 trained for {steps} steps "
            f"({_named(v)}: "
            f"{side(part['xa'])} against {side(part['xb'])}, where the run's length means never): "
            f"its verdict is **{v.verdict}**.")


def _named(v) -> str:
    """A claim's first part in words (its variants named, ``claim_words.named``)."""
    return claim_words.named(v.parts[0][0].words(), getattr(v.claim, "experiment", ""))


def pruning(out_dir=None) -> str:
    """Paper B's two pruning claims (Fig 5), tested with its whole MNIST recipe in chapter 10."""
    vs = [_evaluated(k, out_dir)
          for k in ("b_greedy_pruning_beats_random", "b_gresnet_survives_pruning")]
    steps = recipes.config("b_mnist", "gresnet-d100", "full")["steps"]
    each = "; ".join(f"*{v.claim.words}* ({_named(v)}: "
                     f"{v.parts[0][1]['mean_a']:.1%} against {v.parts[0][1]['mean_b']:.1%}): "
                     f"**{v.verdict}**" for v in vs)
    return (f"With Paper B's whole recipe ({steps:,} steps), [chapter 10](10_gates.ipynb) tests "
            f"both of its pruning claims: {each}. Those runs differ from the classroom's in the "
            "length of training (and they use the whole training set), not in the net.")
