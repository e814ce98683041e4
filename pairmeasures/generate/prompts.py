"""The prompts of PAIR's fit-set generation (§3.1, A.5), read from a JSON template file.

The packaged file ``prompts.json`` holds the paper's prompts verbatim, plus two additions it names
(a header instruction, and a prompt for the distractor question); ``--prompts FILE`` replaces it.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Optional

__all__ = ["Prompts", "PromptsError", "load_prompts", "parse_sides", "clean_article", "parse_question"]

#: Each template and the placeholders it may use.
PLACEHOLDERS = {
    "sides": {"question"},
    "header_instruction": set(),
    "article": {"question", "perspective"},
    "distractor_question": {"question"},
    "distractor_answer": {"document", "distractor_question"},
    "distractor_rewrite": {"perspective"},
}


class PromptsError(ValueError):
    """A prompts file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class Prompts:
    """The templates (:data:`PLACEHOLDERS`), the optional system message, the header pattern and where they came from."""

    templates: dict
    system: Optional[str]
    header_pattern: re.Pattern
    source: str
    sha256: str

    def messages(self, name: str, **values: str) -> list:
        """The chat messages of a one-turn prompt: the system message (if any) and the filled template."""
        text = self.fill(name, **values)
        if name == "sides":
            text += self.templates["header_instruction"]
        return ([{"role": "system", "content": self.system}] if self.system else []) + [{"role": "user", "content": text}]

    def fill(self, name: str, **values: str) -> str:
        return self.templates[name].format_map(values)


def load_prompts(path=None) -> Prompts:
    """The packaged prompts, or those of the JSON file ``path`` (every key of the packaged file, see its ``about``)."""
    if path is None:
        raw = resources.files(__package__).joinpath("prompts.json").read_bytes()
        source = "pairmeasures/generate/prompts.json (packaged)"
    else:
        path = Path(path).expanduser()
        if not path.is_file():
            raise PromptsError(f"prompts file {str(path)!r} does not exist")
        raw, source = path.read_bytes(), str(path.resolve())
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PromptsError(f"{source}: not a JSON file ({exc})") from None
    if not isinstance(data, dict):
        raise PromptsError(f"{source}: expected a JSON object of prompts")
    missing = [k for k in (*PLACEHOLDERS, "header_pattern") if not isinstance(data.get(k), str)]
    if missing:
        raise PromptsError(f"{source}: needs the text keys {', '.join(missing)} (see the packaged prompts.json)")
    for name, allowed in PLACEHOLDERS.items():
        try:
            used = {field for _, field, _, _ in string.Formatter().parse(data[name]) if field is not None}
        except ValueError as exc:
            raise PromptsError(f"{source}: key {name!r}: {exc} (write literal braces as {{{{ and }}}})") from None
        if used - allowed:
            raise PromptsError(f"{source}: key {name!r} uses {', '.join(sorted(used - allowed))}; it may use "
                               f"{', '.join('{' + a + '}' for a in sorted(allowed)) or 'no placeholder'}")
    try:
        pattern = re.compile(data["header_pattern"], re.MULTILINE)
    except re.error as exc:
        raise PromptsError(f"{source}: key 'header_pattern' is not a regular expression: {exc}") from None
    if not {"number", "statement"} <= set(pattern.groupindex):
        raise PromptsError(f"{source}: key 'header_pattern' needs the named groups (?P<number>...) and (?P<statement>...)")
    system = data.get("system")
    if system is not None and not isinstance(system, str):
        raise PromptsError(f"{source}: key 'system' must be a string or null")
    return Prompts(templates={k: data[k] for k in PLACEHOLDERS}, system=system or None, header_pattern=pattern,
                   source=source, sha256=hashlib.sha256(raw).hexdigest())


def parse_sides(reply: str, pattern: re.Pattern) -> tuple[list, list]:
    """The two perspective statements of a sides reply and the article under each header (``""`` where
    none), or a :class:`ValueError` saying what the reply lacks.

    Strict: the first header numbered 1 and the first numbered 2 count, both must be there with distinct,
    non-empty statements; a header's article is the text up to the next header.
    """
    headers = list(pattern.finditer(reply))
    first: dict = {}
    for index, match in enumerate(headers):
        first.setdefault(match.group("number"), index)
    if set(first) != {"1", "2"}:
        found = ", ".join(sorted(first)) or "none"
        raise ValueError(f"the reply needs headers for perspectives 1 and 2 (found: {found})")
    statements, articles = [], []
    for number in ("1", "2"):
        match = headers[first[number]]
        statement = match.group("statement").strip().strip("*_\"'").strip()
        end = headers[first[number] + 1].start() if first[number] + 1 < len(headers) else len(reply)
        statements.append(statement)
        articles.append(reply[match.end():end].strip())
    if not all(statements):
        raise ValueError("a perspective header has no statement")
    if statements[0].casefold() == statements[1].casefold():
        raise ValueError(f"both perspectives say the same: {statements[0]!r}")
    return statements, articles


def clean_article(reply: str, pattern: re.Pattern) -> str:
    """An article reply without a leading perspective header; a :class:`ValueError` when nothing is left."""
    text = reply.strip()
    match = pattern.match(text)
    if match is not None:
        text = text[match.end():].strip()
    if not text:
        raise ValueError("the reply holds no article")
    return text


def parse_question(reply: str) -> str:
    """The first question (a line ending in '?') of a reply; a :class:`ValueError` when there is none."""
    for line in reply.splitlines():
        line = line.strip().strip("*_\"'").strip()
        line = re.sub(r"^(?:\d+[.)]\s*|[-*]\s*|question:\s*)", "", line, flags=re.IGNORECASE)
        if line.endswith("?") and len(line) > 1:
            return line
    raise ValueError("the reply holds no question (a line ending in '?')")
