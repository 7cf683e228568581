"""The engine: every experiment of both papers as data, and what trains it.

The middle layer: it builds on the models (``idmap_lib.models``) and imports nothing from the
book-side helpers or the command line (tests/test_layers.py).

- recipes.py: every experiment of He et al. 2016 (Paper A) and Savarese et al. 2016 (Paper B) as
  data, at ``cpu``, ``cpu_step_warmup`` and ``full`` scale; paper_recipes.py: each paper's recipe
  as a function of the network and the scale; schedule.py: the lr schedules;
- data.py (datasets as uint8 tensors), augment.py (on-device crop and flip, Paper A Sec 4.2);
- loop.py: the one training loop, the lifecycle of N >= 1 runs trained together (data order, lr,
  logs, divergence, evaluation, checkpoints, resume, progress, results), driving a stepper:
  solo.py (one network: DDP, CUDA graph, GradScaler), fused.py (N runs of one architecture as one
  network) or stacked.py (Paper B's MNIST MLPs of one depth as one); trainer.py: ``train``,
  ``train_many``, ``run`` and ``train_loops`` (the per-run lock, groups interleaved, Ctrl-C);
- device.py (device, precision), build.py (model and optimizer), batches.py (data on the device,
  evaluation), graphs.py (the step as one CUDA graph), checkpoint.py, distributed.py (DDP);
- results.py: one JSON file per finished run, with provenance; looked up by config hash; bench.py:
  the benchmarks.
"""
