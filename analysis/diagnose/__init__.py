"""The RLVR diagnostic checklist for one run: ``python -m analysis.diagnose run=<run dir>``.

In checklist order (seed document, "RLVR 训练不涨分时按顺序查"), one module per thing checked:

1. ``verifier``: verifier false negatives -- zero-scored responses re-graded by an independent grader;
2. ``difficulty``: group pass rates, and the share of groups that give no gradient;
3. ``logprobs``: training vs rollout log-probabilities;
4-5. ``curves``: entropy, and response length against accuracy;
6. ``base_model``: the base model's pass@1 vs pass@k;
7. ``hacking``: the top-scored responses and how fast the reward rose;
8. ``reward_model``: a learned reward over-optimised (proxy up, gold accuracy down);
9. ``behaviour``: self-checks and corrections over steps (``response_kinds`` classifies a response;
   it imports nothing heavy, so the local engine's base-model probe uses it too).

``registry`` holds the check registry and what a check sees; ``checklist`` runs them (``make
diagnose``) and writes ``diagnosis.md`` / ``diagnosis.html``. Every threshold is a heuristic stated
in its verdict: a check flags what to read, it proves nothing; data a run did not log gives "not
logged", never an error.

What it does not do: compare runs (``analysis.report``) or evaluate a model (``analysis.evaluate``).
Importing this package loads no check (nor matplotlib): ``checklist`` does.
"""
