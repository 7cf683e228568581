"""Ctrl-C while runs train: acted on between two steps, so that the checkpoint holds a whole step,
and said in one line (``TrainingInterrupted``) instead of a traceback ending inside torch.
trainer.train uses both."""
from __future__ import annotations

import signal
import threading


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during training, after every unfinished run's checkpoint was written: still a
    KeyboardInterrupt (a notebook's "Run all" stops there, a script exits), shown by IPython as its
    one line instead of a traceback."""

    def _render_traceback_(self):  # IPython's hook for an exception's own rendering
        return [str(self)]


class DeferredInterrupt:
    """Ctrl-C (a notebook's stop button) while runs train: noted by the signal handler and acted on
    between two steps, so that the checkpoint holds a whole step (an interrupt inside the
    optimizer's step would leave half the weights updated). A second Ctrl-C interrupts at once. Only
    in the main thread of a single process (DDP ranks would stop at different steps)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled and threading.current_thread() is threading.main_thread()
        self.hit, self.before = False, None

    def _note(self, signum, frame):
        if self.hit:
            raise KeyboardInterrupt
        self.hit = True

    def __enter__(self):
        if self.enabled:
            self.before = signal.signal(signal.SIGINT, self._note)
        return self

    def __exit__(self, *exc):
        if self.enabled:
            signal.signal(signal.SIGINT, self.before)
