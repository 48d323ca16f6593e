"""The CPU arithmetic pins: the kernel choices torch and oneMKL make per processor, fixed.

PyTorch picks its CPU kernels by what the processor offers, at run time: ATen's vectorised
kernels by ISA (AVX-512 on one Xeon, AVX2 on an EPYC) and oneMKL's GEMMs by processor and ISA.
Each choice sums floats in its own order, so the same seed, data and code train a different
model on another CPU -- and an RL effect measured on one machine does not travel. Measured on
this project's base-model pretraining (40 steps, one thread): ``ATEN_CPU_CAPABILITY=avx2`` and
``MKL_ENABLE_INSTRUCTIONS=AVX2`` (an AVX2-only processor, emulated) each change the weights;
thread count 1 vs 2 does not.

:func:`pin` sets, unless the user already set them, ``ATEN_CPU_CAPABILITY=avx2`` (ATen's AVX2
kernels, which every x86-64 CPU of the last decade runs; AVX-512 machines then compute as AVX2
ones do) and ``MKL_CBWR=COMPATIBLE`` (oneMKL's conditional numerical reproducibility on its SSE2
branch: the one branch oneMKL documents as giving the same results on Intel and non-Intel
processors; its AVX2 branch falls back to the processor's own dispatch on non-Intel CPUs). Both
are read when torch first computes, so ``core`` pins them before anything imports torch.
:func:`numerics` says what is in force; it joins the cache key of every built model
(:func:`core.model.cached_build`) and the versions every results file records.

Cost: the SSE2 GEMM branch and the AVX2 kernels can be slower than the processor's own;
``make results NAME=bench_numerics`` measures by how much (rendered in ``docs/first_run.md``).

The pins alone did not make a build identical across processors: on an AMD EPYC with AVX-512 the
same code, package versions and pins pretrained another base model than on the machine of the
earlier records (``make results NAME=reproduce``, rendered in ``docs/provenance.md``). The cause,
found by running the pretraining's first steps under QEMU as other processors
(``make results NAME=numerics_trace``): the corpus, initial weights, forward pass, gradients and
gradient clipping were identical, and the first optimizer step was not -- torch's unfused AdamW
takes ``torch.sqrt`` of its second moment, which on a float32 CPU tensor is oneMKL's vector math
(VML): not correctly rounded, rounded differently by each processor, and not governed by
``MKL_CBWR``. :func:`adamw` (torch's fused CPU AdamW, which takes the IEEE square root) is what
the project's pretraining, SFT and local RL engine use; with it the traced steps are the same on
every processor tried. Every results file names its processor (``core.results.cpu``). Not
covered: processors without AVX2 (ATen falls back to its scalar kernels: a different arithmetic,
visible as ``aten_cpu_capability`` in the key), non-x86 machines, GPU kernels, and
``torch.sqrt`` outside the optimizers: veRL's rollout-vs-actor Pearson diagnostic
(``torch.corrcoef``) still rounds per processor -- a logged metric, not an input to training. ``numerics_trace part=rl``
compares the first RL steps here and emulated, file by file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

#: the pins and their values (a value the user set wins, and is recorded as set)
PINS = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE"}


def pin() -> None:
    """Set each variable of :data:`PINS` that the user has not set (before torch computes)."""
    for key, value in PINS.items():
        os.environ.setdefault(key, value)


def numerics() -> dict[str, str]:
    """The arithmetic in force: ATen's kernel ISA, oneMKL's branch, torch's version.

    >>> sorted(numerics())
    ['aten_cpu_capability', 'mkl_cbwr', 'torch']
    """
    import torch  # here, not at the top: pin() must run before torch is loaded

    return {
        "aten_cpu_capability": str(torch.backends.cpu.get_cpu_capability()),
        "mkl_cbwr": os.environ.get("MKL_CBWR", ""),
        "torch": torch.__version__,
    }


def adamw(params: Iterable[Any], lr: float, betas: tuple[float, float], weight_decay: float = 0.0) -> Any:
    """torch's AdamW on its fused CPU kernel: the optimizer every model this project builds uses.

    torch's unfused Adam(W) (``foreach`` or the per-parameter loop) takes the square root of its
    second moment with ``torch.sqrt``, which on a float32 CPU tensor goes to oneMKL's vector math
    (VML): not correctly rounded, and rounded differently by each processor whatever ``MKL_CBWR``
    says (``results/numerics_trace``). The fused kernel takes the processor's IEEE square root, which
    every x86-64 CPU rounds alike. Same algorithm, same hyperparameters.
    """
    import torch  # here, not at the top: pin() must run before torch is loaded

    return torch.optim.AdamW(params, lr=lr, betas=tuple(betas), weight_decay=weight_decay, fused=True)
