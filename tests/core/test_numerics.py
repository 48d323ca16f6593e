"""The CPU arithmetic pins (``core.numerics``): the kernels decide the weights, and the pins fix them.

Each case trains a small two-layer network (GEMMs, softmax, tanh: a transformer's kernels) for a few AdamW steps in a fresh process (the kernels are chosen
when torch first computes, so only a new process can change them) and compares a hash of the
weights. Another processor is emulated by the variables that steer kernel choice: ATen's scalar
kernels (``ATEN_CPU_CAPABILITY=default``) and oneMKL limited to SSE4.2 (``MKL_ENABLE_INSTRUCTIONS``).
A second processor is emulated for real too: QEMU's user-mode emulator (``qemu-x86_64 -cpu``,
installed by ``make setup``) runs the same script as an Intel Haswell. QEMU rounds every IEEE
operation as hardware does and differs only where the instruction set leaves results to the
processor (the ``rsqrtps``/``rcpps`` approximations), which is where a processor's own floats come from.
Not covered: a real second CPU model (``make reproduce`` on another machine is that check).
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

TRAIN = """
import hashlib, os, sys
{pin}
import torch
torch.manual_seed(0)
# GEMMs (oneMKL), softmax and tanh (ATen's vectorised kernels), AdamW: a transformer's arithmetic
model = torch.nn.Sequential(torch.nn.Linear(96, 256), torch.nn.Tanh(), torch.nn.Linear(256, 96))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(1)
for _ in range(5):
    x = torch.randn(64, 96, generator=g)
    loss = -(torch.log_softmax(model(x), -1) * torch.softmax(x, -1)).sum(-1).mean()
    loss.backward(); opt.step(); opt.zero_grad()
h = hashlib.sha256(b"".join(t.detach().numpy().tobytes() for t in model.state_dict().values()))
print(h.hexdigest(), torch.backends.cpu.get_cpu_capability())
"""


def weights(pinned: bool, **env: str) -> tuple[str, str]:
    """(sha256 of the weights after 5 steps, ATen's kernel ISA) in a fresh process under ``env``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ATEN_CPU", "MKL_"))}
    # pinned: the project's own import order (core first); unpinned: torch before core, nothing set
    pin = "import core" if pinned else "import torch; torch.zeros(8).exp()"
    code = TRAIN.format(pin=pin)
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    digest, isa = out.stdout.split()[-2:]
    return digest, isa


def test_pins_give_one_arithmetic_whatever_the_kernels_offered() -> None:
    pinned = weights(True)
    assert pinned[1] == "AVX2"  # ATen pinned to AVX2 (an x86-64 CPU with AVX2, as every CI machine)
    # oneMKL told the processor has only SSE4.2: under the pins, the same weights
    assert weights(True, MKL_ENABLE_INSTRUCTIONS="SSE4_2")[0] == pinned[0]
    # a second import order that pins too (the variables set by hand) agrees
    assert weights(False, ATEN_CPU_CAPABILITY="avx2", MKL_CBWR="COMPATIBLE")[0] == pinned[0]


def test_without_pins_the_kernels_change_the_weights() -> None:
    """Why the pins exist: other kernels, other floats (so the test above can fail). oneMKL's own
    branch differs from its SSE2 CNR branch on Intel and AMD processors alike; limiting its
    instructions (``MKL_ENABLE_INSTRUCTIONS``) changes nothing on an AMD processor, where oneMKL
    takes one generic branch whatever it is offered, so that contrast is not asserted."""
    native = weights(False)
    assert weights(False, MKL_CBWR="COMPATIBLE")[0] != native[0]
    assert weights(False, ATEN_CPU_CAPABILITY="default")[0] != native[0]


OPTIMIZERS = """
import hashlib, sys
import core
import torch
from core import numerics
out = []
for make in (lambda ps: numerics.adamw(ps, lr=1e-3, betas=(0.9, 0.98)),
             lambda ps: torch.optim.AdamW(ps, lr=1e-3, betas=(0.9, 0.98), weight_decay=0.0)):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(96, 256), torch.nn.Tanh(), torch.nn.Linear(256, 96))
    opt = make(model.parameters())
    g = torch.Generator().manual_seed(1)
    for _ in range(5):
        x = torch.randn(64, 96, generator=g)
        loss = -(torch.log_softmax(model(x), -1) * torch.softmax(x, -1)).sum(-1).mean()
        loss.backward(); opt.step(); opt.zero_grad()
    out.append(hashlib.sha256(b"".join(t.detach().numpy().tobytes() for t in model.state_dict().values())).hexdigest())
print(*out)
"""

#: the emulated processor: an Intel without AVX-512 (QEMU emulates up to AVX2)
EMULATED = "Haswell-v4"


def optimizer_weights(emulate: str | None) -> list[str]:
    """[project optimizer's weights hash, torch default AdamW's] after 5 steps, natively or emulated."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ATEN_CPU", "MKL_"))}
    prefix = [] if emulate is None else ["qemu-x86_64", "-cpu", emulate]
    out = subprocess.run(
        [*prefix, sys.executable, "-c", OPTIMIZERS],
        cwd=ROOT,
        env=base,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()[-2:]


@pytest.mark.skipif(platform.machine() != "x86_64", reason="emulates x86-64 processors")
def test_the_projects_optimizer_gives_the_same_weights_on_an_emulated_processor() -> None:
    """The project's AdamW (fused) computes the same floats on an emulated Intel Haswell as here;
    torch's default AdamW does not (its square root is oneMKL's, rounded per processor), so the
    test fails if the project's optimizer goes back to it."""
    assert shutil.which("qemu-x86_64"), (
        "qemu-x86_64 not found (fix: `apt-get install qemu-user`, or `make setup` as root)"
    )
    project, default = optimizer_weights(None)
    emulated_project, emulated_default = optimizer_weights(EMULATED)
    assert emulated_project == project
    assert emulated_default != default


#: the project's importable packages (every ``python -m <package>.<module>`` entry point is under one)
PACKAGES = sorted(p.parent.name for p in ROOT.glob("*/__init__.py") if p.parent.name != "tests")


def test_every_package_pins_before_torch() -> None:
    """Importing any of the project's packages pins the arithmetic, so a ``python -m`` entry point
    whose module imports torch or veRL first (``recipes.gpu_smoke`` exporting the base model did)
    still builds under the pins. Without the pin in a package's ``__init__`` it built under the
    processor's own kernels (AVX-512 here) and another base model."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ATEN_CPU", "MKL_"))}
    code = "import importlib, os, sys\nfor p in sys.argv[1:]:\n    importlib.import_module(p)\n"
    code += "print(os.environ.get('ATEN_CPU_CAPABILITY'), os.environ.get('MKL_CBWR'))"
    assert {"recipes", "experiments", "benchmarks", "data_pipelines", "docgen", "core"} <= set(PACKAGES)
    for pkg in PACKAGES:
        out = subprocess.run(
            [sys.executable, "-c", code, pkg], cwd=ROOT, env=base, capture_output=True, text=True, timeout=300
        )
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.split()[-2:] == ["avx2", "COMPATIBLE"], f"importing {pkg} does not pin"
