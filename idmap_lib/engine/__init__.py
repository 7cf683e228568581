"""The engine: every experiment of both papers as data, and what trains it.

The middle layer: it builds on the models (``idmap_lib.models``) and imports nothing from the
book-side helpers or the command line (tests/test_layers.py).

- recipes.py: every experiment of He et al. 2016 (Paper A) and Savarese et al. 2016 (Paper B) as
  data, at ``cpu``, ``cpu_step_warmup`` and ``full`` scale; paper_recipes.py: each paper's recipe
  as a function of the network and the scale; schedule.py: the lr schedules;
- data.py (datasets as uint8 tensors), augment.py (on-device crop and flip, Paper A Sec 4.2);
- the arrows of training, steppers -> loop -> entry (tests/test_layers.py): loop.py, the one
  training loop (the step top to bottom, eager or as one CUDA graph; data order, lr, logs,
  divergence, evaluation, when to checkpoint, progress, results) and the ``Stepper`` contract;
  the steppers solo.py (one network: DDP, CUDA graph, GradScaler), fused.py (N runs of one
  architecture as one network) and stacked.py (Paper B's MNIST MLPs of one depth as one);
  trainer.py, the one entry: ``train`` (every caller's: the per-run lock, the thread policy, loops
  interleaved, Ctrl-C) and ``run``;
- device.py (device, precision, one process), build.py (model and optimizer), batches.py (data on
  the device, evaluation), checkpoint.py (a run's checkpoint and its resume), distributed.py
  (DDP: the loop imports it under torchrun only);
- results.py: one JSON file per finished run, with provenance; looked up by config hash. (The
  benchmarks live outside the library: tools/bench.py, ``python -m idmap_lib bench``.)
"""
