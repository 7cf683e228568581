"""The synthesis chapter's mechanisms (book/synthesis.py): each status follows from its claims' verdicts by the rule
in the module's docstring, every piece of evidence names a claim (and a comparison) that exists, and the figure
draws what the runs and measurements recorded."""
import pytest

from idmap_lib.book import mechanisms, synthesis
from idmap_lib.book.claims import CLAIMS_BY_KEY


@pytest.mark.parametrize("m", synthesis.MECHANISMS, ids=lambda m: m.key)
def test_every_piece_of_evidence_names_a_claim_and_a_comparison_that_exist(m):
    mech = {c["key"]: c for c in mechanisms.MECHANISM_CLAIMS}
    for e in m.evidence:
        assert e.claim in CLAIMS_BY_KEY or e.claim in mech, e.claim
        assert e.if_reproduced in ("supported", "contradicted") and e.why
        if e.part:
            tests = CLAIMS_BY_KEY[e.claim].tests if e.claim in CLAIMS_BY_KEY else mech[e.claim]["tests"]
            assert e.part in [t.b for t in tests], (e.claim, e.part)
    assert synthesis.assess(m)["status"] in synthesis.STATUSES


@pytest.mark.parametrize("verdict, if_reproduced, reads", [
    ("reproduced", "supported", "supported"), ("contradicted", "supported", "contradicted"),
    ("reproduced", "contradicted", "contradicted"), ("contradicted", "contradicted", "supported"),
    ("inconclusive", "supported", "open"), ("needs the full recipe", "supported", "open"),
    ("not testable here", "contradicted", "open"), ("not run yet", "supported", "open")])
def test_what_a_verdict_says_of_its_mechanism(verdict, if_reproduced, reads):
    assert synthesis.reading(synthesis.Evidence("k", if_reproduced=if_reproduced), verdict) == reads


def test_a_mechanism_is_contradicted_by_one_piece_supported_by_all_and_open_otherwise():
    assert synthesis.combine(["supported", "contradicted"]) == "contradicted"
    assert synthesis.combine(["supported", "supported"]) == "supported"
    assert synthesis.combine(["supported", "open"]) == "open"
    assert synthesis.combine([]) == "open"  # no claim tests it: open, never supported


def test_the_clean_path_alone_is_judged_by_full_preact_against_relu_only_preact(monkeypatch):
    """ReLU-only pre-activation has the clean path: full pre-activation beating it at the lr jump contradicts the
    path alone; losing to it would support it; the other units' comparisons do not enter."""
    said = {}
    monkeypatch.setattr(synthesis, "claim_verdict", lambda k, part=None, out_dir=None: said[(k, part)])
    clean = synthesis.MECHANISMS_BY_KEY["clean_path"]
    for verdict, status in (("reproduced", "contradicted"), ("contradicted", "supported"), ("inconclusive", "open")):
        said[(synthesis.LR_JUMP, "relu_preact-110")] = verdict
        assert synthesis.assess(clean)["status"] == status
    said.update({("m_normalised_weight_inputs", None): "reproduced", (synthesis.LR_JUMP, None): "reproduced"})
    assert synthesis.assess(synthesis.MECHANISMS_BY_KEY["normalised_inputs"])["status"] == "supported"
    said[(synthesis.LR_JUMP, None)] = "contradicted"
    assert synthesis.assess(synthesis.MECHANISMS_BY_KEY["normalised_inputs"])["status"] == "contradicted"


def test_the_verdict_of_one_comparison_is_that_part_of_its_claim():
    full = synthesis.claim_verdict(synthesis.LR_JUMP)
    parts = [synthesis.claim_verdict(synthesis.LR_JUMP, u) for u in ("original-110", "relu_preact-110")]
    assert all(p in ("reproduced", "contradicted", "inconclusive", "not run yet", "not testable here") for p in parts)
    assert full != "reproduced" or all(p == "reproduced" for p in parts)
    with pytest.raises(KeyError, match="no comparison against"):
        synthesis.claim_verdict(synthesis.LR_JUMP, "dropout-0.5")
    with pytest.raises(KeyError, match="unknown claim"):
        synthesis.claim_verdict("no_such_claim")


def test_the_summary_in_words_names_every_mechanism_once_with_its_status():
    assessed = {m.key: {"status": s, "pieces": []} for m, s in
                zip(synthesis.MECHANISMS, ("contradicted", "supported", "open", "open"))}
    words = synthesis.in_words(assessed)
    assert words.count("is supported") == 1 and words.count("is contradicted") == 1 and "stay open" in words
    assert all((m.title[0].lower() + m.title[1:]) in words for m in synthesis.MECHANISMS)


def test_the_key_figure_draws_every_recorded_seed():
    fig, rises, spreads = synthesis.key_figure()
    drawn = {(t.xaxis, t.y[0]): list(t.x) for t in fig.data if len(t.x)}
    assert sum(len(v) for v in rises.values()) + sum(len(v) for v in spreads.values()) == \
        sum(len(v) for v in drawn.values())
    assert len(rises["full_preact-110"]) >= 3 and len(spreads["full_preact-110"]) == 3
