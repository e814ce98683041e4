"""What ``pairmeasures audit`` shows besides the audit: its ``--help`` epilog, its default dataset, the leaderboard
as printed."""

from __future__ import annotations

from typing import Optional

__all__ = ["DEFAULT_SYSTEMS", "PRINTED_FORMATS", "help_epilog", "default_dataset", "leaderboard_text"]

#: The systems of ``pairmeasures audit`` without ``--systems`` (the demo audit).
DEFAULT_SYSTEMS = ("bm25", "bm25>>dense", "bm25>>dense>>duogreedy(0.5)")


#: The command's ``--format`` values: ``text`` (the default) fits the terminal, the others print the whole table.
PRINTED_FORMATS = ("text", "markdown", "csv", "json")


def leaderboard_text(result: dict, fmt: str, width: Optional[int] = None) -> str:
    """The leaderboard as printed by the command: ``text``, what fits ``width`` columns (default: the terminal's,
    :func:`~pairmeasures.apps.audit.printed.fitted_leaderboard`); ``markdown``, ``csv`` or ``json``, the whole table
    (as leaderboard.md has it)."""
    if fmt == "text":
        from .printed import fitted_leaderboard

        return fitted_leaderboard(result, width)
    from ..tables import render

    return render(result["leaderboard"], fmt)


def help_epilog() -> str:
    """What ``pairmeasures audit --help`` says after the options: specs, measures, statistics, outputs, examples."""
    from ...pipelines.specs import stage_listing

    stages = "\n".join(f"  {name:<40} {what}" for name, what in stage_listing().items())
    return (f"system specs: stages joined by '>>'; what a stage needs (document text, polarity) is inserted\n{stages}\n\n"
            "measures (default: what the dataset supports): nDCG@1 nDCG@10 R@100 Duo@10; rND@10 rKL@10 rRD@10 EXP@10\n"
            "  NDKL@10 ARP@10 with gold labels; TExFAIR@10 NFaiRR@10 RaB@10 where a gender term list applies. Bias measures leave out queries\n"
            "  with nothing to measure (degenerate='exclude') and count them: n in every table.\n\n"
            "statistics: paired bootstrap 95% intervals of each mean and of each system's difference to --baseline\n"
            "  (--resamples, --seed); p-values of pt.Experiment's paired t-test against the baseline with --correction; --by FIELD\n"
            "  means per value of a query field with counts (cells under --min-cell are warned about). DUO's axes: their\n"
            "  held-out accuracy on the labelled perspectives (5 folds per query, --seed), next to DUO and in the report.\n\n"
            "trade-off: for a system with a duogreedy(...) stage, DuoGreedy and MMR (pm.TopKMMR on the bi-encoder) re-rank\n"
            "  the run of the spec before that stage at each of --lambdas: tradeoff.csv, tradeoff.png and the bias each\n"
            "  reaches at a relevance cost of 0.01, 0.02 and 0.05 (--no-tradeoff skips it).\n\n"
            "engines: --engine ray embeds what the audit lacks in a Ray actor pool (a private local Ray on 127.0.0.1, or\n"
            "  the cluster at --address) and runs ce(...) stages over query partitions there; retrieval, evaluation and the\n"
            "  report stay here, and a warm audit starts no Ray (docs/ray.md).\n\n"
            "outputs in --out DIR (written to a temporary folder, renamed into place at the end): leaderboard.json,\n"
            "  leaderboard.md, per_query.csv, summary.csv, by_FIELD.csv, tradeoff.csv, manifest.json (versions of what ran,\n"
            "  every input file's sha256, seeds, timings per step with the embedding apart, cache hits), relevance_vs_bias.png\n"
            "  (a panel per bias measure), bias_by_cutoff.png, tradeoff.png, by_FIELD_MEASURE.png and report.html (readable\n"
            "  tables, † for a significant difference to the baseline). Runs are cached under the cache folder (runs/),\n"
            "  evaluation outputs and PNGs under evaluations/, keyed by what they derive from. Progress goes to stderr: a bar\n"
            "  on a terminal, a line every 30 seconds in a log file. Paths in the manifest, leaderboard.json and report are\n"
            "  relative to --out (--absolute-paths: absolute).\n\n"
            "printed: the leaderboard in blocks of columns that fit the terminal (COLUMNS; 100 when not a terminal), means\n"
            "  with † and (n), the common-query means where they differ; --format markdown|csv|json prints the whole table.\n\n"
            "examples:\n"
            "  pairmeasures audit --out audit-demo\n"
            "  pairmeasures audit --dataset pair/procon --systems bm25 'bm25>>dense>>duogreedy(0.5)' --out procon\n"
            "  pairmeasures audit --dataset DIR --systems run:bm25.run run:bert.run --by category --out grep --force\n"
            "  pairmeasures audit --dataset pair/procon --systems bm25 dense --engine ray --out procon-ray")


def default_dataset() -> str:
    """The embedded demo corpus (a BEIR-layout folder shipped with the package)."""
    try:
        from ...demo import debates_dir
    except ImportError:
        raise ValueError("this install has no embedded demo corpus; pass --dataset ID_OR_DIR") from None
    return str(debates_dir())
