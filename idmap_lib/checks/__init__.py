"""Moved: the classroom (graders, student editions, batch grading) is its own package,
``idmap_class``; this old path forwards to it for one release (idmap_lib/_forward.py)."""
from .._forward import forward

forward(__name__, "idmap_class")
