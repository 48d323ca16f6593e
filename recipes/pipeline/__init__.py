"""Multi-stage pipelines (DeepSeek-R1's four stages, distillation) as YAML files of stages.

``python -m recipes.pipeline pipeline=<name>`` (``make pipeline PIPELINE=<name>``) runs the stages of
``conf/pipeline/<name>.yaml`` in order, each stage's input being an earlier stage's output
(checkpoint or dataset), all linked in one ``pipeline.json`` (:mod:`recipes.pipeline.core`). Stage
kinds live in the :data:`STAGES` registry: ``task``, ``traces``, ``rejection``, ``mix``
(:mod:`~recipes.pipeline.stage_data`), ``sft``, ``rl`` (:mod:`~recipes.pipeline.stage_train`) and
``eval`` (:mod:`~recipes.pipeline.stage_eval`). Not covered: DAG scheduling or parallel stages.
"""

from __future__ import annotations

from recipes.pipeline import stage_data, stage_eval, stage_train  # noqa: F401  (register the stage kinds)
from recipes.pipeline.core import STAGES, StageContext, run_pipeline
from recipes.pipeline.spec import PipelineError, load, plan

__all__ = ["STAGES", "StageContext", "PipelineError", "load", "plan", "run_pipeline"]
