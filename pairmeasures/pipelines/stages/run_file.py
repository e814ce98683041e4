"""``run:PATH``: a TREC or TSV run file as the first stage; identified for the run cache by the file's sha256."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ...io.frames import pyterrier_frame
from ...io.memo import Memo, content_key
from .registry import SpecError, Stage, StageType, register_stage

PREFIX = "run:"

#: Run files read in this process, by path and content: the plan's check, the audit's check against the dataset
#: and the build read a file once.
_READ = Memo("run files")


def path_of(stage: Stage) -> Path:
    """The run file a ``run:PATH`` stage names."""
    return Path(str(stage.args[0])).expanduser()


def read(stage: Stage):
    """The run file's rows (``query_id``, ``doc_id``, ``score``, side columns), or a :class:`SpecError` naming the
    file and line that cannot be read (an empty file too). Read once per process and content; do not change it."""
    from ...io.beir import DataFileError
    from ...io.runfiles import read_run_file

    path = path_of(stage)
    if not path.is_file():
        raise SpecError(f"run file {str(path)!r} " + ("is a folder, not a file" if path.is_dir() else "does not exist")
                        + "; write run:PATH with the path of a TREC or TSV run file")
    try:
        return _READ.get(str(path.resolve()), content_key(path), lambda: read_run_file(str(path)))
    except DataFileError as exc:
        raise SpecError(f"stage {stage.text!r}: {exc}") from None


def build(stage: Stage, context, position: int):
    import pyterrier as pt

    run = pyterrier_frame(read(stage))
    if "rank" in run.columns:  # equal scores in the file's rank order (add_ranks keeps the row order of ties)
        run = run.assign(_by=-run["score"]).sort_values(["qid", "_by", "rank"], kind="stable").drop(columns="_by")
    return pt.Transformer.from_df(pt.model.add_ranks(run), uniform=False)


def check(stage: Stage) -> None:
    read(stage)


def identity(stage: Stage) -> str:
    from ...io.memo import sha256_file

    path = path_of(stage)
    return f"{PREFIX}{sha256_file(path) if path.is_file() else path}"


def match(text: str) -> Optional[tuple]:
    """``(PATH,)`` of ``run:PATH``; a PATH between two quotes (``run:'my>>run.trec'``, as a path holding ``>>`` or
    a parenthesis must be written) is read without them."""
    if not text.startswith(PREFIX):
        return None
    path = text[len(PREFIX):].strip()
    return (path[1:-1] if len(path) >= 2 and path[0] in "'\"" and path[-1] == path[0] else path,)


RUN = register_stage(StageType(
    "run", "run:PATH", "a TREC or TSV run file (first stage only; quote a PATH that holds '>>' or a parenthesis)",
    "run:runs/bm25.trec or run:'runs/bm25>>ce.trec'", build,
    usage="run:PATH", arguments=1, required=1, place="first", fresh="first", check=check, identity=identity,
    match=match))
