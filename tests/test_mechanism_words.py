"""Chapter 8's sentences on the weight layers' inputs: each number read from the summary it is
given."""
from idmap_book.evidence import mechanisms
from idmap_book.figures import mechanism_words
from support import Words

mw = Words(mechanism_words)

UNITS = ("original", "relu_preact", "full_preact")


def summary(scale):
    """A weight_input_summary of two seeds whose values are known: unit u, depth d, step t, key k,
    seed s."""
    keys = ("spread", "first_0", "first_L", "max", "fc_input_std", "lr")
    out = {}
    for u, unit in enumerate(UNITS):
        for d in mechanisms.DEPTHS:
            out[(unit, d)] = {s: {"steps": {t: {k: scale(unit, d, t, k,
                                                         s) for k in keys}
                                                         for t in mechanisms.AT[d]}}
                              for s in (0, 1)}
    return out


def test_the_headline_is_the_original_1001s_largest_input_against_full_preactivations():
    last = mechanisms.AT[1001][-1]

    def scale(unit, d, t, k, s):
        if k == "max":
            return {"original": 2000.0 + s, "full_preact": 1.5,
                    "relu_preact": 50.0}[unit] if t == last else 0.9
        return 0.1 if k == "lr" else 1.0
    text = mw.headline(summary(scale))
    assert f"{last} steps at lr 0.1 into" in text
    assert "has a std of 2000–2001, against 1.5 in full pre-activation" in text
    assert "(each started below 0.9)" in text


def test_the_measurement_in_full_reads_each_unit_and_says_the_verdict_and_the_swaps():
    def scale(unit, d, t, k, s):
        if k == "spread":
            # x3.2, x100, x10
            return {"full_preact": 0.5, "original": 2.0, "relu_preact": 1.0}[unit]
        if k == "fc_input_std":
            return {"full_preact": 0.28, "original": 1.7, "relu_preact": 1.4}[unit]
        return 1.0
    text = mw.in_full(summary(scale), "reproduced", "SWAPS SAY THIS.")
    assert text.startswith("**The measurement in full** (2 seeds each;")
    assert "differ by a factor of 3.16 at initialisation" in text
    assert "a factor of 1e+02 and 10 over all weight layers" in text
    assert ("the std of its input is 0.28 in full pre-activation ResNet-110 against 1.7 "
            "(original) and 1.4" in text)
    assert "is **reproduced**." in text and "one part at a time: SWAPS SAY THIS." in text
    assert "when this page was built" not in text  # a pointer to the synthesis, no status list


def test_the_scaled_shortcuts_words_read_each_lambda_and_the_fit():
    """Chapter 3: the direct term's share, the signal's rms, the branch ratio and the gradient's
    growth per λ, the settled rms argued (1/sqrt(1 - λ²)), the fitted c² and per-unit gain, and the
    three claims' verdicts."""
    keys = ("log10_share_x0", "rms_L", "rms_0", "branch_last", "log10_grad_ratio")
    lams = mechanisms.LAMS
    fs = {lam: {s: {"units": 1000, **{k: (lam * 10 + i) + s for i, k in enumerate(keys)}}
                for s in (0, 1)}
          for lam in lams}
    fit = {lam: {s: {"c2": 0.5 + s / 10, "per_unit_gain": 1.001 + lam / 1000} for s in (0, 1)}
           for lam in lams}
    verdict = {"m_direct_term_vanishes": "A", "m_branches_keep_size": "B",
               "m_gradient_through_branches": "C"}
    text = mw.scaled_shortcuts(fs, fit, verdict)
    mid, lo = 0.9, 0.5
    assert (text.startswith("**Measured** (2 seeds per λ;")
            and f"At λ = {mid} the direct term" in text)
    assert "carries $10^{9}$ to $10^{10}$ of" in text  # λ = 0.9: log10 share 9 + seed
    assert (f"an rms of {1 / (1 - mid ** 2) ** 0.5:.2f} at λ = {mid} and "
            f"{1 / (1 - lo ** 2) ** 0.5:.2f}" in text)
    assert "is 0.5–0.6 (every seed)" in text and "1.002" in text
    assert "**A**" in text and "**B**" in text and "**C**" in text


def test_the_truncation_words_compare_the_depths_at_the_recorded_step_and_say_the_verdict():
    T, last = mechanisms.TRUNCATION_STEP, mechanisms.AT[110][-1]
    keys = ("mean", "first_third", "last_third", "first_unit")
    steps = {0, T, last}

    def rec(depth, s):
        return {t: {k: (0.2 if depth == 110 else 0.1) + i / 100 + t / 1000 + s / 10000
                    for i, k in enumerate(keys)}
                for t in steps}
    tr = {d: {s: rec(d, s) for s in (0, 1)} for d in (110, 1001)}
    text = mw.truncation(tr, {"m_truncation_grows_with_depth": "contradicted"})
    assert (text.startswith(f"**Measured** (2 seeds a depth, CIFAR-10 batches of the runs "
                            f"themselves). {T} steps in"))
    assert (f"a fraction {0.1 + T / 1000:.2g}" in text
            and "is **contradicted**; Paper A" in text)
    lr = mechanisms.recipe_of(110, "original", 0)["schedule"]["warmup_lr"]
    assert f"a few steps at lr {lr:g} cannot test that" in text
