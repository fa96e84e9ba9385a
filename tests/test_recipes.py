"""The Python blocks of ``docs/user_guide.md`` and ``README.md`` run, verbatim, in order
(issue 83), so the recipes and the package cannot drift apart.

Each page's blocks share one namespace, as a reader pasting them into one session would.
A block whose first line is ``# not run: <reason>`` is left out (a torchrun or GPU
recipe). A top-level expression whose comment starts with a value (``x.score(...)  #
0.993 ...``, ``search.best_params_  # {'lr': 0.001}``) states what it gives: a number must
hold to two points, anything else exactly. Blocks run in a temporary folder, so files they
save land there.
"""

import ast
import io
import re
import tokenize
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOT_RUN = re.compile(r"#\s*not run:\s*(\S.*)")
#: The warnings the recipes trigger on purpose (the few-labels recipe's -1 rows).
EXPECTED_WARNINGS = (r".*with y == -1 are taken as unlabelled",)


def python_blocks(text: str) -> list[str]:
    """The ```python fenced blocks of a Markdown page, without the ones marked not run."""
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    return [b for b in blocks if not NOT_RUN.match(b.lstrip().split("\n", 1)[0])]


def _claim(comment: str):
    """The value a comment states at its start, or None: a number or a Python literal."""
    text = comment.lstrip("#").strip()
    if text.startswith(("{", "[", "(")):
        depth = 0
        for i, ch in enumerate(text):
            depth += (ch in "{[(") - (ch in "}])")
            if depth == 0:
                try:
                    return ast.literal_eval(text[: i + 1])
                except (ValueError, SyntaxError):
                    return None
        return None
    number = re.match(r"-?\d+(\.\d+)?(?![\w-])", text)
    return float(number.group()) if number else None


def _claims(source: str) -> dict[int, object]:
    """Line number -> the value the comment on that line states."""
    found = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT and (value := _claim(tok.string)) is not None:
            found[tok.start[0]] = value
    return found


def run_blocks(blocks: list[str]) -> list[tuple[str, object, object]]:
    """Run the blocks in one namespace; the (expression, stated, actual) of each claim."""
    namespace, checked = {"__name__": "__recipes__"}, []
    for block in blocks:
        tree, claims = ast.parse(block), _claims(block)
        recorded = {}
        for i, node in enumerate(tree.body):
            if isinstance(node, ast.Expr) and node.end_lineno in claims:
                call = ast.Call(ast.Name("__record__", ast.Load()),
                                [ast.Constant(i), node.value], [])
                tree.body[i] = ast.copy_location(ast.Expr(call), node)
                recorded[i] = (ast.unparse(node.value), claims[node.end_lineno])
        values: dict = {}
        namespace["__record__"] = values.__setitem__
        exec(compile(ast.fix_missing_locations(tree), "<recipe>", "exec"), namespace)
        checked += [(expr, stated, values[i]) for i, (expr, stated) in recorded.items()]
    return checked


def _holds(stated, actual) -> bool:
    if isinstance(stated, float):
        return abs(float(actual) - stated) <= 0.02
    return stated == actual


def _run_page(path: Path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks(path.read_text())
    assert blocks, f"{path.name} has no Python block"
    with warnings.catch_warnings():
        for message in EXPECTED_WARNINGS:
            warnings.filterwarnings("ignore", message=message)
        checked = run_blocks(blocks)
    wrong = [(expr, stated, actual) for expr, stated, actual in checked
             if not _holds(stated, actual)]
    assert not wrong, f"{path.name}: comments that do not hold (code, stated, got): {wrong}"
    return checked


def test_the_user_guides_recipes_run_and_their_comments_hold(tmp_path, monkeypatch):
    checked = _run_page(ROOT / "docs" / "user_guide.md", tmp_path, monkeypatch)
    scores = [actual for expr, stated, actual in checked if isinstance(stated, float)]
    assert len(scores) >= 7 and min(scores) > 0.9  # every small fit learns (chance is .5)


def test_the_readmes_recipes_run(tmp_path, monkeypatch):
    _run_page(ROOT / "README.md", tmp_path, monkeypatch)


def test_the_wheel_check_fits_at_the_guides_small_budget():
    fit = re.search(r"SPTClassifier\([^)]*\)", (ROOT / ".ci" / "wheel_check").read_text())
    assert fit and fit.group() in "\n".join(
        python_blocks((ROOT / "docs" / "user_guide.md").read_text())), fit


def test_blocks_marked_not_run_are_left_out_and_claims_are_read():
    page = ("```python\nx = 1\n```\n\n```python\n# not run: needs torchrun\nraise SystemExit\n"
            "```\n\n```bash\nexit 1\n```\n\n```python\nx + 1   # 2 (and a remark)\n"
            "{'a': x}   # {'a': 1}\nx   # not a value\n```\n")
    blocks = python_blocks(page)
    assert len(blocks) == 2
    assert run_blocks(blocks) == [("x + 1", 2.0, 2), ("{'a': x}", {"a": 1}, {"a": 1})]
    with pytest.raises(AssertionError):
        assert _holds(0.993, 0.5)
