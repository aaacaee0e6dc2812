"""``qcom-ext compat REPORT...``: fleet reports merged into a compatibility matrix
(docs/fleet.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from qcom_ext.tools._output import check_writable, terminal_safe, write_text

__all__ = ["SHOWN_SKIPS", "add_parser"]

#: Skipped inputs named on stderr (the output lists every one).
SHOWN_SKIPS = 20


def _compat_command(args: argparse.Namespace) -> int:
    from qcom_ext.tools.fleet.matrix import merge
    from qcom_ext.tools.fleet.render_html import render_html
    from qcom_ext.tools.fleet.render_text import render_json, render_markdown

    if args.output:
        check_writable(args.output, option="-o")
    merged = merge(args.reports)
    render = {"markdown": render_markdown, "json": render_json, "html": render_html}
    text = render[args.format](merged)
    if args.output:
        write_text(args.output, text, option="-o")
    else:
        sys.stdout.write(text)
    skipped = merged.intake.skipped
    for item in skipped[:SHOWN_SKIPS]:
        print(f"qcom-ext compat: skipped {terminal_safe(str(item))}", file=sys.stderr)
    if len(skipped) > SHOWN_SKIPS:
        more = len(skipped) - SHOWN_SKIPS
        print(f"qcom-ext compat: skipped {more} more (the output lists them)", file=sys.stderr)
    if not merged.intake.merged:
        print(f"qcom-ext compat: no report merged ({merged.intake.read} read)", file=sys.stderr)
        return 1
    return 0


def add_parser(commands: Any) -> None:
    """Register ``compat`` on the ``qcom-ext`` command line's subparsers."""
    parser = commands.add_parser(
        "compat",
        help="merge fleet reports into a compatibility matrix and quirk proposals",
        description="Merges fleet reports (qcom-ext report's JSON; files, directories or "
        "newline-delimited files) into a matrix of Adreno model x driver and compiler x "
        "extension x path -> pass/fail/crash/skip counts, the newest report of each "
        "identity counting once. Lists contradictions (one identity, different verdicts) "
        "and proposes quirk entries for paths that fail on a compiler range only. A "
        "report that is truncated, too large, too deeply nested or of another schema is "
        "skipped with a one-line reason on stderr; exit status 1 when no report was "
        "merged. Needs DuckDB: pip install "
        "'qcom_ext[fleet]' (docs/fleet.md).",
    )
    parser.add_argument("reports", nargs="+", metavar="REPORT", help="file or directory")
    parser.add_argument(
        "--format",
        choices=("markdown", "json", "html"),
        default="markdown",
        help="markdown (default), json, or one static html page",
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write here, not to stdout")
    parser.set_defaults(run=_compat_command)
