"""How to train, apart from what: the options of the loop (loop.py) and so of every entry point
(``trainer.train``, for solo, fused and stacked runs alike), as one object.

The recipe config says *what* a run trains (model, data, schedule, seed: its hash names the run);
these say *how and where*: the device, the folders, checkpoints, precision, progress. None of them
changes a run's identity; ``amp``/``channels_last``/``cuda_graph``/``compile`` change how fast it
goes (and ``amp`` the rounding), which its result records.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import Any, Callable


@dataclass(frozen=True)
class TrainOptions:
    """device: "cuda", "cpu", ... or None (the best there is). out_dir: the results folder (default:
    ``results.default_out_dir``); a finished run's result is written there. checkpoint_dir: where
    checkpoints go (e.g. Google Drive on Colab); None = no checkpoints. checkpoint_every: steps
    between checkpoints (rounded up to a multiple of log_every); default eval_every.
    checkpoint_minutes: also a checkpoint whenever this many minutes of wall time have passed since
    the last
        (a student's run on Colab: a disconnect loses at most that much).
    resume: continue from the checkpoint of this run in checkpoint_dir, if there is one. max_steps:
    stop after this many steps of the recipe (schedule unchanged), save a checkpoint and return
        status "stopped" (nothing written to results): a run "killed" on purpose, to be resumed.
    compile: torch.compile the model. on_log: called with the run's history after every log window
    (the book's live curves). progress: a progress bar and the one-line reports (device, pace,
    projected time). deterministic: torch.use_deterministic_algorithms(True) (exact resume on CPU is
    bit-for-bit). amp: "auto" (bf16 where the hardware has it, fp16 + GradScaler on older GPUs, else
    fp32), "bf16", "fp16", "fp32". channels_last: "auto" (for conv nets), True or False.
    write_result: write the finished run's result under out_dir. cuda_graph: on CUDA, replay the
    whole step as one CUDA graph (ignored, with a note, where it cannot be). move: resume a
    checkpoint written on another kind of device or in another precision (bf16 on an H200 -> fp16
    on a T4 -> fp32 on a CPU); refused without it. The run is then no longer bit-exact (another
    precision, a new augmentation stream) and its result lists the move under "moves".
    threads: on a CPU, torch's threads while the runs train (restored after): a number, "auto" (one
    for Paper B's MLPs, else every physical core: ``device.cpu_threads``), or None (as they are).
    The result records them. on_step: called with the loop (``loop.Loop``) once it is built and
    after every step: a look at the training itself (book/evidence/mechanisms.py's forwards).
    """
    device: Any = None
    out_dir: Any = None
    checkpoint_dir: Any = None
    checkpoint_every: int | None = None
    checkpoint_minutes: float | None = None
    resume: bool = False
    max_steps: int | None = None
    compile: bool = False
    on_log: Callable | None = None
    progress: bool = True
    deterministic: bool = False
    amp: str = "auto"
    channels_last: Any = "auto"
    write_result: bool = True
    cuda_graph: bool = False
    move: bool = False
    threads: int | str | None = None
    on_step: Callable | None = None

    @classmethod
    def of(cls, options: TrainOptions | None = None, **changes) -> TrainOptions:
        """`options` (default: the defaults) with `changes`; an unknown name is refused with the
        list of names."""
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(changes) - set(names))
        if unknown:
            raise TypeError(f"unknown training option{'s' if len(unknown) > 1 else ''} "
                            f"{', '.join(unknown)}: the options are {', '.join(names)}")
        return dataclasses.replace(options or cls(), **changes)

    def refuse(self, who: str, reasons: dict[str, str]) -> None:
        """Raise ValueError if any option named in `reasons` ({option: why not}) is set to other
        than its default: `who` does not take it, for that reason."""
        set_ = [f"{n} ({why})" for n, why in reasons.items()
                if getattr(self, n) != getattr(DEFAULTS, n)]
        if set_:
            raise ValueError(f"{who} does not take {'; '.join(set_)}: train such runs one at a "
                             f"time")


DEFAULTS = TrainOptions()
