"""The theory: the papers' symbols (notation.py), sympy derivations of Paper A's Eqns 1-8 and Paper
B's gates (theory.py, on derivation.py), measurements on real networks that test them (probes.py)."""
