"""The packages depend on each other one way: core ← machines ← engines ← sessions_app ← collisions ← approvals
← messaging ← mcp_server ← board ← install, and relaybay/ (the Django project: settings, URLs,
ASGI and WSGI) above them all wiring them together. Nothing is exempt, so no cycle can hide."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# What each package's modules may import of the project's own packages.
LAYERS = ["core", "machines", "engines", "sessions_app", "collisions", "approvals", "messaging", "mcp_server", "board", "install", "relaybay"]
ALLOWED = {package: set(LAYERS[: i + 1]) for i, package in enumerate(LAYERS)}


def imported_packages(path):
    """The top-level package of every import in the module, at module level or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def modules(package):
    return [p for p in sorted((ROOT / package).rglob("*.py")) if "migrations" not in p.parts]


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_each_package_imports_only_what_it_may(package):
    wrong = {}
    for path in modules(package):
        relative = str(path.relative_to(ROOT))
        own = imported_packages(path) & set(ALLOWED)
        if own - ALLOWED[package]:
            wrong[relative] = sorted(own - ALLOWED[package])
    assert not wrong, f"{package} must not import these: {wrong}"


def test_the_check_sees_an_import_inside_a_function(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from messaging.models import SessionMessage\n    return SessionMessage\n")
    assert imported_packages(module) == {"messaging"}


def test_sessions_app_is_checked_module_by_module():
    # The walk reaches the hook modules too, where the deliveries are composed.
    names = {str(p.relative_to(ROOT)) for p in modules("sessions_app")}
    assert "sessions_app/hooks/delivery.py" in names and "sessions_app/actions.py" in names


def test_every_package_of_the_project_has_its_layer():
    # A new app or package must be placed in LAYERS, or its imports would go unchecked.
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "bench", "relaybay_hook"}
    assert packages <= set(LAYERS), f"not placed in LAYERS: {sorted(packages - set(LAYERS))}"


def test_only_core_capabilities_names_a_database():
    """What SQLite and PostgreSQL do differently is declared once, as capabilities
    (core/capabilities.py): the server's code, its migrations and the benchmarks ask for a
    capability, never for the database's name."""
    allowed = ROOT / "core" / "capabilities.py"
    naming = [
        f"{path.relative_to(ROOT)}:{number}"
        for package in [*LAYERS, "bench"]
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != allowed
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if ".vendor" in line
    ]
    assert naming == []
