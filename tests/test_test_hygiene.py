"""No test module imports another test module: shared helpers live in conftest.py or in helper
modules (tests/<pkg>/helpers.py, fixtures.py, ...). Importing a test module runs its collection-time
code twice and makes pytest collect its tests under a second name."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).parent


def imported_test_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names += [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return [n for n in names if n.startswith("tests.") and n.split(".")[-1].startswith("test_")]


def test_no_test_module_imports_another(tmp_path: Path) -> None:
    offenders = {
        str(path.relative_to(TESTS)): found
        for path in sorted(TESTS.rglob("*.py"))
        if (found := imported_test_modules(path))
    }
    assert offenders == {}
    # The check finds both import forms (it would fail on the old layout).
    sample = tmp_path / "sample.py"
    sample.write_text("from tests.models.test_runtime_class import kth\nimport tests.core.test_real_traces\n")
    assert imported_test_modules(sample) == ["tests.models.test_runtime_class", "tests.core.test_real_traces"]
