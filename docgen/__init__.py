"""The docs generator: every generated block of README.md and docs/ and every figure under docs/figures/.

``python -m docgen`` (``make docs``) rewrites the blocks from the committed ``results/`` and from
``conf/``; ``python -m docgen check=true`` changes nothing and exits 1 listing every stale block or
figure. Layout:

- :mod:`docgen.engine`: the gen-block machinery (find the ``<!-- gen:<name> -->`` blocks, render,
  write or check them; figures as SVG identified by the hash of their data);
- :mod:`docgen.blocks`: the one list of every block and the function rendering it;
- :mod:`docgen.results`: the one reader of results files (a missing experiment renders the command
  that writes it);
- one module per documented topic: :mod:`~docgen.recipes`, :mod:`~docgen.seed_table`,
  :mod:`~docgen.r1_zero`, :mod:`~docgen.thinking_budget`, :mod:`~docgen.ablations`,
  :mod:`~docgen.reward_models` (+ ``reward_models_runs``), :mod:`~docgen.benchmarks`,
  :mod:`~docgen.pipelines`, :mod:`~docgen.status`.

The top of the import graph: it may import every package, and no package imports it (tests aside;
``recipes.sweep`` asks for a refresh through the command line). Does not run experiments or compute
statistics (``analysis`` does: ``analysis.stats``, ``analysis.metrics``), and does not render the
run reports of ``make diagnose`` / ``make report`` (``analysis.render``).
"""

import core  # noqa: F401 - first: pins the CPU arithmetic before this package imports torch (core.numerics)
