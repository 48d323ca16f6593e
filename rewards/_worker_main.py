"""Entry point of a reward worker process (``python -m rewards._worker_main``).

Reads one JSON request per line on stdin, runs one of the operations in ``OPS`` and writes one
JSON reply per line (with the CPU seconds the operation used) on the original stdout (``sys.stdout`` is redirected to stderr so nothing
else can corrupt the channel). Says ready as soon as SymPy is imported (~0.3 s) and warms the
LaTeX parser and its comparison paths with ``rewards.math.warm_forms.WARMUP`` and ``WARM_PAIRS`` in idle time, between requests. Limits its own address space. Runs no model text as code: the
operations only parse LaTeX into SymPy objects.
"""

from __future__ import annotations

import json
import os
import resource
import select
import sys
import time


def main() -> None:
    mem = int(os.environ.get("REWARDS_WORKER_MEM_MB", "2048")) * 1024 * 1024
    try:
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    except (ValueError, OSError):
        pass
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    sys.stdout = sys.stderr
    from rewards.math.symbolic import OPS, WARM_PAIRS, WARMUP, warm_one  # after the worker set its limits

    out.write(b'{"ready": true}\n')
    # Warm the parser in idle time, one expression at a time, so a request never waits long.
    pending: list = list(reversed([*WARMUP, *WARM_PAIRS]))
    buf = b""
    while True:
        while b"\n" not in buf:
            if pending and not select.select([0], [], [], 0)[0]:
                warm_one(pending.pop())
                continue
            chunk = os.read(0, 1 << 16)
            if not chunk:
                return
            buf += chunk
        line, _, buf = buf.partition(b"\n")
        cpu0 = time.process_time()
        try:
            req = json.loads(line)
            value = OPS[req["op"]](*req["args"])
            reply = {"ok": True, "value": value, "cpu_s": time.process_time() - cpu0}
        except MemoryError:
            reply = {"ok": False, "error": "MemoryError"}
        except Exception as e:  # noqa: BLE001 - report any failure to the parent, never die
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}"[:500]}
        try:
            data = json.dumps(reply)
        except (TypeError, ValueError) as e:  # a result that is not JSON: an error reply, never a dead worker
            data = json.dumps({"ok": False, "error": f"unserialisable result: {e}"[:500]})
        out.write(data.encode() + b"\n")


if __name__ == "__main__":
    main()
