"""The docs stay true: every command they show runs, every link resolves, the references are current.

Commands are read from fenced ``sh`` blocks of ``README.md``, ``DEVELOPERS.md`` and
``docs/**/*.md``. A block runs for real, command by command, in a temporary directory. A block
that needs a cluster or takes long is marked on the line before it (``<!-- needs: slurm -->``,
``<!-- needs: WHAT -->``, ``<!-- long -->``); its ``rush`` commands are then checked against the
command tree (each sub-command and option must exist) and their ``--help`` must work, so a
renamed or removed command still fails here. A command of an unmarked block that this test
cannot run fails: mark its block. Relative links (with their anchors) and repository paths in
backticks must exist; the generated references must equal the generator's output.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.script_module import load_script

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", REPO / "DEVELOPERS.md", *sorted((REPO / "docs").rglob("*.md"))]
GENERATOR = REPO / "docs" / "reference" / "generate.py"
GENERATED = {"cli.md", "config.md"}
SHELLS = {"sh", "bash", "shell", "console"}
MARK = re.compile(r"^<!--\s*(needs:[^>]*?|long)\s*-->$")
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
SEPARATORS = {"&&", "||", ";"}
# Real runs: generous per command (a cold numba cache compiles first); warm, each takes seconds.
RUN_TIMEOUT = 300


@dataclass(frozen=True)
class Block:
    """A fenced shell block: where it is, its commands (each a token list), its mark."""

    path: Path
    line: int
    commands: tuple[tuple[str, ...], ...]
    mark: str | None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def _commands(lines: list[str]) -> Iterator[tuple[str, ...]]:
    """Token lists of the commands in a block: continuations joined, comments dropped, split at && ;"""
    text = "\n".join(lines).replace("\\\n", " ")
    for line in text.splitlines():
        tokens = shlex.split(line, comments=True)
        current: list[str] = []
        for token in [*tokens, ";"]:
            if token in SEPARATORS:
                if current:
                    yield tuple(current)
                current = []
            else:
                current.append(token)


def _blocks(path: Path) -> Iterator[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.startswith("```"):
            language = stripped[3:].strip()
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip().startswith("```"))
            if language in SHELLS:
                before = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
                mark = MARK.match(before)
                body = list(lines[i + 1 : end])
                yield Block(path, i + 1, tuple(_commands(body)), mark.group(1) if mark else None)
            i = end
        i += 1


def _all_blocks() -> list[Block]:
    return [block for path in DOCS for block in _blocks(path)]


def _program(tokens: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """(kind, arguments): kind is rush, setup, script, module or other."""
    words = list(tokens)
    while words and (ENV_ASSIGNMENT.match(words[0]) or words[0] in ("sudo", "env")):
        words.pop(0)
    if words[:2] == ["nice", "-n"]:
        words = words[3:]
    if not words:
        return "other", ()
    head, rest = words[0], tuple(words[1:])
    if head == "rush" or head.endswith("/bin/rush"):
        return "rush", rest
    if head == "./setup.sh":
        return "setup", rest
    if re.fullmatch(r"(.*/)?python3?", head) and rest:
        if rest[0] == "-m" and len(rest) > 1:
            return "module", rest[1:]
        if rest[0].endswith(".py"):
            return "script", rest
    return "other", tuple(words)


# --- checks of one command ------------------------------------------------------------------


@functools.cache
def _rush_tree() -> Any:
    import typer

    from rush.cli.main import app

    return typer.main.get_command(app)


def _check_rush_syntax(args: tuple[str, ...], where: str) -> list[str]:
    """The sub-command path and every option exist in the command tree; returns the path."""
    command, path = _rush_tree(), []
    words = [w.strip("[]") for w in args]
    while hasattr(command, "commands") and words and not words[0].startswith("-"):
        name = words.pop(0)
        assert name in command.commands, (
            f"{where}: `rush {' '.join(path + [name])}` is not a command; "
            f"`rush {' '.join(path)}` has: {', '.join(sorted(command.commands))}"
        )
        command = command.commands[name]
        path.append(name)
    known = {"--help"}
    for param in command.params:
        known.update(param.opts)
        known.update(getattr(param, "secondary_opts", ()))
    for word in words:
        if re.match(r"^--?[A-Za-z]", word):
            option = word.split("=", 1)[0]
            assert option in known, (
                f"{where}: `rush {' '.join(path)}` has no option {option}; it has: {', '.join(sorted(known))}"
            )
    return path


def _check_rush_help(path: list[str], where: str) -> None:
    from typer.testing import CliRunner

    from rush.cli.main import app

    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0 and "Usage:" in result.output, (
        f"{where}: rush {' '.join(path)} --help:\n{result.output}"
    )


@functools.cache
def _setup_commands() -> frozenset[str]:
    # An unknown word makes setup.sh print its usage line and stop before doing anything.
    out = subprocess.run([str(REPO / "setup.sh"), "--usage"], capture_output=True, text=True, timeout=60)
    usage = next(line for line in out.stderr.splitlines() if line.startswith("usage:"))
    return frozenset(re.findall(r"\./setup\.sh (\w+)", usage.replace("|", "| ./setup.sh")))


def _check_marked(kind: str, args: tuple[str, ...], where: str) -> None:
    if kind == "rush":
        _check_rush_help(_check_rush_syntax(args, where), where)
    elif kind == "setup":
        assert args and args[0] in _setup_commands(), f"{where}: ./setup.sh has no command {args[:1]}"
    elif kind == "script":
        script = REPO / args[0]
        assert script.is_file(), f"{where}: no script {args[0]}"
        compile(script.read_text(encoding="utf-8"), str(script), "exec")
    elif kind == "module":
        assert importlib.util.find_spec(args[0]) is not None, f"{where}: no module {args[0]}"
    # Anything else (systemctl, sacctmgr, flux, ...) needs the machine the block is marked for.


def _run(kind: str, args: tuple[str, ...], where: str, cwd: Path) -> None:
    if kind == "rush":
        _check_rush_syntax(args, where)
        argv = [sys.executable, "-m", "rush", *args]
    elif kind == "script":
        argv = [sys.executable, str(REPO / args[0]), *args[1:]]
    else:
        pytest.fail(
            f"{where}: this test cannot run `{shlex.join(args)}`: mark its block (<!-- needs: ... -->)"
        )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=RUN_TIMEOUT, env=env)
    assert out.returncode == 0, (
        f"{where}: `{shlex.join(argv[2:])}` exited {out.returncode}:\n{out.stderr[-2000:]}"
    )


# --- the tests ------------------------------------------------------------------------------


BLOCKS = _all_blocks()


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_every_shown_command_runs_or_is_marked(block: Block, tmp_path: Path) -> None:
    assert block.commands, f"{block.where}: an empty shell block"
    for tokens in block.commands:
        kind, args = _program(tokens)
        if block.mark is None:
            _run(kind, args, block.where, tmp_path)
        else:
            _check_marked(kind, args, block.where)


def test_the_readme_is_a_front_door() -> None:
    readme = REPO / "README.md"
    assert len(readme.read_text(encoding="utf-8").splitlines()) <= 150
    shown = {shlex.join(tokens) for block in _blocks(readme) for tokens in block.commands}
    assert {"./setup.sh demo", "./setup.sh test"} <= shown, "the README must show the two set-up commands"
    links = _links(readme)
    for reader in ("docs/admin-slurm.md", "docs/research.md", "docs/developing.md"):
        assert reader in links, f"the README links no {reader}"


def test_a_block_that_cannot_run_here_must_be_marked(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Run:\n\n```sh\nsystemctl restart rush\n```\n\n<!-- needs: slurm -->\n```sh\nrush daemon --config x.toml --once\n```\n"
    )
    unmarked, marked = list(_blocks(page))
    assert unmarked.mark is None and marked.mark == "needs: slurm"
    with pytest.raises(pytest.fail.Exception, match="mark its block"):
        _run(*_program(unmarked.commands[0]), "page.md:3", tmp_path)
    _check_marked(*_program(marked.commands[0]), "page.md:8")
    with pytest.raises(AssertionError, match="has no option --onse"):
        _check_marked(*_program(("rush", "daemon", "--onse")), "page.md")
    with pytest.raises(AssertionError, match="is not a command"):
        _check_marked(*_program(("rush", "trace", "fetchx", "KTH-SP2")), "page.md")


# Links and paths.


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@functools.cache
def _anchors(path: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    anchors = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            slug = _slug(line.lstrip("#"))
            anchors.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
            seen[slug] = seen.get(slug, 0) + 1
    return frozenset(anchors)


def _prose(path: Path) -> str:
    """The page without its fenced blocks (their text is commands, not links)."""
    return re.sub(r"^\s*```.*?^\s*```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)


def _links(path: Path) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", _prose(path))


@pytest.mark.parametrize("page", DOCS, ids=[str(p.relative_to(REPO)) for p in DOCS])
def test_every_relative_link_resolves(page: Path) -> None:
    for link in _links(page):
        if re.match(r"^[a-z]+:", link):
            continue  # http(s), mailto: not checked offline
        target, _, anchor = link.partition("#")
        resolved = (page.parent / target).resolve() if target else page
        assert resolved.exists(), f"{page.relative_to(REPO)}: link {link} points to nothing"
        if anchor and resolved.suffix == ".md":
            assert anchor in _anchors(resolved), f"{page.relative_to(REPO)}: no heading #{anchor} in {target}"


REPO_PATH = re.compile(
    r"`((?:rush|deploy|plugins|sim|tests|benchmarks|collectors|models|docs|\.ci)/[^`\s]*)`"
)


@pytest.mark.parametrize(
    "page", [p for p in DOCS if p.name not in GENERATED], ids=lambda p: str(p.relative_to(REPO))
)
def test_every_repository_path_in_backticks_exists(page: Path) -> None:
    for path in REPO_PATH.findall(_prose(page)):
        if re.search(r"[<>*{}|$]|\.\.\.|…", path):
            continue  # a pattern, not a path
        path = path.split("::")[0].rstrip("/.,;:")
        assert (REPO / path).exists(), f"{page.relative_to(REPO)}: `{path}` does not exist"


# Generated references.


def _generator() -> Any:
    return load_script(GENERATOR, "docs_reference_generate")


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_reference_is_current(name: str) -> None:
    generator = _generator()
    committed = (GENERATOR.parent / name).read_text(encoding="utf-8")
    assert committed == generator.OUTPUTS[name](), (
        f"docs/reference/{name} is stale; regenerate it with: {generator.COMMAND}"
    )


def test_generator_output_does_not_depend_on_the_machine(tmp_path: Path) -> None:
    # Another working directory and hash seed: the committed files must still match.
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, str(GENERATOR), "--check"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
