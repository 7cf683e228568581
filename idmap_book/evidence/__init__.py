"""What the runs show and how it is judged: the claims (claims.py, claim_words.py), a claim judged
on its runs (judge.py) and the rule (rule.py, seeds.py, power.py), every number read from a run
(metrics.py), the runs a page reads (runs.py, reports.py, checkpoints.py), the papers' numbers
(paper_numbers.py), where an exercise's claim is tested at the paper's scale (pointers.py), tables
over seeds (variants.py, tables.py), the verdicts (verdicts.py), the mechanism experiments
(mechanisms.py), "why pre-activation helps" (synthesis.py) and its float32 check (precision.py)."""
