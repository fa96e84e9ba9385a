"""The pages cite what exists: a command that writes a results page is the command recorded
on that page (so its output folder and options are the run's), relative links point at
files, and the user guide's parameter table has one short row for every parameter."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The tuning log is history: it cites the runs of its time on purpose.
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md"] + sorted(
    p for p in (ROOT / "docs").glob("*.md") if p.name != "tuning.md")


def _recorded_command(page: Path) -> str | None:
    for line in page.read_text().splitlines():
        if line.startswith("- Command: "):
            return line.removeprefix("- Command: ").strip("`")
    return None


def _cited_commands(page: Path):
    """Commands in the page that write a docs page, except the page's own record line."""
    for line in page.read_text().splitlines():
        if line.startswith("- Command: "):
            continue
        for command in re.findall(r"python -m sktspt\.benchmark[^`\n]*--write-docs docs/[\w-]+\.md"
                                  r"[^`\n]*", line):
            yield command.split("  #")[0].strip()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_cited_page_commands_are_the_ones_that_made_the_pages(page):
    for command in _cited_commands(page):
        target = ROOT / re.search(r"--write-docs (docs/[\w-]+\.md)", command).group(1)
        assert target.exists(), f"{page.name} cites a command writing {target.name}, missing"
        assert command == _recorded_command(target), (
            f"{page.name} cites\n  {command}\nbut {target.name} was made by\n  "
            f"{_recorded_command(target)}")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_point_at_files(page):
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
        if "://" in target or target.startswith("mailto:"):
            continue
        assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


def test_the_parameter_table_has_one_short_row_per_parameter():
    from sktspt import SPTClassifier, SPTPretrainer, SPTRegressor

    guide = (ROOT / "docs" / "user_guide.md").read_text()
    table = guide[guide.index("## Parameters"):]
    table = table[:table.index("\n## ", 5)]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    named = [name for row in rows for name in re.findall(r"`(\w+)`", row.split("|")[1])]
    every = set()
    for cls in (SPTClassifier, SPTRegressor, SPTPretrainer):
        every |= set(cls().get_params())
    assert sorted(every - set(named)) == []
    assert len(named) == len(set(named))
    long = [row.split("|")[1].strip() for row in rows if len(row) > 260]
    assert not long, f"rows over 260 characters: {long}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_code_on_the_pages_uses_current_parameter_names(page):
    """A call shown on a page uses no name that 0.5 removed (they raise ``TypeError``)."""
    from sktspt._param_hints import REMOVED

    text = page.read_text()
    if page.name in ("CHANGELOG.md", "tuning-history.md"):  # old names on purpose
        return
    old = [(k, REMOVED[k]) for call in re.findall(r"SPT\w*\(([^()]*)\)", text)
           for k in re.findall(r"(\w+)=", call) if k in REMOVED]
    assert not old, f"{page.name} calls with removed names (old, new): {old}"
