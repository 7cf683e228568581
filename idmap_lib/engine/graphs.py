"""The training step, eager or replayed as one CUDA graph: the loop's (loop.py), whichever stepper
it drives.

A ResNet-110 step is ~1,200 small kernels, so eager PyTorch on a big GPU is bound by their launches;
the whole step (forward, backward, optimizer, the device-side sums) captured once in a CUDA graph
and replayed runs them without the host. The graph is captured again when the learning rate changes
(fused SGD bakes it into its kernel; 4 times in Paper A's schedule), after ``GRAPH_WARMUP`` eager
steps at every (re)start.
"""
from __future__ import annotations

import torch

# eager steps before the first capture (lazy init of cuDNN/cuBLAS handles, optimizer state)
GRAPH_WARMUP = 3


class GraphedStep:
    """The training step, eager or replayed as one CUDA graph, for a loop (``loop.Loop``) that has
    ``graph_on``, ``eager_since``, ``step``, ``opt``, ``stream``, ``graph``, ``graph_lr``,
    ``static`` and ``_forward_backward(x, y)`` (forward, backward, optimizer step and the
    device-side sums)."""

    def _capture(self, x, y, lr):
        """Capture the step in a CUDA graph for this learning rate (fused SGD bakes the lr into its
        kernel)."""
        self.graph = None  # frees the previous graph's memory pool
        if self.static is None:
            self.static = (torch.empty_like(x), torch.empty_like(y))
        # the captured backward then writes (not adds) the gradients
        self.opt.zero_grad(set_to_none=True)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=self.stream):
            self._forward_backward(*self.static)
        self.graph, self.graph_lr = g, lr

    def _step_on(self, x, y, lr):
        """One step on the batch (x, y): replayed from the graph (captured again when the lr
        changes) once GRAPH_WARMUP eager steps have run since the (re)start, else eager."""
        if self.graph_on and self.step - self.eager_since >= GRAPH_WARMUP:
            if self.graph is None or lr != self.graph_lr:
                self._capture(x, y, lr)
            self.static[0].copy_(x)
            self.static[1].copy_(y)
            self.graph.replay()
        else:
            self.opt.zero_grad(set_to_none=True)
            self._forward_backward(x, y)
