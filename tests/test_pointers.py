"""Chapter 6's pointers to where each exercise's claim is tested at the paper's scale: the
verdict and the numbers come from the claim's evaluation."""
from types import SimpleNamespace as NS

from idmap_book.evidence import claim_words, judge, pointers


def fake(monkeypatch, verdicts):
    monkeypatch.setattr(judge, "evaluate", lambda c, scale=None, out_dir=None: verdicts[c.key])


def verdict(key, verdict, parts):
    return NS(claim=NS(words=f"the words of {key}", scale="cpu_step_warmup"), verdict=verdict,
              parts=parts)


def test_the_gate_bias_pointer_says_the_claim_and_its_sentence(monkeypatch):
    fake(monkeypatch, {"t1_gating_bias": verdict("t1_gating_bias", "inconclusive", [])})
    monkeypatch.setattr(claim_words, "sentence", lambda key, out_dir=None: f"<{key} in words>")
    text = pointers.gate_bias()
    assert text.startswith("At the paper's depth, [chapter 7](07_shortcuts.ipynb) tests Paper A's "
                           "claim (*the words of t1_gating_bias*) with ResNet-110: "
                           "<t1_gating_bias in words> A short run")


def test_the_slow_start_pointer_gives_each_seeds_steps_and_the_verdict(monkeypatch):
    test = NS(words=lambda: "steps to 80 %")
    key = "fig6_bn_after_add_slow_start"
    fake(monkeypatch, {key: verdict(key, "reproduced",
                                    [(test, {"xa": [40.0, 60.0], "xb": [400.0, 380.0, 400.0]})])})
    text = pointers.slow_start()
    assert "(steps to 80 %: 40 / 60 (2 seeds) against 400 / 380 / 400 (3 seeds), where" in text
    assert text.endswith("its verdict is **reproduced**.")
    assert "trained for 400 steps" in text  # the step warm-up probe's length


def test_the_pruning_pointer_gives_both_claims_means_and_verdicts(monkeypatch):
    test = NS(words=lambda: "test error")
    fake(monkeypatch, {k: verdict(k, v, [(test, {"mean_a": a, "mean_b": b})])
                       for k, v, a, b in (("b_greedy_pruning_beats_random", "reproduced", 0.05, 0.2),
                                          ("b_gresnet_survives_pruning", "contradicted", 0.3, 0.1))})
    text = pointers.pruning()
    assert ("*the words of b_greedy_pruning_beats_random* (test error: 5.0% against 20.0%): "
            "**reproduced**; *the words of b_gresnet_survives_pruning* (test error: 30.0% against "
            "10.0%): **contradicted**. Those runs") in text
