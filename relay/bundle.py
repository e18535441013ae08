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
``export const``, dynamic ``import()``, ``import.meta``, ``await`` at a module's top level, a
specifier that is not a relative path to a file of the folder, an imported name the module does
not export, and import cycles.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
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
_DYNAMIC_IMPORT = re.compile(r"\bimport\s*\(|\bimport\.meta\b")
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
    return Module(name, tuple(span[2] for span in spans), exports, body)


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


def bundle(files: dict[str, str], entry: str) -> str:
    """``entry`` and every module it imports, directly or not, as one script.

    ``files`` maps paths in the page's folder (``js/api.js``) to their text; only the modules
    ``entry`` reaches are read. BundleError when one of them cannot be bundled."""
    modules: dict[str, Module] = {}
    todo = [entry]
    while todo:
        name = todo.pop()
        if name not in modules:
            modules[name] = read_module(name, files[name], files)
            todo.extend(i.source for i in modules[name].imports)
    order = evaluation_order(modules, entry)
    variable = {name: f"__cb_module_{i}" for i, name in enumerate(order)}
    parts = [f"// {entry} and the modules it imports, joined by the relay (relay/bundle.py).\n"]
    for name in order:
        module = modules[name]
        bindings: list[str] = []
        for imported in module.imports:
            missing = [n for n, _ in imported.names if n not in modules[imported.source].exports]
            if missing:
                raise BundleError(
                    f"{name}:{imported.line}: {imported.source} does not export {', '.join(missing)}"
                )
            if imported.namespace:
                bindings.append(f"const {imported.namespace} = {variable[imported.source]};")
            elif imported.names:
                listed = ", ".join(
                    n if n == local else f"{n}: {local}" for n, local in imported.names
                )
                bindings.append(f"const {{ {listed} }} = {variable[imported.source]};")
        exported = ", ".join(sorted(module.exports))  # a namespace's keys are sorted
        parts.append(
            f"\n// ---- {name}\n"
            f"const {variable[name]} = (() => {{ {' '.join(bindings)}\n"
            f"{module.body.rstrip()}\n"
            f"return Object.freeze({{ __proto__: null, {exported} }});\n"
            "})();\n"
        )
    return "".join(parts)
