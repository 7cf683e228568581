"""tools/mutation_summary.py, which turns mutmut's records into the scores tests/MUTATION.md reports:
the per-module counts, the samples' draw, the Wilson interval and the scoring of named mutants."""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import mutation_summary as ms  # noqa: E402


def fake_mutants(tmp_path, codes):
    """A mutants/ tree whose one module `m` has these exit codes (1 killed, 0 survived, None not
    run yet)."""
    d = tmp_path / "mutants" / "idmap_lib"
    d.mkdir(parents=True)
    (d / "m.py.meta").write_text(json.dumps({"exit_code_by_key": {
        f"idmap_lib.m.x_f__mutmut_{i}": c for i, c in enumerate(codes)}}))
    return tmp_path / "mutants"


def test_the_wilson_interval_is_the_published_one():
    # Newcombe 1998 (Statistics in Medicine 17:857), Table II, method 3 (the score interval
    # without continuity correction), examples 81/263, 15/148 and 0/20
    for (k, n), want in {(81, 263): (0.2553, 0.3662), (15, 148): (0.0624, 0.1605),
                         (0, 20): (0.0, 0.1611)}.items():
        assert tuple(round(float(x), 4) for x in ms.wilson(k, n)) == want


def test_blocks_are_seeded_and_disjoint():
    names = [f"n{i}" for i in range(50)]
    b0, b1 = ms.draw(names, 20, 0), ms.draw(names, 20, 1)
    assert b0 == ms.draw(names, 20, 0) and not set(b0) & set(b1) and len(set(b0 + b1)) == 40
    with pytest.raises(SystemExit, match="do not fit"):
        ms.draw(names, 20, 2)


def test_a_module_is_scored_over_the_mutants_run_and_the_rest_counted_apart(tmp_path, monkeypatch):
    monkeypatch.setattr(ms, "verdicts", lambda: {})
    recs = ms.records(fake_mutants(tmp_path, [1, 1, 1, 0, None, 36]))
    per, survivors = ms.summarize(recs, set())
    c = per["m"]
    assert (c["killed"], c["timeout"], c["survived"], c["not checked"]) == (3, 1, 1, 1)
    assert ms.score(c) == 4 / 5 and survivors == ["idmap_lib.m.x_f__mutmut_3"]
    per, survivors = ms.summarize(recs, {"idmap_lib.m.x_f__mutmut_3"})  # judged equivalent
    assert ms.score(per["m"]) == 1 and not survivors


def test_within_scores_only_the_named_mutants(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(ms, "verdicts", lambda: {})
    fake = ms.records(fake_mutants(tmp_path, [1, 0, 0, 0, None]))
    monkeypatch.setattr(ms, "records", lambda: fake)
    named = tmp_path / "named.txt"
    named.write_text("# a random two\nidmap_lib.m.x_f__mutmut_0\nidmap_lib.m.x_f__mutmut_4  # not run\n")
    ms.main(["--within", str(named)])
    out = capsys.readouterr().out
    assert "100.0%" in out and "1 not run yet" in out and "mutmut_1" not in out
    lo, hi = ms.wilson(1, 1)
    assert f"[{100 * lo:.1f}%, {100 * hi:.1f}%]" in out
    named.write_text("idmap_lib.m.x_f__mutmut_0 idmap_lib.m.x_f__mutmut_4\n")  # not one a line
    with pytest.raises(SystemExit, match="one name a line"):
        ms.main(["--within", str(named)])
