"""No function in ``rush/`` takes more than about eight parameters (issue 19 §1).

A long parameter list is grouped into a dataclass or a NamedTuple (numba kernels: NamedTuples
of arrays, as rush/core/pass_data.py does). Two kinds are exempt, by the design of the
library they serve:

* typer command functions: typer turns each parameter into a command-line option, so a
  command has one parameter per flag; it must hand a settings object to the code below it;
* ``__init__`` of scikit-learn estimators: hyperparameters are the constructor's keyword
  arguments in scikit-learn's estimator API (``get_params``/``set_params``/``clone`` read them).
"""

from __future__ import annotations

import ast
from pathlib import Path

MAX_PARAMETERS = 8
PACKAGE = Path(__file__).resolve().parents[1] / "rush"


def _parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    args = node.args
    positional = [a.arg for a in args.posonlyargs + args.args]
    bound = 1 if positional[:1] in (["self"], ["cls"]) else 0
    return len(positional) + len(args.kwonlyargs) - bound


def _is_typer_option(default: ast.expr | None) -> bool:
    """``typer.Option(...)``/``typer.Argument(...)`` (or the bare names) as a default."""
    if not isinstance(default, ast.Call):
        return False
    func = default.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in ("Option", "Argument")


def _is_typer_command(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    defaults = [*node.args.defaults, *node.args.kw_defaults]
    return any(_is_typer_option(d) for d in defaults)


def _is_estimator(cls: ast.ClassDef) -> bool:
    bases = {b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in cls.bases}
    return "BaseEstimator" in bases


def long_signatures(root: Path = PACKAGE) -> list[str]:
    """``path:line name (count)`` of every function over the limit, exemptions left out."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        estimator_inits = {
            id(item)
            for cls in ast.walk(tree)
            if isinstance(cls, ast.ClassDef) and _is_estimator(cls)
            for item in cls.body
            if isinstance(item, ast.FunctionDef) and item.name == "__init__"
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            count = _parameter_count(node)
            if count <= MAX_PARAMETERS or id(node) in estimator_inits or _is_typer_command(node):
                continue
            found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({count})")
    return found


def test_no_function_takes_more_than_eight_parameters() -> None:
    found = long_signatures()
    assert not found, "group these parameters into a dataclass or NamedTuple:\n" + "\n".join(found)


def test_the_check_sees_long_signatures_and_the_exemptions(tmp_path: Path) -> None:
    package = tmp_path / "rush"
    package.mkdir()
    nine = ", ".join(f"a{k}" for k in range(9))
    (package / "shapes.py").write_text(
        f"def long({nine}):\n    pass\n\n\n"
        f"def fine(self, {', '.join(f'a{k}' for k in range(8))}):\n    pass\n\n\n"
        f"def command({', '.join(f'a{k}: int = typer.Option(1)' for k in range(9))}):\n    pass\n\n\n"
        f"class Model(BaseEstimator):\n    def __init__(self, {nine}):\n        pass\n\n"
        f"    def fit(self, {nine}):\n        pass\n"
    )
    assert long_signatures(package) == ["rush/shapes.py:1 long (9)", "rush/shapes.py:17 fit (9)"]
