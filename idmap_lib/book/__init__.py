"""Moved: the book's evidence engine is its own package, ``idmap_book``; this old path forwards to
it for one release (idmap_lib/_forward.py)."""
from .._forward import forward

forward(__name__, "idmap_book")
