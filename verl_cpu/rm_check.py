"""The reward-model score check of a veRL run on this CPU: the trainer's scores against offline ones.

:func:`offline_scores` pairs every score veRL's trainer trained on (its rollout dump,
``trainer.rollout_data_dir``: the decoded prompt, the response and the score of each sample) with
the same reward model's score of that (prompt, response) computed in this process, independently of
the server (:mod:`verl_cpu.reward_model`): the chat-templated text tokenized without special tokens,
P(good) at the last token. Equal pairs mean the reward loop neither lost nor reordered a sample.
Used by ``tests/verl_cpu/test_reward_model_slow.py`` and ``experiments.verl_cpu_features``.
Not covered: a PRM's step readings (the server serves ORMs only).
"""

from __future__ import annotations

import json
from pathlib import Path


def offline_scores(run_dir: Path, rm_path: Path) -> list[tuple[float, float]]:
    """(trainer's score, offline score) of every sample veRL dumped under ``run_dir/rollouts``, in the
    dump's order (steps ascending)."""
    import pandas as pd  # the check only: heavy imports
    import torch  # the check only: heavy imports
    import yaml  # the check only: heavy imports

    from core import reward_model as rmod  # transformers: the check only

    rm = rmod.load(rm_path)
    tok = rm.tokenizer
    cfg = yaml.safe_load((Path(run_dir) / "verl_config.yaml").read_text())
    question = {}  # the decoded chat prompt (as veRL dumps it) -> the question the reward function reads
    for _, row in pd.read_parquet(cfg["data"]["train_files"]).iterrows():
        ids = tok.apply_chat_template(list(row["prompt"]), add_generation_prompt=True, tokenize=True)
        ids = ids["input_ids"] if isinstance(ids, dict) else ids
        question[tok.decode(ids, skip_special_tokens=True)] = row["extra_info"]["question"]
    out = []
    for dump in sorted((Path(run_dir) / "rollouts").glob("*.jsonl"), key=lambda p: int(p.stem)):
        for line in dump.read_text().splitlines():
            r = json.loads(line)
            chat = [
                {"role": "user", "content": question[r["input"]]},
                {"role": "assistant", "content": r["output"]},
            ]
            text = tok.apply_chat_template(chat, add_generation_prompt=False, tokenize=False)
            text = text.removeprefix(tok.bos_token or "")  # as veRL's request drops it (vLLM adds its own)
            ids = tok(text, add_special_tokens=False)["input_ids"]
            with torch.no_grad():
                p = float(rm.model(input_ids=torch.tensor([ids])).logits[0, -1].softmax(-1)[1])
            out.append((float(r["score"]), p))
    return out
