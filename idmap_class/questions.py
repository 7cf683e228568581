"""The "honest question" of chapter 6's ablations whose paper effect the classroom scale does not
show: what the book's own recorded runs (the spread file, ``effects.recorded``) show at that scale,
and what to predict, in Markdown. Numbers come from the records; the question is in words."""
from __future__ import annotations

from . import ablations as ab
from . import effects, guide


def _seeds(seeds) -> str:
    return ", ".join(map(str, seeds))


def _span(xs, fmt) -> str:
    return f"{min(xs):{fmt}} to {max(xs):{fmt}}"


def exclusive_gate_bias() -> str:
    seeds, book = effects.recorded("exclusive_gate_bias")
    s = guide.scales_in_words("exclusive_gate_bias")
    best = max(set(book["best_b_g"]), key=book["best_b_g"].count)
    at_best = effects.of_seeds(b == best for b in book["best_b_g"])
    return (
        f"**An honest question.** Paper A's result is about {s['paper_net']}, trained for "
        f"{s['paper_length']}. The classroom scale trains {s['net']} for {s['length']}, and there "
        f"the book's own runs do not show it: the lowest final training loss is at $b_g = {best}$ "
        f"in {at_best}, and $b_g = -6$ ends {_span(book['loss_b-6_minus_b0'], '.2f')} higher than "
        f"$b_g = 0$ (seeds {_seeds(seeds)}). Predict what your runs will show, and say in your "
        "prediction why the depth changes the answer: a gate nearly shut on $\\mathcal{F}$ keeps "
        "the shortcut close to the identity, so what does each $b_g$ do to the direct term of "
        "Eqn 8 across the units of this net, and across the units of ResNet-110? "
        "[Chapter 7](07_shortcuts.ipynb) trains the exclusive gate at the paper's depth.")


def bn_after_addition() -> str:
    seeds, book = effects.recorded("bn_after_addition")
    s = guide.scales_in_words("bn_after_addition")
    return (
        f"**An honest question.** Paper A sees the slow start in {s['paper_net']}, trained for "
        f"{s['paper_length']}. The classroom scale trains {s['net']} for {s['length']}; there the "
        "book's own runs with BN after the addition end with the higher training loss in "
        f"{effects.of_seeds(book['ends_worse'])} (final gap "
        f"{_span(book['final_gap'], '+.3f')}), as Paper A's Table 2 has it, but they do not show "
        "the slow start: BN after the addition is "
        f"behind at the first third of training in {effects.of_seeds(book['slower_start'])} (early "
        f"gap {_span(book['early_gap'], '+.3f')}; seeds {_seeds(seeds)}). Predict what your runs "
        "will show, and say in your prediction why the depth changes it: through how many BNs does "
        "the shortcut signal pass on its way across this net, and across ResNet-110? "
        "[Chapter 8](08_activations.ipynb) tests the slow start at the paper's depth.")


def plain_depth() -> str:
    seeds, book = effects.recorded("plain_depth")
    s = guide.scales_in_words("plain_depth")
    k = [effects.recorded_mean("plain_depth", f"gated_plain-d{d}", "mean_k")
         for d in ab.PLAIN_DEPTHS]
    same = [g == p for g, p in zip(book["gated_breaks_at"], book["plain_breaks_at"])]
    return (
        f"**An honest question.** Paper B trains its MNIST nets for {s['paper_length']}. It argues "
        "that a gate makes the identity easy to learn (one scalar $k$ instead of a whole weight "
        "matrix), but it reports no result for gated plain nets. The classroom scale trains them "
        f"for {s['length']}, and there the book's own runs do not show the gate rescuing the deep "
        "plain net: the plain net first fails at "
        f"$d$ = {' / '.join(map(str, book['plain_breaks_at']))} (seeds {_seeds(seeds)}), the gated "
        f"plain net at the same depth in {effects.of_seeds(same)}, and its mean $k$ (averaged over "
        f"the seeds) stays between {min(k):.2f} and {max(k):.2f}, near where it started. Predict "
        "what your runs will show, and say in your prediction why the length of training matters "
        "here: what is a gated layer at its initial $k$, and how far must $k$ move before the gate "
        "changes anything? [Chapter 10](10_gates.ipynb) trains Paper B's plain nets and ResNets "
        "with Paper B's whole recipe.")


def prune_by_k() -> str:
    seeds, book = effects.recorded("prune_by_k")
    s = guide.scales_in_words("prune_by_k")
    k = effects.recorded_mean("prune_by_k", "gresnet-d100", "mean_k")

    def errs(a):
        return " / ".join(f"{x:.1%}" for x in book[a])
    return (
        f"**An honest question.** Paper B prunes its $d = 100$ GResNet after {s['paper_length']}. "
        f"The classroom scale trains it for {s['length']}, and there the book's own runs show the "
        "opposite: removing the smallest-$k$ blocks first leaves a higher test error than removing "
        f"random ones in {effects.of_seeds(not b for b in book['greedy_beats_random'])} "
        f"({errs('gresnet_pruned_err')} against {errs('gresnet_random_err')}; seeds "
        f"{_seeds(seeds)}), and a higher one than the ResNet pruned at random "
        f"({errs('resnet_pruned_err')}) in "
        f"{effects.of_seeds(not b for b in book['gated_prunes_better'])}; the learned $k$ average "
        f"{k:.2f}, near where they started. Predict what your runs will show, and say in your "
        "prediction why the length of training changes it: what can a block's $k$ tell after so "
        "short a training, and what must it have learned before it tells which blocks matter? "
        "[Chapter 10](10_gates.ipynb) prunes GResNets trained with Paper B's whole recipe.")


HONEST = {f.__name__: f for f in (exclusive_gate_bias, bn_after_addition, plain_depth, prune_by_k)}


def honest_question(name: str) -> str:
    """Ablation `name`'s honest question (Markdown): its paper effect, what the book's runs at the
    classroom scale show instead, and what to predict."""
    if name not in HONEST:
        raise ValueError(f"{name!r} has no honest question; these do: {', '.join(HONEST)}")
    return HONEST[name]()
