"""MkDocs hook: the reference pages, rendered at build time from the code that defines them.

A page holding one of these markers gets it replaced by Markdown:

* ``<!-- options-table -->``: the ``--perf-*`` options and their ini keys, from
  :data:`perfsuite.options.OPTIONS`;
* ``<!-- commands-reference -->``: every ``perfsuite`` command, its usage and its
  arguments, from the argparse parsers of :func:`perfsuite.cli.build_parser`;
* ``<!-- exit-statuses -->``: the exit statuses every command shares, from
  :mod:`perfsuite.exitcodes`;
* ``<!-- layout-check -->``: nothing; the build fails unless the page's layout table
  names every module of the package, and none that is gone.

Only perfsuite's light modules are imported (options, command lines, exit statuses):
the build fails if TensorFlow or torch got imported along the way.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("tensorflow", "torch", "nvidia.dali")
#: the width usage lines are wrapped to, whatever the terminal that builds the site
USAGE_WIDTH = 88


def _light() -> None:
    """Fail the build if rendering imported a framework perfsuite must import lazily."""
    heavy = [name for name in HEAVY if name in sys.modules]
    if heavy:
        raise PluginError(f"rendering the reference imported {', '.join(heavy)}")


_ESCAPES = (("\\", "\\\\"), ("|", "\\|"), ("*", "\\*"), ("_", "\\_"), ("<", "&lt;"))


def _cell(text: str) -> str:
    """Plain text on one line, fit for a Markdown table cell: Markdown's characters are
    escaped outside inline code (`` `x` ``), which is kept as it is."""
    parts = " ".join(text.split()).split("`")
    for i in range(0, len(parts), 2):  # even parts lie outside `code`
        for char, escaped in _ESCAPES:
            parts[i] = parts[i].replace(char, escaped)
    return "`".join(parts)


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def options_table() -> str:
    """The ``--perf-*`` options: flag and value, ini key, default, meaning."""
    from perfsuite.options import OPTIONS

    rows = []
    for spec in OPTIONS:
        flag = spec.flag if spec.is_flag else f"{spec.flag} {spec.metavar or 'VALUE'}"
        default = "off" if spec.is_flag else (f"`{spec.default}`" if spec.default else "")
        rows.append([f"`{flag}`", f"`{spec.ini}`", default, _cell(spec.help)])
    return _table(["option", "ini key", "default", "meaning"], rows)


def _expanded_help(action: argparse.Action, prog: str) -> str:
    """An action's help with argparse's ``%(default)s``-style fields filled in."""
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    fields: dict[str, object] = {
        k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS
    }
    fields["prog"] = prog
    if action.choices is not None:
        fields["choices"] = ", ".join(str(c) for c in action.choices)
    return action.help % fields


def _argument(action: argparse.Action) -> str:
    if action.metavar is not None:
        value = str(action.metavar)
    elif action.choices is not None:
        value = "{" + ",".join(str(c) for c in action.choices) + "}"
    else:
        value = action.dest.upper()
    if not action.option_strings:
        return value if action.nargs not in ("*", "?") else f"[{value}]"
    flags = ", ".join(action.option_strings)
    return flags if action.nargs == 0 else f"{flags} {value}"


def _default(action: argparse.Action) -> str:
    default = action.default
    if default in (None, False, argparse.SUPPRESS) or action.nargs == 0 or default == []:
        return ""
    return f"`{default}`"


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def _usage(parser: argparse.ArgumentParser) -> str:
    def formatter(prog: str) -> argparse.HelpFormatter:
        return argparse.HelpFormatter(prog, width=USAGE_WIDTH)

    parser.formatter_class = formatter
    return parser.format_usage().strip()


def commands_reference() -> str:
    """Every ``perfsuite`` command: what it does, its usage, its arguments."""
    from perfsuite.cli import build_parser

    parser = build_parser()
    commands = list(_subcommands(parser))
    helps = {
        choice.dest: _cell(choice.help or "")
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for choice in action._choices_actions
    }
    parts = [
        f"```\n{_usage(parser)}\n```",
        _table(["command", "what it does"], [[f"[`{n}`](#{n})", helps[n]] for n, _ in commands]),
    ]
    for name, sub in commands:
        parts.append(f"## `perfsuite {name}` {{#{name}}}")
        if sub.description:
            parts.append(_cell(sub.description))
        parts.append(f"```\n{_usage(sub)}\n```")
        rows = [
            [f"`{_argument(a)}`", _default(a), _cell(_expanded_help(a, sub.prog))]
            for a in sub._actions
            if not isinstance(a, argparse._HelpAction)
        ]
        parts.append(_table(["argument", "default", "meaning"], rows))
    return "\n\n".join(parts)


_STATUS = re.compile(r"^\* ``(?P<name>\w+)`` \((?P<value>\d+)\)(?::\s*(?P<text>.*)|\.)?$")


def exit_statuses() -> str:
    """The shared exit statuses: one row per member of :class:`perfsuite.exitcodes.ExitCode`,
    its meaning from the module's docstring."""
    from perfsuite import exitcodes

    meanings: dict[str, str] = {}
    current: str | None = None
    for line in (exitcodes.__doc__ or "").splitlines():
        match = _STATUS.match(line.strip())
        if match:
            current = match["name"]
            meanings[current] = match["text"] or ""
        elif current is not None and line.startswith("  ") and line.strip():
            meanings[current] += " " + line.strip()
        else:
            current = None
    rows = []
    for code in exitcodes.ExitCode:
        if code.name not in meanings:
            raise PluginError(
                f"perfsuite/exitcodes.py: {code.name} ({code}) is not in the docstring"
            )
        meaning = meanings[code.name].rstrip(";.").replace("``", "`") or "interrupted (Ctrl-C)"
        rows.append([f"{int(code)}", f"`{code.name}`", _cell(meaning)])
    return _table(["status", "name", "meaning"], rows)


_LAYOUT_ROW = re.compile(r"^\| `(?:perfsuite/)?([\w/]+\.py)` \|", flags=re.MULTILINE)


def check_layout(markdown: str, page: str) -> str:
    """Nothing; the page's layout table must name every module of the package."""
    named = set(_LAYOUT_ROW.findall(markdown))
    package = ROOT / "perfsuite"
    modules = {
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if path.name != "__init__.py" or path.parent == package
    }
    missing, gone = sorted(modules - named), sorted(named - modules)
    if missing or gone:
        raise PluginError(
            f"{page}: the layout table misses {', '.join(missing) or 'nothing'} "
            f"and names modules that are gone: {', '.join(gone) or 'none'}"
        )
    return ""


RENDERERS: dict[str, Callable[[], str]] = {
    "<!-- options-table -->": options_table,
    "<!-- commands-reference -->": commands_reference,
    "<!-- exit-statuses -->": exit_statuses,
}
LAYOUT_CHECK = "<!-- layout-check -->"


def on_page_markdown(markdown: str, /, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Replace each marker on the page with what it stands for."""
    for marker, render in RENDERERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, render())
            _light()
    if LAYOUT_CHECK in markdown:
        markdown = markdown.replace(LAYOUT_CHECK, check_layout(markdown, page.file.src_path))
    return markdown
