"""What to train next and what it costs: the sweep (sweep.py), its queue, its ledger and where it
stands (queue.py, ledger.py, queue_status.py), the CPU scale's probe (cpu_scale.py), run times
(run_times.py), Paper B's MNIST grid (mnist_grid.py), the measurements around the lr jump
(jump_watch.py)."""
