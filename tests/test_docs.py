"""The documentation site builds strictly: a broken link, a missing page or an API reference that
no longer resolves fails the build, so it fails here (and in CI, which runs `make test`).

The build is `mkdocs build --strict` with the repository's mkdocs.yml, into a temporary directory
(not site/). It needs the `docs` extra, which `dev` (what `make test` installs) pulls in; without
mkdocs the test fails rather than skips, so CI cannot pass a broken link by not building.

Beside the build: every `zeropipe ...` line of the pages' bash blocks parses with the CLI's own
parser, every `python -m benchmarks ...` line (bash blocks and inline code) with its benchmark's
own, every `configs/NAME.yaml` the pages name exists, and what a user reads (pages, configs,
docstrings) names no issue, design note or file outside the repository.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(240)
def test_the_docs_build_strictly(tmp_path: Path):
    assert importlib.util.find_spec("mkdocs") is not None, (
        'mkdocs is not installed: pip install -e ".[docs]" (the dev extra has it)'
    )
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=200,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # material's banner, not a warning
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stderr[-5000:]}"
    assert (tmp_path / "site" / "index.html").is_file()


LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """The heading ids mkdocs gives `page` (the toc extension's own slugify)."""
    from markdown.extensions.toc import slugify

    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.MULTILINE | re.DOTALL)
    return {slugify(h, "-") for h in re.findall(r"^#+ (.+?)\s*$", text, flags=re.MULTILINE)}


def test_the_readme_links_only_to_files_in_the_repository():
    targets = LINK.findall((ROOT / "README.md").read_text())
    assert any("#" in t for t in targets)  # the anchor check below still has work
    for target in targets:
        assert "://" not in target, f"README.md links outside the repository: {target}"
        file, _, anchor = target.partition("#")
        path = (ROOT / (file or "README.md")).resolve()  # "#heading": the README's own
        assert path.is_relative_to(ROOT), f"README.md links outside the repository: {target}"
        assert path.exists(), f"README.md links to a missing file: {target}"
        if anchor:
            assert anchor in _anchors(path), f"README.md links to a missing heading: {target}"


README_HEAD_LINES = 60
# What a new user looks for first, each as the README's command block writes it.
FIRST_SCREEN = {
    "train": "zeropipe train configs/",
    "resume": "--resume",
    "eval": "zeropipe eval ",
    "plot": "zeropipe plot ",
    "TensorBoard": "tensorboard --logdir",
}
COMMIT_HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")


def test_the_readme_is_short_and_shows_the_commands_on_its_first_screen():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; the rest belongs in docs/"
    head = "\n".join(lines[:README_HEAD_LINES])
    missing = [what for what, text in FIRST_SCREEN.items() if text not in head]
    assert missing == [], f"not in README.md's first {README_HEAD_LINES} lines: {missing}"


def test_the_commit_hash_pattern_catches_hashes_only():
    written = {
        "measured at 2bc1d37": True,
        "commit 7edbb3ae10e5-dirty": True,
        "9f717c80c86d5c69b39a56d8ade18e684ce6311a": True,
        "replay_buffer_size: 1000000": False,  # digits only
        "a deadbeef value": False,  # letters only
        "lr 1e-4, 3e-3": False,
        "2026-12-06": False,
    }
    assert {text: bool(COMMIT_HASH.search(text)) for text in written} == written


def test_the_readme_and_the_configs_name_no_commit():
    """The results pages name each figure's commit (rendered from the JSON); what a user reads
    first, the README and the shipped configs, says the decision and its reason instead."""
    files = [ROOT / "README.md", *sorted((ROOT / "configs").glob("*.yaml"))]
    found = [
        f"{path.relative_to(ROOT)}:{number}: {match.group(0)}"
        for path in files
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if (match := COMMIT_HASH.search(line))
    ]
    assert found == []


# What a user reads (the pages, the configs' comments, the docstrings and messages in src/, which
# the API reference and `zeropipe config --describe` show) names the product, not the tracker or
# notes outside the repository: those are gone in a clone. Each row: pattern, what to write instead.
OUTSIDE_REFERENCES = [
    (re.compile(r"\bissues? #?\d+", re.IGNORECASE), "say the reason in words"),
    (re.compile(r"DESIGN(\.md)? ?§"), "point to a section of docs/design.md"),
    (re.compile(r"shared/DESIGN"), "point to docs/design.md"),
    (re.compile(r"lightzero_facts"), "name the reference's function or file, or docs/parity.md"),
    (re.compile(r"README[ :,]+[\"'A-Z]"), "point to the docs page that holds it"),
    (re.compile(r"/work/"), "name a path inside the repository"),
]


def _user_facing_files() -> list[Path]:
    return [
        ROOT / "README.md",
        *sorted((ROOT / "docs").rglob("*.md")),
        *sorted((ROOT / "configs").glob("*.yaml")),
        *sorted((ROOT / "src").rglob("*.py")),
    ]


def test_the_outside_reference_patterns_catch_what_they_are_for():
    written = {
        "measured there (issue 15 notes)": True,
        "see Issue #26": True,
        "see DESIGN §3 for all ten": True,
        "the rules (DESIGN.md §5)": True,
        "links ../shared/DESIGN.md": True,
        "(lightzero_facts §2.7)": True,
        "learning: README 'bf16'": True,
        'README "Learning benchmark"': True,
        "in /work/shared/reference": True,
        "the issue of 26 seeds": False,
        "docs/design.md, 'Processes and ownership'": False,
        "the README's quick start": False,
        "LightZero's `_run_async_driver`": False,
    }
    found = {text: any(p.search(text) for p, _ in OUTSIDE_REFERENCES) for text in written}
    assert found == written


def test_what_a_user_reads_speaks_of_the_product_not_of_its_tracker():
    files = _user_facing_files()
    assert len(files) > 100  # the globs still find the tree
    problems = []
    for path in files:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for pattern, instead in OUTSIDE_REFERENCES:
                if found := pattern.search(line):
                    where = f"{path.relative_to(ROOT)}:{number}"
                    problems.append(f"{where}: {found.group(0)!r}: {instead}")
    assert problems == []


SHELL_BLOCK = re.compile(r"^```(?:bash|sh|console)\n(.*?)^```", re.MULTILINE | re.DOTALL)
CONFIG_FILE = re.compile(r"\bconfigs/\w+\.yaml\b")
# What may stand before `zeropipe` on a documented command line: the venv's bin directory, and
# the wrappers the pages use (nice, timeout, an environment assignment).
LAUNCHER = re.compile(
    r"^(?:\w+=\S+\s+|nice(?:\s+-n\s*\d+)?\s+|timeout\s+\d+\s+)*(?:\S*/)?zeropipe$"
)


def _shell_lines(text: str) -> list[str]:
    """The command lines of a page's bash blocks, continuation lines joined, comments dropped."""
    lines = []
    for block in SHELL_BLOCK.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                lines.append(line.strip())
    return lines


def _zeropipe_commands() -> list[tuple[str, list[str]]]:
    """(where, argv after `zeropipe`) for every `zeropipe ...` line of README.md and docs/."""
    commands = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for line in _shell_lines(page.read_text()):
            words = shlex.split(line, comments=True)
            for end, word in enumerate(words):
                if word.endswith("zeropipe") and LAUNCHER.match(" ".join(words[: end + 1])):
                    argv = words[end + 1 :]
                    commands.append(
                        (f"{page.relative_to(ROOT)}: zeropipe {shlex.join(argv)}", argv)
                    )
                    break
    return commands


ZEROPIPE_COMMANDS = _zeropipe_commands()


def test_the_pages_show_zeropipe_commands():
    subcommands = {argv[0] for _, argv in ZEROPIPE_COMMANDS}
    assert subcommands == {"train", "eval", "plot", "config", "import", "compare"}


@pytest.mark.parametrize(
    "argv", [a for _, a in ZEROPIPE_COMMANDS], ids=[w for w, _ in ZEROPIPE_COMMANDS]
)
def test_a_documented_zeropipe_command_parses(argv: list[str]):
    from zeropipe.cli.main import _parser

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            _parser().parse_args(argv)
    except SystemExit:
        pytest.fail(f"zeropipe {shlex.join(argv)}: the CLI refuses it:\n{err.getvalue()}")


def test_the_configs_guide_tables_every_shipped_config():
    guide = (ROOT / "docs" / "guide" / "configs.md").read_text()
    shipped = sorted(f"configs/{path.name}" for path in (ROOT / "configs").glob("*.yaml"))
    assert len(shipped) > 10
    assert [config for config in shipped if f"`{config}`" not in guide] == []


def test_every_config_file_the_pages_name_exists():
    named = {
        (page.relative_to(ROOT), config)
        for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
        for config in CONFIG_FILE.findall(page.read_text())
    }
    assert len(named) > 10  # the pattern still finds the pages' configs
    missing = sorted(f"{page}: {config}" for page, config in named if not (ROOT / config).is_file())
    assert missing == []


BENCHMARK_SPAN = re.compile(r"`((?:\S*/)?python3? -m benchmarks\b[^`]*)`")


def _benchmark_commands() -> list[tuple[str, list[str]]]:
    """(where, argv after `python -m benchmarks`) for every such line of README.md and docs/:
    the bash blocks' lines and the inline code spans."""
    commands = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text()
        for line in [*_shell_lines(text), *BENCHMARK_SPAN.findall(text)]:
            words = shlex.split(line, comments=True)
            if (
                words
                and words[0].endswith(("python", "python3"))
                and words[1:3] == ["-m", "benchmarks"]
            ):
                argv = words[3:]
                where = f"{page.relative_to(ROOT)}: python -m benchmarks {shlex.join(argv)}"
                commands.append((where, argv))
    return commands


BENCHMARK_COMMANDS = _benchmark_commands()


class _Parsed(Exception):
    """Raised once a benchmark's parser has accepted its arguments, before anything runs."""


def test_the_pages_show_benchmark_commands():
    sections = {argv[0] if argv else "" for _, argv in BENCHMARK_COMMANDS}
    assert {"learning", "resume", "render", "pace"} <= sections


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "argv", [a for _, a in BENCHMARK_COMMANDS], ids=[w for w, _ in BENCHMARK_COMMANDS]
)
def test_a_documented_benchmark_command_parses(argv: list[str], monkeypatch):
    """Each benchmark's own parser reads the line; parse_args then stops it before it runs."""
    import benchmarks.__main__ as bench

    parse_args = argparse.ArgumentParser.parse_args

    def parse_then_stop(self, args=None, namespace=None):
        parse_args(self, args, namespace)  # exits 2 on a line the benchmark refuses
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
    err = io.StringIO()
    with pytest.raises((_Parsed, SystemExit)) as stopped, contextlib.redirect_stderr(err):
        if argv and argv[0] in bench.ON_REQUEST:
            bench.ON_REQUEST[argv[0]](argv[1:])
        else:
            monkeypatch.setattr(sys, "argv", ["python -m benchmarks", *argv])
            bench.main()
    if stopped.type is SystemExit:
        pytest.fail(f"python -m benchmarks {shlex.join(argv)}: refused:\n{err.getvalue()}")
