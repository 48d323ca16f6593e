"""The characters the tasks write, and the ``task_chars`` tokenizer that spells each as one token.

:func:`task_characters` collects every non-ASCII character in the source of the task generators
and prompt templates (``data_pipelines/tasks``, ``data_pipelines/templates``, ``conf/template``):
the overtime-pay questions' Chinese, ``÷``, ``×`` and the like. Registering ``task_chars`` in
:data:`core.model.TOKENIZERS` gives the laptop base model a character tokenizer
(:func:`core.model.char_tokenizer_for`) in which every such character is one token and any other
text is spelled byte by byte. Not covered: characters that reach a prompt only through data files.
"""

from __future__ import annotations

from typing import Any

from core.fingerprint import REPO
from core.model import TOKENIZERS, char_tokenizer_for

SOURCES = ("data_pipelines/tasks", "data_pipelines/templates", "data_pipelines/templates.py", "conf/template")


def task_characters() -> str:
    """Sorted non-ASCII characters of the task and template sources (see module)."""
    chars: set[str] = set()
    for src in SOURCES:
        path = REPO / src
        files = [path] if path.is_file() else sorted(path.rglob("*")) if path.is_dir() else []
        for f in files:
            if f.suffix in (".py", ".yaml") and "__pycache__" not in f.parts:
                chars.update(c for c in f.read_text(encoding="utf-8") if ord(c) > 127 and c.isprintable())
    return "".join(sorted(chars))


@TOKENIZERS.register("task_chars")
def task_chars_tokenizer() -> Any:
    """The character tokenizer over printable ASCII + :func:`task_characters` (bytes for the rest)."""
    return char_tokenizer_for(task_characters())
