"""Prompt templates: the ``conf/template/`` config group, rendered into chat messages.

Each YAML file in ``conf/template/`` is one template (``r1_zero``, ``boxed``, ``dapo``, ``plain``)
with ``system`` (or null), ``user`` (``{question}`` is substituted, no other formatting, so
LaTeX braces need no escaping) and ``answer_format``: where the verifier will look for the
answer. The same files can be composed into a recipe as ``template=<name>``; this module
loads them by name for the data CLIs. Tasks declare which answer formats their verifier
accepts and :func:`check_compatible` refuses a mismatch (e.g. ``overtime_pay`` with ``boxed``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from omegaconf import OmegaConf

from core.registry import Registry

TEMPLATE_DIR = Path(__file__).resolve().parents[1] / "conf" / "template"
ANSWER_FORMATS = ("answer_tag", "boxed", "answer_line", "any")


@dataclass(frozen=True)
class Template:
    """A prompt template.

    Attributes:
        name: the file name in ``conf/template`` without ``.yaml``.
        user: user message; ``{question}`` is replaced by the question.
        system: optional system message.
        answer_format: where the answer goes: answer_tag | boxed | answer_line | any.
    """

    name: str
    user: str
    system: str | None = None
    answer_format: str = "any"

    def render(self, question: str) -> list[dict[str, str]]:
        """Chat messages for ``question``.

        >>> get_template("boxed").render("1+1?")[-1]["content"].endswith("\\\\boxed{}.")
        True
        """
        msgs = [{"role": "system", "content": self.system}] if self.system else []
        msgs.append({"role": "user", "content": self.user.replace("{question}", question)})
        return msgs


TEMPLATES: Registry[Template] = Registry("prompt template")


def _load(path: Path) -> Template:
    raw = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    if not isinstance(raw, dict) or "user" not in raw:
        raise ValueError(f"{path}: a template needs a 'user' field containing {{question}}")
    if "{question}" not in raw["user"]:
        raise ValueError(f"{path}: user: must contain the placeholder {{question}}")
    fmt = raw.get("answer_format", "any")
    if fmt not in ANSWER_FORMATS:
        raise ValueError(f"{path}: answer_format: {fmt!r} is not one of {ANSWER_FORMATS}")
    return Template(name=path.stem, user=raw["user"], system=raw.get("system"), answer_format=fmt)


for _p in sorted(TEMPLATE_DIR.glob("*.yaml")):
    TEMPLATES.add(_p.stem, _load(_p))


def get_template(name: str | Template) -> Template:
    """Look a template up by name (``KeyError`` lists the known ones); a Template passes through."""
    return name if isinstance(name, Template) else TEMPLATES.get(name)


def check_compatible(template: Template, accepted: tuple[str, ...], task: str) -> None:
    """Raise ``ValueError`` if ``task``'s verifier cannot read answers in ``template``'s format."""
    if template.answer_format != "any" and template.answer_format not in accepted:
        ok = [t for t in TEMPLATES.names() if TEMPLATES.get(t).answer_format in (*accepted, "any")]
        raise ValueError(
            f"[template] {template.name!r} asks for answers as {template.answer_format}, but the "
            f"{task!r} verifier reads {'/'.join(accepted)} (fix: template={'|'.join(ok)})"
        )
