"""The theory: the papers' symbols (notation.py), sympy derivations of Paper A's Eqns 1-8
(theory.py) and of the gates (gate_theory.py), on one result object (derivation.py); measurements on
real networks that test them (probes.py)."""
