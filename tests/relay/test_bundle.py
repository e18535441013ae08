"""relay/bundle.py: the page's ES modules joined into one script.

Every module of web/js goes into the page's bundle and the bundler reads each one's exports as
Chromium does (a module written with syntax it does not take fails here, not on a phone);
generated module graphs run the same bundled as they do as separate modules in Chromium
(evaluation order, imported values, namespaces); each refused form is refused with its file and
line. The page itself running from the bundle is what every browser test of the page proves.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from playwright.sync_api import Browser, Page, Route

from relay.app import WEB_DIR
from relay.bundle import BundleError, bundle, evaluation_order, read_module, split
from relay.static import IMMUTABLE, load

HYPOTHESIS = settings(
    derandomize=True,
    database=None,
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def page_scripts() -> dict[str, str]:
    return {p.relative_to(WEB_DIR).as_posix(): p.read_text() for p in WEB_DIR.rglob("*.js")}


def bundled_modules(text: str) -> list[str]:
    return re.findall(r"^// ---- (\S+)$", text, re.M)


def test_every_module_of_the_page_is_bundled_after_its_imports() -> None:
    files = page_scripts()
    made = split(files, "app.js")
    app = made.main
    order = bundled_modules(app)
    in_chunks = [bundled_modules(text) for text in made.chunks.values()]
    everything = order + [name for names in in_chunks for name in names]
    # every module in exactly one script: evaluated once, as in the browser
    assert sorted(everything) == sorted({"app.js"} | {n for n in files if n.startswith("js/")})
    assert order[-1] == "app.js"
    for names in [order, *in_chunks]:
        for name in names:
            for imported in read_module(name, files[name], files).imports:
                if imported.source in names:
                    assert names.index(imported.source) < names.index(name), (imported, name)
    assert not re.search(r"^\s*import\b", app, re.M)  # nothing left to resolve
    assert not re.search(r"^\s*export\b(?! \{ __cb_module_\d)", app, re.M)
    pair = bundled_modules(bundle(files, "pair.js"))
    assert pair[-1] == "pair.js" and {"js/api.js", "js/i18n.js", "js/ui.js"} <= set(pair)
    # what the relay serves
    served = load(WEB_DIR)
    assert served.bundled == ("app.js", "pair.js")
    assert served.files["app.js"].body.decode().startswith("// app.js and the modules")


def test_a_module_keeps_its_line_numbers_inside_the_bundle() -> None:
    """An error's line in the bundle is found in the file: a module's line k is k lines below
    its function's first line."""
    files = page_scripts()
    made = split(files, "app.js")
    for text in [made.main, *made.chunks.values()]:
        lines = text.splitlines()
        for name in bundled_modules(text):
            assert_lines_kept(files, lines, name)


def assert_lines_kept(files: dict[str, str], lines: list[str], name: str) -> None:
    first = lines.index(f"// ---- {name}") + 1  # the function's first line
    in_import = False
    for number, text in enumerate(files[name].splitlines(), start=1):
        in_import = in_import or text.startswith("import")
        if in_import:
            assert lines[first + number] == "", (name, number)  # left blank
            in_import = 'from "' not in text
        elif 'import("' in text:  # a lazy import: the same line, asking for the module's script
            assert "__cb_module_" in lines[first + number], (name, number)
        else:
            assert lines[first + number] == text.removeprefix("export "), (name, number)


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ('import x from "./a.js";', "import the bundler cannot read"),
        ('import x, { a } from "./a.js";', "import the bundler cannot read"),
        ("import { a } from './a.js';", "import the bundler cannot read"),
        ('import { default as x } from "./a.js";', "no default imports"),
        ('import { a as } from "./a.js";', "cannot read the import"),
        ("export default function () {}", "export the bundler does not take"),
        ("const a = 1;\nexport { a };", "export the bundler does not take"),
        ('export * from "./a.js";', "export the bundler does not take"),
        ("export let a = 1;", "export the bundler does not take"),
        ("export var a = 1;", "export the bundler does not take"),
        ("export const { a } = {};", "export the bundler does not take"),
        ("export const a = 1, b = 2;", "one name per export const"),
        ("const m = import(name);", "is not bundled"),
        ('const m = import("./missing.js");', "names no file"),
        ("console.log(import.meta.url);", "is not bundled"),
        ('const answer = await fetch("/api/me");', "await at the module's level"),
        ('import { a } from "lodash";', "is not a relative path"),
        ('import { a } from "https://cdn.example/a.js";', "is not a relative path"),
        ('import { a } from "./missing.js";', "names no file"),
        ('import { a } from "../../a.js";', "leaves the page's folder"),
        ('import { nope } from "./a.js";', "does not export nope"),
    ],
)
def test_syntax_the_bundler_does_not_take_is_refused_with_its_line(source: str, why: str) -> None:
    files = {"js/a.js": "export const a = 1;\n", "js/main.js": "// the entry\n" + source + "\n"}
    with pytest.raises(BundleError) as refused:
        bundle(files, "js/main.js")
    assert why in str(refused.value)
    if "main.js" in str(refused.value):  # the line refused: the source's last
        line = 2 + source.count("\n")
        assert f"js/main.js:{line}:" in str(refused.value), str(refused.value)


def test_an_import_cycle_is_refused_and_named() -> None:
    files = {
        "app.js": 'import { a } from "./js/a.js";\n',
        "js/a.js": 'import { b } from "./b.js";\nexport const a = 1;\n',
        "js/b.js": 'import { a } from "./a.js";\nexport const b = 2;\n',
    }
    with pytest.raises(BundleError, match=r"an import cycle: js/a\.js → js/b\.js → js/a\.js"):
        bundle(files, "app.js")


def test_commas_inside_an_exported_constant_are_one_declaration() -> None:
    files = {
        "app.js": 'import { LIST, TABLE, TEXT } from "./x.js";\n',
        "x.js": (
            'export const LIST = ["a", "b", `c, ${1}`];\n'
            'export const TABLE = { a: 1, b: [2, 3], "c,d": f(4, 5) };\n'
            "export const TEXT = 'it\\'s, still one' + \"a, b\";\n"
        ),
    }
    module = read_module("x.js", files["x.js"], files)
    assert module.exports == ("LIST", "TABLE", "TEXT")
    bundle(files, "app.js")


# -- generated module graphs: the same bundled as separate, in Chromium ---------------------------

KINDS = ("const", "function", "async function", "function*", "class", "class extends")


@dataclass
class Shape:
    """A module graph: module i imports only modules before it; the last one is the entry."""

    folders: list[str]
    exports: list[list[str]]  # each export's kind
    imports: list[list[tuple[int, str, list[int], bool]]] = field(default_factory=list)
    # (module imported, "named" / "all" / "bare", the export indices, aliased), per module
    compact: list[bool] = field(default_factory=list)
    declared: list[list[int]] = field(default_factory=list)  # the order exports are written in

    def path(self, i: int) -> str:
        return f"{self.folders[i]}m{i}.js"

    def specifier(self, importer: int, target: int) -> str:
        here, there = self.folders[importer], self.folders[target]
        if here == there:
            return f"./m{target}.js"
        if here:  # from sub/ to the top
            return f"../m{target}.js"
        return f"./{there}m{target}.js"

    def text(self, i: int) -> str:
        lines = []
        described = []
        bound: set[str] = set()
        for number, (target, kind, chosen, aliased) in enumerate(self.imports[i]):
            spec = self.specifier(i, target)
            if kind == "bare":
                lines.append(f'import "{spec}";')
            elif kind == "all":
                local = f"ns{i}_{number}"
                lines.append(f'import * as {local} from "{spec}";')
                described.append(f'Object.keys({local}).join("+")')
            else:
                names = []
                for k in chosen:
                    name = f"e{target}_{k}"
                    local = f"a{i}_{number}_{k}" if aliased or name in bound else name
                    bound.add(local)
                    names.append(name if local == name else f"{name} as {local}")
                    described.append(f"show({local})")
                if self.compact[i] or not names:
                    lines.append(f'import{{{",".join(names)}}}from"{spec}"')
                else:
                    listed = ",\n  ".join(names)
                    lines.append(f'import {{\n  {listed},\n}} from "{spec}";')
        lines.append(f'globalThis.__log.push("start m{i}");')
        lines.append(
            'const show = (x) => typeof x === "function" ? x.name : String(x);\n'
            f'globalThis.__log.push("m{i}: " + [{", ".join(described)}].join(" "));'
        )
        for k in self.declared[i]:
            kind = self.exports[i][k]
            name = f"e{i}_{k}"
            if kind == "const":
                lines.append(f'export const {name} = "value {i}.{k}, of m{i}";')
            elif kind == "class extends":
                lines.append(f"export class {name} extends Array {{}}")
            elif kind == "class":
                lines.append(f"export class {name} {{\n  static x = 1;\n}}")
            else:
                lines.append(f"export {kind} {name}() {{\n  return {k};\n}}")
        return "\n".join(lines) + "\n"

    def files(self) -> dict[str, str]:
        return {self.path(i): self.text(i) for i in range(len(self.folders))}


@st.composite
def shapes(draw: st.DrawFn) -> Shape:
    count = draw(st.integers(1, 6))
    shape = Shape(
        folders=[draw(st.sampled_from(["", "sub/"])) for _ in range(count)],
        exports=[draw(st.lists(st.sampled_from(KINDS), max_size=3)) for _ in range(count)],
    )
    for i in range(count):
        imports = []
        for target in draw(st.lists(st.integers(0, max(i - 1, 0)), max_size=3)) if i else []:
            kind = draw(st.sampled_from(["named", "named", "all", "bare"]))
            exported = range(len(shape.exports[target]))
            chosen = draw(st.lists(st.sampled_from(exported), unique=True)) if exported else []
            imports.append((target, kind, chosen, draw(st.booleans())))
        shape.imports.append(imports)
        shape.compact.append(draw(st.booleans()))
        shape.declared.append(draw(st.permutations(range(len(shape.exports[i])))))
    return shape


@given(shapes())
@HYPOTHESIS
def test_generated_module_graphs_are_bundled_in_evaluation_order(shape: Shape) -> None:
    files = shape.files()
    entry = shape.path(len(shape.folders) - 1)
    text = bundle(files, entry)
    order = bundled_modules(text)
    modules = {name: read_module(name, files[name], files) for name in order}
    assert order == evaluation_order(modules, entry)
    for name in order:  # each module's imports before it
        assert all(order.index(i.source) < order.index(name) for i in modules[name].imports)
    for i, kinds in enumerate(shape.exports):
        name = shape.path(i)
        if name in modules:
            assert set(modules[name].exports) == {f"e{i}_{k}" for k in range(len(kinds))}


class Origin:
    """Files served to Chromium at http://bundle.test/ (no relay needed to run a module)."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.files: dict[str, str] = {}
        page.route("http://bundle.test/**", self.serve)
        page.goto("http://bundle.test/")

    def serve(self, route: Route) -> None:
        path = route.request.url.removeprefix("http://bundle.test/")
        if path == "":
            route.fulfill(body="<!doctype html><title>bundle</title>", content_type="text/html")
        elif path in self.files:
            route.fulfill(body=self.files[path], content_type="text/javascript")
        else:
            route.fulfill(status=404, body="")

    def run(self, path: str) -> list[str] | str:
        """The log the module at ``path`` writes when it is imported, or its error."""
        log: list[str] | str = self.page.evaluate(
            """async (url) => {
                globalThis.__log = [];
                try { await import(url); } catch (error) { return String(error); }
                return globalThis.__log;
            }""",
            "http://bundle.test/" + path,
        )
        return log


@pytest.fixture(scope="module")
def origin(browser: Browser) -> Iterator[Origin]:
    context = browser.new_context()
    try:
        yield Origin(context.new_page())
    finally:
        context.close()


@given(shapes())
@HYPOTHESIS
def test_generated_module_graphs_run_the_same_bundled_in_chromium(
    origin: Origin, shape: Shape
) -> None:
    example = f"ex{len(origin.files)}/"  # fresh addresses: a browser evaluates a module once
    files = shape.files()
    entry = shape.path(len(shape.folders) - 1)
    origin.files.update({example + name: text for name, text in files.items()})
    origin.files[example + "bundle.js"] = bundle(files, entry)
    separate = origin.run(example + entry)
    assert isinstance(separate, list), separate  # the generated modules are valid
    assert origin.run(example + "bundle.js") == separate


def test_the_bundler_reads_each_page_module_exports_as_chromium_does(origin: Origin) -> None:
    """A module exporting in a way the bundler misreads (a missed name, one too many) fails
    here, whatever the syntax: Chromium's own namespace of each module is the reference."""
    files = page_scripts()
    for name, text in files.items():
        origin.files["page/" + name] = text
    for name in sorted(files):
        if name == "app.js" or name == "pair.js":
            continue  # entries: they run the page
        keys = origin.page.evaluate(
            "async (url) => Object.keys(await import(url))", "http://bundle.test/page/" + name
        )
        assert sorted(read_module(name, files[name], files).exports) == keys, name


def test_a_bundle_throws_where_its_module_throws(origin: Origin) -> None:
    files = {
        "a.js": "export const a = 1;\nthrow new Error('a fails');\n",
        "main.js": 'import { a } from "./a.js";\nglobalThis.__log.push("main ran");\n',
    }
    origin.files.update({"throws/" + n: t for n, t in files.items()})
    origin.files["throws/bundle.js"] = bundle(files, "main.js")
    assert origin.run("throws/main.js") == origin.run("throws/bundle.js") == "Error: a fails"


# -- lazy chunks ----------------------------------------------------------------------------------

LAZY = {
    "main.js": (
        'import { log } from "./log.js";\n'
        'log("main");\n'
        "globalThis.__open = async () => {\n"
        '  const { b } = await import("./b.js");\n'
        '  const { c } = await import("./c.js");\n'
        '  const again = await import("./log.js");\n'
        '  log(b() + c() + (again.log === log ? " same log" : " another log"));\n'
        "};\n"
    ),
    "log.js": "export function log(text) { globalThis.__log.push(text); }\n",
    "shared.js": 'import { log } from "./log.js";\nlog("shared ran");\nexport const S = "s";\n',
    "b.js": 'import { S } from "./shared.js";\nimport { log } from "./log.js";\nlog("b ran");\n'
    'export function b() { return "b" + S; }\n',
    "c.js": 'import { S } from "./shared.js";\nexport function c() { return "c" + S; }\n',
}


def test_modules_reached_only_lazily_go_into_chunks_each_module_once() -> None:
    made = split(LAZY, "main.js")
    assert bundled_modules(made.main) == ["log.js", "main.js"]
    names = {path: bundled_modules(text) for path, text in made.chunks.items()}
    # b and c each a chunk; what both reach (shared.js) a chunk of its own, not a copy in each
    assert sorted(names.values()) == [["b.js"], ["c.js"], ["shared.js"]]
    for path in made.chunks:
        assert re.fullmatch(r"chunks/(b|c|shared)-[0-9a-f]{10}\.js", path), path
    assert "export { __cb_module_0 }" in made.main  # log.js, which the chunks import
    shared = next(p for p, n in names.items() if n == ["shared.js"])
    b = next(p for p, n in names.items() if n == ["b.js"])
    assert f'from "./{shared.removeprefix("chunks/")}"' in made.chunks[b]
    assert 'from "../main.js"' in made.chunks[b]
    assert "Promise.resolve(__cb_module_0)" in made.main  # import() of a module already there
    # the hash follows the modules' text
    changed = split({**LAZY, "c.js": LAZY["c.js"] + "// more\n"}, "main.js")
    assert set(changed.chunks) - set(made.chunks) == {
        p for p in changed.chunks if p.startswith("chunks/c-")
    }


def test_lazy_chunks_run_the_same_as_separate_modules_in_chromium(origin: Origin) -> None:
    made = split(LAZY, "main.js")
    origin.files.update({"lazy/" + name: text for name, text in LAZY.items()})
    origin.files["lazy/bundle/main.js"] = made.main
    origin.files.update({"lazy/bundle/" + path: text for path, text in made.chunks.items()})
    logs = []
    for path in ("lazy/main.js", "lazy/bundle/main.js"):
        logs.append(
            origin.page.evaluate(
                """async (url) => {
                    globalThis.__log = [];
                    await import(url);
                    await globalThis.__open();
                    await globalThis.__open();  // a second opening evaluates nothing again
                    return globalThis.__log;
                }""",
                "http://bundle.test/" + path,
            )
        )
    assert logs[0] == ["main", "shared ran", "b ran", "bscs same log", "bscs same log"]
    assert logs[1] == logs[0]


def test_the_relay_serves_the_page_s_lazy_chunks_outside_the_first_load() -> None:
    served = load(WEB_DIR)
    assert served.chunks, "the page has lazily loaded features"
    first = set(served.cold_open())
    app = served.files["app.js"].body.decode()
    for path in served.chunks:
        assert re.fullmatch(r"chunks/[a-z]+-[0-9a-f]{10}\.js", path), path
        assert path not in first and path not in served.shell  # fetched when opened
        assert served.files[path].cache == IMMUTABLE
        text = served.files[path].body.decode()
        # the entry's script by its served address: the same module instance as the page's
        assert f'from "../app.js?v={served.version}"' in text
        assert f'"./{path}?v={served.version}"' in app or any(
            f'"./{path.removeprefix("chunks/")}?v={served.version}"'
            in served.files[other].body.decode()
            for other in served.chunks
        ), f"{path} is never imported"
