"""The parts' import rules, read from the source (nothing is imported or run).

``agent`` and ``relay`` never import each other; both may import ``wire``, the shared package,
which imports neither of them; ``cli`` (the command line) is the one package that imports all
three, and none of them imports it. Inside each package the module-level imports form no cycle.
The cross-package rule counts every import, inside functions too.

In ``relay``, the server, no cycle hides in a function either: the relay's imports form no cycle
counting those inside functions (only imports for the type checker are left out). Its features
(``relay/features/``) plug in through relay/feature.py and never import ``relay.routes``; its core
never imports a feature: only relay/app.py lists them.

The shared package (``wire``) has no import cycle of any kind, and starts every task through
its one owner, wire/tasks.py's TaskSet.

The tests share their fixtures through one pytest plug-in (tests/support/plugin.py, registered in
tests/conftest.py) and their helpers through the modules of tests/support/: no module of the tests
(or of the benchmarks) imports a test module (``tests.<part>.test_*``) or a conftest, inside
functions either. tests/ mirrors the code: each test module in the folder of the part it tests
(tests/wire/, agent/, relay/ and its packages, cli/, web/, e2e/, and bench/ for the benchmarks), each folder a package, only
the repository-wide rules at the top, and no file named after a round of work.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agent", "relay", "wire", "cli")

# The packages each one must not import, and why.
FORBIDDEN: dict[str, dict[str, str]] = {
    "agent": {"relay": "the agent and the relay never import each other", "cli": "cli is on top"},
    "relay": {"agent": "the agent and the relay never import each other", "cli": "cli is on top"},
    "wire": {
        "agent": "the shared package imports neither side",
        "relay": "the shared package imports neither side",
        "cli": "cli is on top",
    },
    "cli": {},
}


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name
    imported: str  # dotted module name (or package)
    line: int
    top_level: bool  # at module level (not inside a function), as a cycle needs
    type_only: bool = False  # under ``if TYPE_CHECKING:``: never runs


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules(package: str) -> dict[str, Path]:
    return {module_name(p): p for p in sorted((ROOT / package).rglob("*.py"))}


def _resolve(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _in_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(name: str, path: Path, known: set[str]) -> Iterator[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"

    def walk(node: ast.AST, top_level: bool, type_only: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield Import(name, alias.name, child.lineno, top_level, type_only)
            elif isinstance(child, ast.ImportFrom):
                target = _resolve(child, name, is_package)
                for alias in child.names:
                    # `from pkg import mod` imports the module pkg.mod when there is one.
                    sub = f"{target}.{alias.name}"
                    imported = sub if sub in known else target
                    yield Import(name, imported, child.lineno, top_level, type_only)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                yield from walk(child, False, type_only)
            elif isinstance(child, ast.If) and _in_type_checking(child):
                # Imports for the type checker only: they never run, so they make no cycle.
                yield from walk(child, False, True)
            else:
                yield from walk(child, top_level, type_only)

    yield from walk(tree, True, False)


def all_imports() -> list[Import]:
    modules = {
        name: path for package in PACKAGES for name, path in package_modules(package).items()
    }
    known = set(modules)
    return [imp for name, path in modules.items() for imp in imports_of(name, path, known)]


def test_every_package_is_scanned() -> None:
    for package in PACKAGES:
        assert (ROOT / package / "__init__.py").is_file(), f"{package}/ is not a package"
        assert len(package_modules(package)) >= 2, f"no modules found in {package}/"


def test_no_part_imports_a_part_it_must_not() -> None:
    broken = []
    for imp in all_imports():
        importer_package = imp.importer.split(".")[0]
        imported_package = imp.imported.split(".")[0]
        why = FORBIDDEN[importer_package].get(imported_package)
        if why is not None:
            where = imp.importer.replace(".", "/") + ".py"
            broken.append(f"{where}:{imp.line} imports {imp.imported} ({why})")
    shown = "\n".join(dict.fromkeys(broken))  # one line per import statement
    assert not broken, "imports across the parts that break the rule:\n" + shown


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle in ``graph`` (module → modules it imports at module level), or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def _import_graph(
    imports: list[Import], known: set[str], *, in_functions: bool = False
) -> dict[str, set[str]]:
    """Module → the modules it imports: at module level, or (``in_functions``) anywhere that
    runs (inside functions too, not under ``if TYPE_CHECKING:``)."""
    graph: dict[str, set[str]] = {name: set() for name in known}
    for imp in imports:
        runs = not imp.type_only if in_functions else imp.top_level
        if not runs or imp.imported not in known or imp.imported == imp.importer:
            continue
        # A package's __init__ importing its own modules is how a package is built, not a cycle.
        if imp.imported.startswith(imp.importer + "."):
            continue
        graph[imp.importer].add(imp.imported)
    return graph


def test_no_import_cycle_inside_a_package() -> None:
    imports = all_imports()
    cycles = []
    for package in PACKAGES:
        known = set(package_modules(package))
        own = [i for i in imports if i.importer in known]
        found = _cycle(_import_graph(own, known))
        if found is not None:
            cycles.append(f"{package}/: " + " → ".join(found))
    # Across packages too: the rule above already forbids the edges a cycle would need, but a
    # cycle through wire and another part would still be one.
    every = {name for package in PACKAGES for name in package_modules(package)}
    found = _cycle(_import_graph(imports, every))
    if found is not None:
        cycles.append("across the parts: " + " → ".join(found))
    assert not cycles, "module-level import cycles:\n" + "\n".join(cycles)


def _relay_imports() -> tuple[set[str], list[Import]]:
    known = set(package_modules("relay"))
    return known, [i for i in all_imports() if i.importer in known]


def test_no_import_cycle_in_the_relay_counting_imports_inside_functions() -> None:
    # An import moved into a function to dodge a cycle is still a cycle: the parts still need
    # each other, the order of loading only hides it.
    known, own = _relay_imports()
    found = _cycle(_import_graph(own, known, in_functions=True))
    assert found is None, "relay/: import cycle (counting imports inside functions): " + (
        " → ".join(found or [])
    )


def _where(imp: Import) -> str:
    return imp.importer.replace(".", "/") + f".py:{imp.line} imports {imp.imported}"


def test_no_feature_imports_the_routes() -> None:
    # Request helpers (State, Phone, session_or_404, send_command) are in relay/deps.py.
    _, own = _relay_imports()
    broken = [
        _where(i)
        for i in own
        if i.importer.startswith("relay.features.")
        and (i.imported == "relay.routes" or i.imported.startswith("relay.routes."))
    ]
    assert not broken, "features import relay.routes (take it from relay/deps.py):\n" + "\n".join(
        broken
    )


def test_the_core_imports_no_feature() -> None:
    # The core reaches a feature only through what it registered (relay/feature.py); the app is
    # the one module that lists them.
    _, own = _relay_imports()
    broken = [
        _where(i)
        for i in own
        if not i.importer.startswith("relay.features")
        and i.importer != "relay.app"
        and not i.type_only
        and (i.imported == "relay.features" or i.imported.startswith("relay.features."))
    ]
    assert not broken, "the relay's core imports a feature:\n" + "\n".join(broken)


def test_the_feature_finders_see_the_features() -> None:
    # The rules above pass by finding nothing; check they look at the right modules.
    known, own = _relay_imports()
    assert {"relay.features.search", "relay.features.audit", "relay.deps"} <= known
    assert any(i.importer.startswith("relay.features.") and i.imported == "relay.deps" for i in own)
    assert any(i.importer == "relay.app" and i.imported.startswith("relay.features") for i in own)


def test_the_cycle_finder_finds_a_cycle() -> None:
    # The scan above passes by finding nothing; check it can find something.
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


# -- the tests ---------------------------------------------------------------------------------


def _test_imports() -> tuple[dict[str, Path], list[Import]]:
    # The benchmarks (bench/) start relays and Macs with the same helpers.
    modules = {**package_modules("tests"), **package_modules("bench")}
    known = set(modules)
    return modules, [imp for name, path in modules.items() for imp in imports_of(name, path, known)]


def _is_test_module(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return name.startswith("tests.") and last.startswith("test_")


def test_no_test_module_imports_another_or_a_conftest() -> None:
    # Shared fixtures come from the plug-in, shared helpers from tests/support/: a test module
    # imported by another would be collected twice over and tie the two together.
    _, imports = _test_imports()
    broken = [
        _where(i)
        for i in imports
        if _is_test_module(i.imported) or "conftest" in i.imported.split(".")
    ]
    assert not broken, "imports of a test module or a conftest:\n" + "\n".join(broken)


def test_the_test_scan_sees_the_tests() -> None:
    # The rule above passes by finding nothing; check it looks at the tests and finds such imports.
    modules, imports = _test_imports()
    assert {"tests.conftest", "tests.support.plugin", "tests.relay.test_api"} <= set(modules)
    assert any(
        i.importer == "tests.relay.test_api" and i.imported == "tests.support.api" for i in imports
    )
    assert _is_test_module("tests.e2e.test_journeys") and not _is_test_module("tests.support.web")
    conftest = ast.parse((ROOT / "tests" / "conftest.py").read_text(encoding="utf-8"))
    plugins = [
        ast.literal_eval(node.value)
        for node in conftest.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in node.targets)
    ]
    assert plugins == [["tests.support.plugin"]], plugins


# -- the command line ---------------------------------------------------------------------------
# cli/ is commands on top of libraries: a command module adds its commands with ``register`` and
# takes what it shares with another from a library (cli/common.py …), never from another command;
# cli/main.py lists the command modules (``COMMANDS``) and imports them all.


def _cli_imports() -> tuple[dict[str, Path], list[Import]]:
    modules = package_modules("cli")
    known = set(modules)
    return modules, [imp for name, path in modules.items() for imp in imports_of(name, path, known)]


def _every_import_graph(imports: list[Import], known: set[str]) -> dict[str, set[str]]:
    """Module → the modules it imports anywhere: at module level, inside functions, and under
    ``if TYPE_CHECKING:`` (a cycle the type checker needs is a cycle of the design too)."""
    graph: dict[str, set[str]] = {name: set() for name in known}
    for imp in imports:
        own_module = imp.imported.startswith(imp.importer + ".")  # how a package is built
        if imp.imported in known and imp.imported != imp.importer and not own_module:
            graph[imp.importer].add(imp.imported)
    return graph


def _command_modules(modules: dict[str, Path]) -> set[str]:
    """The modules that define a top-level ``register``: each adds its own commands."""
    found = set()
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        if any(isinstance(n, ast.FunctionDef) and n.name == "register" for n in tree.body):
            found.add(name)
    return found


def _listed_commands() -> list[str]:
    """The modules cli/main.py's ``COMMANDS`` names, in its order."""
    tree = ast.parse((ROOT / "cli" / "main.py").read_text(encoding="utf-8"))
    for node in tree.body:
        target: ast.expr | None = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == "COMMANDS":
            assert isinstance(node, ast.Assign | ast.AnnAssign)
            assert isinstance(node.value, ast.Tuple), "COMMANDS is a tuple of modules"
            return [f"cli.{e.id}" for e in node.value.elts if isinstance(e, ast.Name)]
    raise AssertionError("cli/main.py has no COMMANDS")


def _private_imports(name: str, source: str) -> list[str]:
    """``from x import _y`` anywhere in ``source`` (dunders such as ``__future__`` aside)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{name}:{node.lineno} imports {alias.name} from {node.module}")
    return found


def _private_reaches(name: str, source: str) -> list[str]:
    """``other._attr``: a private member read on anything but ``self`` or ``cls``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"})
        ):
            found.append(f"{name}:{node.lineno} reaches .{node.attr}")
    return found


def _bare_tasks(name: str, source: str) -> list[str]:
    """``create_task`` / ``ensure_future`` calls: a task with no owner to name, log and stop it."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in {"create_task", "ensure_future"}:
                found.append(f"{name}:{node.lineno} calls {called}")
    return found


def test_no_import_cycle_of_any_kind_in_the_cli() -> None:
    # Inside functions and under TYPE_CHECKING too: an import that only hides a cycle (run late,
    # or for the type checker only) still ties the two modules together.
    modules, imports = _cli_imports()
    found = _cycle(_every_import_graph(imports, set(modules)))
    assert found is None, "cli/: import cycle (counting every import): " + " → ".join(found or [])


def test_no_cli_command_module_imports_another() -> None:
    # What two commands share lives in a library (cli/common.py, cli/arguments.py …).
    modules, imports = _cli_imports()
    commands = _command_modules(modules)
    broken = [
        _where(i)
        for i in imports
        if i.importer in commands and i.imported in commands and i.imported != i.importer
    ]
    assert not broken, "cli/ command modules importing another:\n" + "\n".join(broken)


def test_no_private_name_is_imported_or_reached_across_cli_modules() -> None:
    modules, _ = _cli_imports()
    broken = []
    for name, path in modules.items():
        source = path.read_text(encoding="utf-8")
        broken += _private_imports(name, source) + _private_reaches(name, source)
    assert not broken, "cli/ uses another module's private names:\n" + "\n".join(broken)


def test_every_background_task_in_the_cli_has_a_task_set() -> None:
    # Started through wire.tasks.TaskSet: named, its failure logged, closed with its part.
    modules, _ = _cli_imports()
    broken = [
        found
        for name, path in modules.items()
        for found in _bare_tasks(name, path.read_text(encoding="utf-8"))
    ]
    assert not broken, "cli/ starts tasks without a TaskSet:\n" + "\n".join(broken)


def test_the_cli_scans_see_commands_libraries_and_hidden_imports(tmp_path: Path) -> None:
    # The rules above pass by finding nothing; check they look at the right modules and would
    # find what they forbid.
    modules, imports = _cli_imports()
    commands = _command_modules(modules)
    listed = _listed_commands()
    assert commands == set(listed), "cli/main.py's COMMANDS is the one list of command modules"
    assert {"cli.up", "cli.doctor", "cli.attach", "cli.opening"} <= commands
    assert not {"cli.main", "cli.common", "cli.client", "cli.references"} & commands
    assert all(any(i.importer == "cli.main" and i.imported == c for i in imports) for c in listed)
    assert any(i.importer == "cli.up" and i.imported == "cli.common" for i in imports)
    # A cycle made only of an import inside a function and one under TYPE_CHECKING is found.
    (tmp_path / "a.py").write_text("def f():\n    import b\n")
    (tmp_path / "b.py").write_text("if TYPE_CHECKING:\n    from a import f\n")
    hidden = [i for n in ("a", "b") for i in imports_of(n, tmp_path / f"{n}.py", {"a", "b"})]
    assert _cycle(_every_import_graph(hidden, {"a", "b"})) == ["a", "b", "a"]
    # A private name imported (at module level or in a function) or reached is found.
    source = (
        "from __future__ import annotations\nfrom cli.main import _fail\n"
        "def f(other):\n    from x import _y as z\n    return self._ok, other._state\n"
    )
    assert len(_private_imports("m", source)) == 2
    assert _private_reaches("m", source) == ["m:5 reaches ._state"]
    # A bare task is found, and up's server task goes through its TaskSet.
    assert _bare_tasks("m", "async def f():\n    asyncio.create_task(g())\n") == [
        "m:2 calls create_task"
    ]
    assert any(i.importer == "cli.up" and i.imported == "wire.tasks" for i in imports)


# -- the relay's rooms ---------------------------------------------------------------------------
# relay/ keeps one public way from each part to another: no cycle of any kind, no private name of
# another module, no class holding a whole package's life, features that change the core's rows
# only through the store's functions (relay/store/), and every background task on a TaskSet.

MAX_METHODS = 40  # a class with more holds more than one concept

# The core's tables (relay/db/migrations.py, relay/cluster.py): written by relay/store/ and the
# cluster only. A feature keeps its own tables and changes these through relay/store/'s functions.
CORE_TABLES = frozenset(
    {
        "accounts",
        "devices",
        "phones",
        "tokens",
        "pairing_codes",
        "sessions",
        "conversations",
        "line_uuids",
        "last_known",
        "events",
        "schema_migrations",
        "relay_nodes",
        "device_links",
        "live_sessions",
        "node_messages",
        "node_requests",
        "rate_hits",
    }
)


def _written_tables(sql: str) -> list[str]:
    """The tables a SQL text writes: after ``UPDATE``, ``DELETE FROM`` and ``INSERT [OR …]
    INTO`` (``UPDATE OF … ON t`` of a trigger names no table it writes)."""
    words = sql.replace("(", " ( ").split()
    found = []
    for i, word in enumerate(words[:-1]):
        writes = (
            word == "UPDATE"
            or (word == "FROM" and i > 0 and words[i - 1] == "DELETE")
            or (word == "INTO" and {"INSERT", "REPLACE"} & set(words[max(0, i - 3) : i]))
        )
        if writes:
            found.append(words[i + 1].strip('"'))
    return found


def _relay_modules() -> dict[str, Path]:
    return package_modules("relay")


def _classes_over(name: str, source: str, limit: int) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            methods = [
                n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            ]
            if len(methods) > limit:
                found.append(f"{name}:{node.lineno} class {node.name} has {len(methods)} methods")
    return found


def _sql_texts(source: str) -> list[tuple[int, str]]:
    """Every string of ``source`` as SQL would read it: literals (implicitly joined ones are
    one), and f-strings whole, with each ``{…}`` read as a name."""
    tree = ast.parse(source)
    texts = []
    inside: set[int] = set()  # the literal parts of f-strings, read with their f-string
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    inside.add(id(value))
                    parts.append(value.value)
                else:
                    parts.append("x")
            texts.append((node.lineno, "".join(parts)))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in inside
        ):
            texts.append((node.lineno, node.value))
    return sorted(texts)


def _core_writes(name: str, source: str) -> list[str]:
    """INSERT / UPDATE / DELETE on a core table in the strings of ``source``."""
    return [
        f"{name}:{line} writes {table}: {' '.join(text.split())[:80]}"
        for line, text in _sql_texts(source)
        for table in _written_tables(text)
        if table in CORE_TABLES
    ]


def test_no_import_cycle_of_any_kind_in_the_relay() -> None:
    # Inside functions and under TYPE_CHECKING too: a Protocol (relay/hookspecs.py,
    # relay/peers.py) is how two parts meet without needing each other.
    modules = _relay_modules()
    known = set(modules)
    imports = [i for i in all_imports() if i.importer in known]
    found = _cycle(_every_import_graph(imports, known))
    assert found is None, "relay/: import cycle (counting every import): " + " → ".join(found or [])


def test_no_private_name_is_imported_or_reached_across_relay_modules() -> None:
    broken = []
    for name, path in _relay_modules().items():
        source = path.read_text(encoding="utf-8")
        broken += _private_imports(name, source) + _private_reaches(name, source)
    assert not broken, "relay/ uses another module's private names:\n" + "\n".join(broken)


def test_no_relay_class_has_more_than_40_methods() -> None:
    broken = [
        found
        for name, path in _relay_modules().items()
        for found in _classes_over(name, path.read_text(encoding="utf-8"), MAX_METHODS)
    ]
    assert not broken, "relay/ classes holding more than one concept:\n" + "\n".join(broken)


def test_no_feature_writes_a_core_table() -> None:
    # A feature changes a session (its title, its mark, its deletion) through
    # relay/store/sessions.py, never with SQL of its own on the core's tables.
    broken = [
        found
        for name, path in _relay_modules().items()
        if name.startswith("relay.features.")
        for found in _core_writes(name, path.read_text(encoding="utf-8"))
    ]
    assert not broken, "relay/features/ write the core's tables:\n" + "\n".join(broken)


def test_every_background_task_in_the_relay_has_a_task_set() -> None:
    # Started through wire.tasks.TaskSet: named, its failure logged, closed with its part.
    broken = [
        found
        for name, path in _relay_modules().items()
        for found in _bare_tasks(name, path.read_text(encoding="utf-8"))
    ]
    assert not broken, "relay/ starts tasks without a TaskSet:\n" + "\n".join(broken)


def test_the_relay_scans_see_the_relay_and_would_find_what_they_forbid() -> None:
    # The rules above pass by finding nothing; check they look at the right modules and find
    # each thing they forbid.
    modules = _relay_modules()
    assert {"relay.store.store", "relay.store.sessions", "relay.hookspecs", "relay.cluster"} <= set(
        modules
    )
    imports = [i for i in all_imports() if i.importer in modules]
    graph = _every_import_graph(imports, set(modules))
    # Imports for the type checker count: hookspecs names the store's rows only under it.
    assert "relay.store.sessions" in graph["relay.hookspecs"]
    assert any(
        i.importer == "relay.hookspecs" and i.imported == "relay.store.sessions" and i.type_only
        for i in imports
    )
    assert any(i.importer == "relay.cluster" and i.imported == "wire.tasks" for i in imports)
    # The method count counts, and sees the store's facade.
    big = "class Big:\n" + "".join(f"    def m{i}(self): ...\n" for i in range(41))
    assert _classes_over("m", big, MAX_METHODS) == ["m:1 class Big has 41 methods"]
    assert _classes_over("m", big, 41) == []
    store = (ROOT / "relay" / "store" / "store.py").read_text(encoding="utf-8")
    assert _classes_over("relay.store.store", store, 10)  # Store has methods, and they are seen
    # A core write is found in a literal, across joined literals and in an f-string; a write of a
    # feature's own table, a read, or a trigger on a core table is not one.
    source = (
        "def f(conn, table):\n"
        '    conn.execute("UPDATE sessions SET title = ? WHERE id = ?")\n'
        '    conn.execute("INSERT INTO line_uuids (session_id, uuid)"\n'
        '                 " VALUES (?, ?)")\n'
        '    conn.execute(f"DELETE FROM events WHERE seq < {table}")\n'
        '    conn.execute("INSERT OR IGNORE INTO devices (id) VALUES (?)")\n'
        '    conn.execute("UPDATE session_titles SET gist = ?")\n'
        '    conn.execute("SELECT title FROM sessions")\n'
        '    conn.execute("CREATE TRIGGER t AFTER UPDATE OF title ON sessions BEGIN END")\n'
    )
    writes = _core_writes("m", source)
    assert [w.split(" writes ")[1].split(":")[0] for w in writes] == [
        "sessions",
        "line_uuids",
        "events",
        "devices",
    ]
    titles = (ROOT / "relay" / "features" / "titles.py").read_text(encoding="utf-8")
    assert any("session_titles" in _written_tables(t) for _, t in _sql_texts(titles))


# -- the agent ----------------------------------------------------------------------------------
# agent/ is parts composed by agent/daemon.py: each part is given a narrow Protocol of what it
# needs (agent/sessions.py's Sessions satisfies them), never the agent, and reaches nothing
# private of another; every task it starts has an owner (wire.tasks.TaskSet).


def _agent_imports() -> tuple[dict[str, Path], list[Import]]:
    modules = package_modules("agent")
    known = set(modules)
    return modules, [imp for name, path in modules.items() for imp in imports_of(name, path, known)]


def _large_classes(name: str, source: str, limit: int = MAX_METHODS) -> list[str]:
    """Classes with more than ``limit`` methods of their own (defined in the class's body)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            methods = [
                n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            ]
            if len(methods) > limit:
                found.append(f"{name}:{node.lineno} {node.name} has {len(methods)} methods")
    return found


def _agent_sources() -> dict[str, str]:
    modules, _ = _agent_imports()
    return {name: path.read_text(encoding="utf-8") for name, path in modules.items()}


def test_no_import_cycle_of_any_kind_in_the_agent() -> None:
    # Inside functions and under TYPE_CHECKING too: a part that needs the daemon is given a
    # Protocol of what it needs instead.
    modules, imports = _agent_imports()
    found = _cycle(_every_import_graph(imports, set(modules)))
    assert found is None, "agent/: import cycle (counting every import): " + " → ".join(found or [])


def test_no_private_name_is_imported_across_agent_modules() -> None:
    broken = [
        found for n, source in _agent_sources().items() for found in _private_imports(n, source)
    ]
    assert not broken, "agent/ imports another module's private names:\n" + "\n".join(broken)


def test_no_agent_module_reaches_into_another_objects_private_members() -> None:
    broken = [
        found for n, source in _agent_sources().items() for found in _private_reaches(n, source)
    ]
    assert not broken, "agent/ reaches into private members:\n" + "\n".join(broken)


def test_no_agent_class_has_more_than_forty_methods() -> None:
    broken = [
        found for n, source in _agent_sources().items() for found in _large_classes(n, source)
    ]
    assert not broken, f"agent/ classes over {MAX_METHODS} methods:\n" + "\n".join(broken)


def test_every_background_task_in_the_agent_has_a_task_set() -> None:
    # Started through wire.tasks.TaskSet: named, its failure logged, closed when the agent stops.
    broken = [found for n, source in _agent_sources().items() for found in _bare_tasks(n, source)]
    assert not broken, "agent/ starts tasks without a TaskSet:\n" + "\n".join(broken)


def test_the_agent_scans_see_its_parts_and_would_find_what_they_forbid() -> None:
    # The rules above pass by finding nothing; check they look at the agent's modules, see the
    # edges and classes that are there, and would find what they forbid.
    modules, imports = _agent_imports()
    assert {"agent.daemon", "agent.sessions", "agent.moving", "agent.driver"} <= set(modules)
    graph = _every_import_graph(imports, set(modules))
    assert {"agent.sessions", "agent.moving", "agent.commands"} <= graph["agent.daemon"]
    # One import of the daemon by a part (even for the type checker only) would be a cycle.
    graph["agent.moving"].add("agent.daemon")
    assert _cycle(graph) is not None
    sources = _agent_sources()
    assert _large_classes("agent.driver", sources["agent.driver"], limit=10), "SessionDriver"
    many = "class Big:\n" + "".join(f"    def m{i}(self): ...\n" for i in range(MAX_METHODS + 1))
    assert _large_classes("m", many) == [f"m:1 Big has {MAX_METHODS + 1} methods"]
    assert not _large_classes("m", many.replace(f"    def m{MAX_METHODS}(self): ...\n", ""))
    assert _private_reaches("m", "def f(agent):\n    return agent._launch\n") == [
        "m:2 reaches ._launch"
    ]
    assert _bare_tasks("m", "def f(loop):\n    loop.create_task(g())\n") == [
        "m:2 calls create_task"
    ]
    # The daemon's own tasks and a part's go through their TaskSets.
    assert any(i.importer == "agent.daemon" and i.imported == "wire.tasks" for i in imports)
    assert any(i.importer == "agent.moving" and i.imported == "wire.tasks" for i in imports)


# -- the shared package -------------------------------------------------------------------------
# wire/ is what every other part builds on: no cycle of any kind inside it, and every task it
# starts (the link's reader and the commands it hands on) has an owner, wire.tasks.TaskSet, the
# one module that calls create_task.

TASK_OWNER = "wire.tasks"


def _wire_imports() -> tuple[dict[str, Path], list[Import]]:
    modules = package_modules("wire")
    known = set(modules)
    return modules, [imp for name, path in modules.items() for imp in imports_of(name, path, known)]


def test_no_import_cycle_of_any_kind_in_wire() -> None:
    # Inside functions and under TYPE_CHECKING too.
    modules, imports = _wire_imports()
    found = _cycle(_every_import_graph(imports, set(modules)))
    assert found is None, "wire/: import cycle (counting every import): " + " → ".join(found or [])


def test_every_background_task_in_wire_has_a_task_set() -> None:
    modules, _ = _wire_imports()
    broken = [
        found
        for name, path in modules.items()
        if name != TASK_OWNER
        for found in _bare_tasks(name, path.read_text(encoding="utf-8"))
    ]
    assert not broken, "wire/ starts tasks without a TaskSet:\n" + "\n".join(broken)


def test_the_wire_scans_see_wire_and_would_find_what_they_forbid() -> None:
    modules, imports = _wire_imports()
    assert {"wire.client", "wire.protocol", TASK_OWNER} <= set(modules)
    graph = _every_import_graph(imports, set(modules))
    assert "wire.protocol" in graph["wire.client"]
    # One import back from the protocol to the client would be a cycle.
    graph["wire.protocol"].add("wire.client")
    assert _cycle(graph) is not None
    # The owner is the one module left out, and it does start tasks; the link goes through it.
    owner = modules[TASK_OWNER].read_text(encoding="utf-8")
    assert _bare_tasks(TASK_OWNER, owner), "wire/tasks.py starts the tasks it owns"
    assert any(i.importer == "wire.client" and i.imported == TASK_OWNER for i in imports)


# -- the tests' own shape -----------------------------------------------------------------------
# tests/ mirrors the code: a test module lives in the folder of the part it tests, tests/<part>/
# (deeper where the part has a package there: tests/relay/features/ for relay/features/); the
# end-to-end suite in tests/e2e/; at the top only the rules that read the whole repository. Each
# folder is a package, so two test files of one base name in two parts are two modules. A file
# is named after what it tests, never after a round of work.

# bench: the benchmarks' own logic (tests/bench/)
TEST_PARTS = ("wire", "agent", "relay", "cli", "web", "e2e", "bench")
TOP_RULES = frozenset({"test_architecture.py", "test_docs.py"})  # read the whole repository
TESTS = ROOT / "tests"
NOT_CODE = ("fixtures",)  # captures: data, not Python packages
ROUND_OF_WORK = re.compile(r"round\d|_v\d+|issue\d|stop\d|(^|_)new_|_2\.py$")


def _test_files() -> list[Path]:
    return sorted(
        p for p in TESTS.rglob("test_*.py") if not set(p.relative_to(TESTS).parts) & {*NOT_CODE}
    )


def _misplaced(path: Path) -> str | None:
    """Why ``path`` (a test module under tests/) is not where the code says it goes, or None."""
    rel = path.relative_to(TESTS)
    folder = rel.parent.parts
    if not folder:
        return None if rel.name in TOP_RULES else "at the top, where only the repository rules are"
    if folder[0] not in TEST_PARTS:
        return f"in tests/{folder[0]}/, which is no part of the code ({', '.join(TEST_PARTS)})"
    if folder[0] == "e2e":
        return None if len(folder) == 1 else "deeper than tests/e2e/"
    if not (ROOT.joinpath(*folder) / "__init__.py").is_file():
        return f"in tests/{'/'.join(folder)}/, and {'/'.join(folder)}/ is no package of the code"
    return None


def _packageless_folders(tests: Path = TESTS) -> list[str]:
    """Folders under ``tests`` holding Python with no __init__.py: their modules would be
    imported by base name, and two of one name in two parts would collide."""
    folders = {p.parent for p in tests.rglob("*.py")} | {tests}
    return sorted(
        f.relative_to(tests).as_posix()
        for f in folders
        if not set(f.relative_to(tests).parts) & {*NOT_CODE} and not (f / "__init__.py").is_file()
    )


def test_every_test_module_lives_in_the_folder_of_the_part_it_tests() -> None:
    broken = [
        f"{p.relative_to(ROOT)}: {why}" for p in _test_files() if (why := _misplaced(p)) is not None
    ]
    assert not broken, "test modules outside the folders that mirror the code:\n" + "\n".join(
        broken
    )


def test_every_folder_of_the_tests_is_a_package() -> None:
    missing = _packageless_folders()
    assert not missing, "folders of tests/ without __init__.py:\n" + "\n".join(
        f"tests/{m}" for m in missing
    )


def test_no_test_file_is_named_after_a_round_of_work() -> None:
    named = [
        str(p.relative_to(ROOT))
        for p in TESTS.rglob("*.py")
        if not set(p.relative_to(TESTS).parts) & {*NOT_CODE} and ROUND_OF_WORK.search(p.name)
    ]
    assert not named, "test files named after a round of work, not what they test:\n" + "\n".join(
        named
    )


def test_the_test_shape_scans_see_every_part_and_would_find_what_they_forbid(
    tmp_path: Path,
) -> None:
    # The rules above pass by finding nothing; check they see the tests of each part and flag
    # each thing they forbid.
    files = _test_files()
    for part in TEST_PARTS:
        assert any(p.relative_to(TESTS).parts[0] == part for p in files), f"no tests/{part}/"
    assert TESTS / "relay" / "features" / "test_audit.py" in files
    assert {p.name for p in files if p.parent == TESTS} == TOP_RULES
    assert _misplaced(TESTS / "relay" / "features" / "test_audit.py") is None
    assert _misplaced(TESTS / "e2e" / "test_journeys.py") is None
    assert "at the top" in (_misplaced(TESTS / "test_api.py") or "")
    assert "no part of the code" in (_misplaced(TESTS / "support" / "test_x.py") or "")
    assert "no package of the code" in (_misplaced(TESTS / "relay" / "nowhere" / "test_x.py") or "")
    assert "deeper" in (_misplaced(TESTS / "e2e" / "more" / "test_x.py") or "")
    for name in ("test_web_round2.py", "test_api_v2.py", "test_issue14.py", "test_stop3.py",
                 "test_new_page.py", "test_cards_2.py"):  # fmt: skip
        assert ROUND_OF_WORK.search(name), name
    for name in ("test_cards.py", "test_moves.py", "test_renewal.py", "test_sessions.py"):
        assert not ROUND_OF_WORK.search(name), name
    # The package check finds a folder (the top too) without __init__.py, and leaves captures.
    for folder in ("agent", "relay/store", "fixtures/x"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "test_x.py").write_text("")
    (tmp_path / "agent" / "__init__.py").write_text("")
    assert _packageless_folders(tmp_path) == [".", "relay/store"]
