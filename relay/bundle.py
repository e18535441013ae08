"""The page's ES modules joined into one script: one request where a cold open made 24.

A phone on a cellular network pays a round trip for each request it cannot send side by side,
and over HTTP/1.1 it sends six at most: the page's 24 modules took 3 s of a cold open on "Fast 3G"
(bench/page_load.py). relay/static.py joins an entry module (web/app.js) and everything it
imports into one script when the relay starts, in memory: the repository keeps readable ES
modules and nobody runs a build step.

Each module becomes a function, called once, that returns its exports; its imports become
constants bound to what the imported modules' functions returned. The functions are called in
the order the browser evaluates ES modules (a module's imports first, depth first, in the order
they are written), and the bundle is still loaded as a module script (strict, deferred), so the
page runs as it does from the separate files. A module's lines keep their numbers inside its
function (an import's lines are left blank), so an error's line is found in the file.

Only the module syntax the page uses is taken; anything else is refused with ``BundleError``
(relay/static.py then serves the modules as they are):

    import { a, b as c } from "./x.js";    import * as x from "./x.js";    import "./x.js";
    export function f / export async function f / export function* f / export class C /
    export const NAME = …

Refused: default imports and exports, export lists and re-exports, ``export let`` / ``var`` (an
import here is a copy, so a value that changes would not be seen), several names in one
``export const``, an ``import()`` of anything but a string written in place, ``import.meta``,
``await`` at a module's top level, a specifier that is not a relative path to a file of the
folder, an imported name the module does not export, and import cycles.

Lazy chunks (``split``): a module the entry reaches only through ``import("./x.js")`` (a feature
the page opens rarely: memory, the report, settings, files…) is not in the entry's script: the
modules reached only that way go into chunks, ES modules of their own (``chunks/<name>-<hash>.js``,
the hash of their text), fetched when the feature is first opened. Modules are grouped by the
set of lazily imported modules that reach them, so each module is in exactly one script (a module
is evaluated once, as in the browser) and chunks import each other without a cycle. A chunk takes
what it uses of the entry's script, or of another chunk, by a static ``import`` of that script
(same address, so the same module instance); each ``import("./x.js")`` in the code becomes the
promise of x's namespace, as the browser would give it.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Final

IDENTIFIER: Final = r"[A-Za-z_$][\w$]*"

# Statements at the start of a line (module level: the page's code indents everything else).
_IMPORT_NAMED = re.compile(r'^import\s*\{([^}]*)\}\s*from\s*"([^"]+)"\s*;?', re.M)
_IMPORT_ALL = re.compile(rf'^import\s*\*\s*as\s+({IDENTIFIER})\s+from\s*"([^"]+)"\s*;?', re.M)
_IMPORT_BARE = re.compile(r'^import\s*"([^"]+)"\s*;?', re.M)
_EXPORT_DECLARATION = re.compile(
    rf"^export\s+(?=(?:async\s+function\b\s*\*?|function\b\s*\*?|class\b|const\b)\s*({IDENTIFIER}))",
    re.M,
)
_EXPORT_CONST = re.compile(rf"^export\s+const\s+{IDENTIFIER}\s*=([^;]*)", re.M)
# What is left of an import or export after the forms above: refused.
_ANY_IMPORT = re.compile(r"^\s*import\b(?!\s*\()", re.M)
_ANY_EXPORT = re.compile(r"^\s*export\b", re.M)
_DYNAMIC_IMPORT = re.compile(r"\bimport\s*\((?!\s*\"[^\"]+\"\s*\))|\bimport\.meta\b")
_LAZY_IMPORT = re.compile(r'\bimport\s*\(\s*"([^"]+)"\s*\)')
CHUNK_FOLDER: Final = "chunks"
CHUNK_HASH_LENGTH: Final = 10
# A line of the module's level (not indented) that awaits outside a one-line async function.
_TOP_LEVEL_AWAIT = re.compile(r"^(?![\s}/*])(?!.*\basync\b.*\bawait\b).*\bawait\b", re.M)


class BundleError(ValueError):
    """A module uses syntax the bundler does not take: ``str()`` names the file, line and why."""


@dataclass(frozen=True)
class Import:
    line: int  # 1-based, where the statement starts
    source: str  # the module imported, as a path in the folder
    names: tuple[tuple[str, str], ...] = ()  # (exported name, local name)
    namespace: str = ""  # `import * as x`: x


@dataclass(frozen=True)
class Module:
    """One module as the bundler reads it: its imports, its exports, its text with the import
    statements blanked out and ``export`` taken off its declarations."""

    name: str
    imports: tuple[Import, ...]
    exports: tuple[str, ...]
    body: str
    lazy: tuple[str, ...] = ()  # the modules it loads with import("…"), as paths in the folder


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _resolve(importer: str, specifier: str, files: dict[str, str], line: int) -> str:
    if not specifier.startswith(("./", "../")):
        raise BundleError(f"{importer}:{line}: {specifier!r} is not a relative path (./ or ../)")
    parts: list[str] = []
    for part in (PurePosixPath(importer).parent / specifier).parts:
        if part == "..":
            if not parts:
                raise BundleError(f"{importer}:{line}: {specifier!r} leaves the page's folder")
            parts.pop()
        elif part != ".":
            parts.append(part)
    target = "/".join(parts)
    if target not in files:
        raise BundleError(f"{importer}:{line}: {specifier!r} names no file of the page")
    return target


def _names(importer: str, line: int, listed: str) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for item in listed.split(","):
        words = item.split()
        if not words:
            continue  # a trailing comma
        if len(words) == 1:
            name = local = words[0]
        elif len(words) == 3 and words[1] == "as":
            name, local = words[0], words[2]
        else:
            raise BundleError(f"{importer}:{line}: cannot read the import {item.strip()!r}")
        for word in (name, local):
            if not re.fullmatch(IDENTIFIER, word) or word == "default":
                raise BundleError(f"{importer}:{line}: cannot import {word!r} (no default imports)")
        out.append((name, local))
    return tuple(out)


def _blank(text: str, start: int, end: int) -> str:
    """``text`` with ``[start, end)`` replaced by its newlines only (line numbers stay)."""
    return text[:start] + "\n" * text.count("\n", start, end) + text[end:]


def read_module(name: str, text: str, files: dict[str, str]) -> Module:
    """``text`` (the module ``name``) as the bundler takes it; BundleError when it cannot."""
    found = _DYNAMIC_IMPORT.search(text)
    if found:
        raise BundleError(f"{name}:{_line_of(text, found.start())}: {found[0]!r} is not bundled")
    found = _TOP_LEVEL_AWAIT.search(text)
    if found:
        raise BundleError(f"{name}:{_line_of(text, found.start())}: await at the module's level")
    lazy = tuple(
        dict.fromkeys(
            _resolve(name, match[1], files, _line_of(text, match.start()))
            for match in _LAZY_IMPORT.finditer(text)
        )
    )
    spans: list[tuple[int, int, Import]] = []
    for match in _IMPORT_NAMED.finditer(text):
        line = _line_of(text, match.start())
        source = _resolve(name, match[2], files, line)
        spans.append(
            (match.start(), match.end(), Import(line, source, _names(name, line, match[1])))
        )
    for match in _IMPORT_ALL.finditer(text):
        line = _line_of(text, match.start())
        source = _resolve(name, match[2], files, line)
        spans.append((match.start(), match.end(), Import(line, source, namespace=match[1])))
    for match in _IMPORT_BARE.finditer(text):
        line = _line_of(text, match.start())
        spans.append(
            (match.start(), match.end(), Import(line, _resolve(name, match[1], files, line)))
        )
    spans.sort(key=lambda span: span[0])
    body = text
    for start, end, _ in reversed(spans):
        body = _blank(body, start, end)
    found = _ANY_IMPORT.search(body)
    if found:
        raise BundleError(
            f"{name}:{_line_of(body, found.start())}: an import the bundler cannot read"
        )
    for match in _EXPORT_CONST.finditer(body):
        if _declares_several(match[1]):
            raise BundleError(f"{name}:{_line_of(body, match.start())}: one name per export const")
    exports = tuple(match[1] for match in _EXPORT_DECLARATION.finditer(body))
    if len(set(exports)) != len(exports):
        raise BundleError(f"{name}: a name is exported twice")
    body = _EXPORT_DECLARATION.sub("", body)
    found = _ANY_EXPORT.search(body)
    if found:
        raise BundleError(
            f"{name}:{_line_of(body, found.start())}: an export the bundler does not take "
            "(only export function / async function / class / const NAME)"
        )
    return Module(name, tuple(span[2] for span in spans), exports, body, lazy)


def _declares_several(initializer: str) -> bool:
    """Whether ``export const a = …`` goes on to declare more names (``, b = …``): a comma
    outside brackets, strings and templates before the statement's end."""
    depth = 0
    quote = ""
    escaped = False
    for char in initializer:
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\"'`":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            return True
        elif char == "\n" and depth == 0:
            return False  # the page ends statements at the line's end
    return False


def evaluation_order(modules: dict[str, Module], entry: str) -> list[str]:
    """The order a browser evaluates ``entry``'s module graph in: each module after its imports,
    depth first, in the order they are written. BundleError on a cycle."""
    order: list[str] = []
    visiting: list[str] = []

    def visit(name: str) -> None:
        if name in order:
            return
        if name in visiting:
            cycle = [*visiting[visiting.index(name) :], name]
            raise BundleError("an import cycle: " + " → ".join(cycle))
        visiting.append(name)
        for imported in modules[name].imports:
            visit(imported.source)
        visiting.pop()
        order.append(name)

    visit(entry)
    return order


@dataclass(frozen=True)
class Split:
    """An entry's script and its lazy chunks (paths in the page's folder → text)."""

    main: str
    chunks: dict[str, str] = field(default_factory=dict)


def _read_all(files: dict[str, str], entry: str) -> dict[str, Module]:
    modules: dict[str, Module] = {}
    todo = [entry]
    while todo:
        name = todo.pop()
        if name not in modules:
            modules[name] = read_module(name, files[name], files)
            todo.extend(i.source for i in modules[name].imports)
            todo.extend(modules[name].lazy)
    return modules


def _reach(modules: dict[str, Module], start: str) -> set[str]:
    """``start`` and the modules it imports statically, directly or not."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(i.source for i in modules[name].imports)
    return seen


def _relative(importer: str, target: str) -> str:
    path = posixpath.relpath(target, posixpath.dirname(importer) or ".")
    return path if path.startswith("../") else "./" + path


def _function(name: str, module: Module, variable: dict[str, str], lazy: dict[str, str]) -> str:
    bindings: list[str] = []
    for imported in module.imports:
        if imported.namespace:
            bindings.append(f"const {imported.namespace} = {variable[imported.source]};")
        elif imported.names:
            listed = ", ".join(n if n == local else f"{n}: {local}" for n, local in imported.names)
            bindings.append(f"const {{ {listed} }} = {variable[imported.source]};")
    exported = ", ".join(sorted(module.exports))  # a namespace's keys are sorted
    body = _LAZY_IMPORT.sub(
        lambda m: lazy[_resolve(name, m[1], {s: "" for s in lazy}, 0)], module.body.rstrip()
    )
    return (
        f"\n// ---- {name}\n"
        f"const {variable[name]} = (() => {{ {' '.join(bindings)}\n"
        f"{body}\n"
        f"return Object.freeze({{ __proto__: null, {exported} }});\n"
        "})();\n"
    )


def _check_names(modules: dict[str, Module]) -> None:
    for name, module in modules.items():
        for imported in module.imports:
            missing = [n for n, _ in imported.names if n not in modules[imported.source].exports]
            if missing:
                raise BundleError(
                    f"{name}:{imported.line}: {imported.source} does not export {', '.join(missing)}"
                )


def _chunk_groups(modules: dict[str, Module], main: set[str]) -> list[list[str]]:
    """The modules outside ``main``, grouped by the lazily imported modules that reach them,
    each group in evaluation order (a module after the imports it shares a group with)."""
    roots = sorted({t for m in modules.values() for t in m.lazy} - main)
    reached_by: dict[str, set[str]] = {}
    for root in roots:
        evaluation_order(modules, root)  # a cycle is refused
        for name in _reach(modules, root) - main:
            reached_by.setdefault(name, set()).add(root)
    groups: dict[frozenset[str], list[str]] = {}
    for name in sorted(reached_by):
        groups.setdefault(frozenset(reached_by[name]), []).append(name)
    out: list[list[str]] = []
    for key in sorted(groups, key=lambda k: (-len(k), sorted(k))):
        members = set(groups[key])
        inner: list[str] = []

        def visit(name: str, members: set[str] = members, inner: list[str] = inner) -> None:
            if name in inner or name not in members:
                return
            for imported in modules[name].imports:
                visit(imported.source)
            inner.append(name)

        for name in sorted(members, key=lambda n: (n not in key, n)):  # its root first
            visit(name)
        out.append(inner)
    return out


def split(files: dict[str, str], entry: str) -> Split:
    """``entry`` and every module it imports statically as one script, and the modules it
    reaches only through ``import("…")`` as chunks. BundleError when one cannot be bundled.

    A chunk's name carries a hash of its modules' text; its address on the wire also carries
    the relay's version (relay/static.py), which changes with any file."""
    modules = _read_all(files, entry)
    _check_names(modules)
    order = evaluation_order(modules, entry)
    groups = _chunk_groups(modules, set(order))
    everything = order + [name for inner in groups for name in inner]
    variable = {name: f"__cb_module_{i}" for i, name in enumerate(everything)}
    home = dict.fromkeys(order, entry)
    lazy_targets = {t for m in modules.values() for t in m.lazy}
    for inner in groups:
        digest = hashlib.sha256()
        for name in inner:
            digest.update(name.encode() + b"\0" + files[name].encode() + b"\0")
        stem = PurePosixPath(next((n for n in inner if n in lazy_targets), inner[0])).stem
        path = f"{CHUNK_FOLDER}/{stem}-{digest.hexdigest()[:CHUNK_HASH_LENGTH]}.js"
        home.update(dict.fromkeys(inner, path))
    # What each script must export: what other scripts import from it, and what import() asks.
    exported: dict[str, set[str]] = {}
    for name, module in modules.items():
        used = [i.source for i in module.imports] + list(module.lazy)
        for source in used:
            if home[source] != home[name]:
                exported.setdefault(home[source], set()).add(variable[source])

    def lazy_for(importer: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for target in modules[importer].lazy:
            if home[target] == home[importer]:
                out[target] = f"Promise.resolve({variable[target]})"
            else:
                path = _relative(home[importer], home[target])
                out[target] = f'import("{path}").then((m) => m.{variable[target]})'
        return out

    def script(path: str, inner: list[str], head: str) -> str:
        parts = [head]
        sources: dict[str, set[str]] = {}
        for name in inner:
            for imported in modules[name].imports:
                if home[imported.source] != path:
                    sources.setdefault(home[imported.source], set()).add(variable[imported.source])
        for source, names in sorted(sources.items()):
            listed = ", ".join(sorted(names))
            parts.append(f'import {{ {listed} }} from "{_relative(path, source)}";\n')
        parts.extend(_function(name, modules[name], variable, lazy_for(name)) for name in inner)
        if path in exported:
            parts.append(f"export {{ {', '.join(sorted(exported[path]))} }};\n")
        return "".join(parts)

    main = script(
        entry,
        order,
        f"// {entry} and the modules it imports, joined by the relay (relay/bundle.py).\n",
    )
    chunks = {
        home[inner[0]]: script(
            home[inner[0]],
            inner,
            f"// {', '.join(inner)}: loaded by {entry} when first opened (relay/bundle.py).\n",
        )
        for inner in groups
    }
    return Split(main, chunks)


def bundle(files: dict[str, str], entry: str) -> str:
    """``entry`` and every module it imports statically as one script (``split``'s main).

    ``files`` maps paths in the page's folder (``js/api.js``) to their text; only the modules
    ``entry`` reaches are read. BundleError when one of them cannot be bundled."""
    return split(files, entry).main
