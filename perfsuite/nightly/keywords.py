"""``-k`` expressions: pytest's own reading of them, for ``perfsuite history -k``, and
the expression that selects tonight's suspects for ``perfsuite nightly``'s A/B."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from perfsuite.errors import PerfsuiteError

if TYPE_CHECKING:
    from perfsuite.nightly.screen import Suspect


_KEYWORDS = {"and", "or", "not", "(", ")"}


def keyword_matcher(expression: str | None) -> Callable[[str], bool]:
    """``-k`` as pytest reads it: words matched as substrings, with and/or/not/()."""
    if not expression:
        return lambda _name: True
    tokens = re.findall(r"\(|\)|[^\s()]+", expression)
    words = [t for t in tokens if t not in _KEYWORDS]
    code = " ".join(f"_w[{words.index(t)}]" if t not in _KEYWORDS else t for t in tokens)
    try:
        compiled = compile(code, "<-k>", "eval")
        eval(compiled, {"__builtins__": {}}, {"_w": [False] * len(words)})
    except SyntaxError:
        raise PerfsuiteError(f"-k {expression!r}: not a valid expression") from None

    def match(name: str) -> bool:
        low = name.lower()
        found = [w.lower() in low for w in words]
        return bool(eval(compiled, {"__builtins__": {}}, {"_w": found}))

    return match


def split_k(pytest_args: Sequence[str]) -> tuple[list[str], str | None]:
    """The pytest arguments without ``-k``, and the ``-k`` expression they held."""
    rest: list[str] = []
    expression = None
    args = list(pytest_args)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-k" and i + 1 < len(args):
            expression = args[i + 1]
            i += 2
            continue
        if arg.startswith("-k") and len(arg) > 2:
            expression = arg[2:].lstrip("=")
        else:
            rest.append(arg)
        i += 1
    return rest, expression


#: a word of a ``-k`` expression as pytest's lexer reads it (``_pytest/mark/expression.py``),
#: less the backslash it also takes, which this never needs
_K_WORD = re.compile(r"(?:\w|:|\+|-|\.|\[|/|\])+")


def keyword_term(name: str) -> str:
    """A ``-k`` term selecting the test ``name`` (``test_x[variant]``) whatever its
    parameter id holds: the words pytest's lexer reads in it, all required, so an id
    with spaces, parentheses or ``=`` still selects its test; ``and``/``or``/``not`` in
    an id are left out. A test whose name holds the same words is selected too, and
    the A/B judges it as it judges the suspects.

    >>> keyword_term("test_x[two blocks]"), keyword_term("test_x[a=(1, 2)]")
    ('(test_x[two and blocks])', '(test_x[a and 1 and 2 and ])')
    >>> keyword_term("test_y[a not b]"), keyword_term("test_z")
    ('(test_y[a and b])', 'test_z')
    """
    words = [w for w in _K_WORD.findall(name) if w not in _KEYWORDS]
    return words[0] if len(words) == 1 else f"({' and '.join(words)})"


def keyword_expression(suspects: Sequence[Suspect], user_k: str | None = None) -> str:
    """``-k`` selecting the suspects' tests (and the user's own ``-k``, if any)."""
    names = sorted({s.test_name for s in suspects})
    expression = " or ".join(keyword_term(name) for name in names)
    return f"({user_k}) and ({expression})" if user_k else expression
