r"""The math verifier: is the final answer of a response the gold answer? Exact, rule-based, bounded.

What it does, in the order a response meets it:
- ``extract``: the one final answer of a response (``<answer>`` tag, ``\boxed{}``, an ``Answer:`` line,
  GSM8K's ``####``); hedges and several different answers are refused. ``split_think`` (reasoning vs
  answer) is shared with the shaping terms and the code source.
- ``normalize`` (string cleaning), ``numbers`` (exact plain-number parsing) and ``forms`` (number words,
  clock times, ratios, phrases, qualifiers): the answer as a canonical string or a ``Fraction``.
- ``equiv``: the entry, ``equivalent(pred, gold)`` -- structure first (sets, intervals, tuples,
  matrices, ``\pm``; ``sets`` brings set notations to one, ``readings`` decides the forms read by
  rules), then single values (``scalars``: plain numbers in-process, anything symbolic in the worker).
- ``symbolic`` (comparison), ``fastlatex`` (a fast LaTeX -> SymPy parser) and ``warm_forms`` (the
  worker's warm-up forms) run inside the reward worker process (``rewards.worker``), never here.

What it does not do: register the ``math`` / ``gsm8k`` data sources or score them (that is
``rewards.sources.math`` and ``rewards.compute_score``), run the worker pool (``rewards.worker``),
approximate matching unless the caller passes ``rel_tol``, unit conversion, or evaluate model text.
"""
