"""File references in suites: `{file: prompts/support.md}` instead of inline text.

A prompt-bearing field (`system_prompt`, `prompt`, follow-up `prompt`, protocol turn and
variant prompts, `llm_judge.criteria`, `judge_scale.rubric`, `semantic.expected`) may
hold `{file: PATH}`; the file's text replaces the reference before the suite is
validated. `metadata.messages: {file: conversation.json}` takes the opening conversation
from a messages file (JSON or YAML, OpenAI messages format; a message's `content` may
itself be `{file: …}`, and an entry `{file: other.json}` splices another messages
file), and `metadata.vars: {file: vars.yaml}` takes the template variables from a
data file (JSON, YAML or TOML mapping of names to strings). `tools` (the metadata's or
an eval's) may be `{file: tools.json}`, a JSON or YAML file holding one tool or a list
of them, and so may each entry of a `tools` list.

PATH is relative to the directory of the file that holds the reference and must stay
inside the repository root (no absolute paths, no `..` leaving it, no symlink whose
target leaves it). Every file read is recorded with its SHA-256, so change detection
and cassette checks know what a suite depends on. A problem is a diagnostic at the
reference's line and column; the suite is then not run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from pathlib import PurePosixPath
from typing import Any

from turncheck.diagnostics import Diagnostic, error
from turncheck.formats.files import FileRefused, read_bytes_bounded
from turncheck.formats.nesting import json_structure_problem, toml_structure_problem
from turncheck.formats.yamlsource import Path, Positions, load_yaml

MAX_REFERENCED_BYTES = 1024 * 1024
"""Largest referenced file; a prompt is far smaller, a bigger file is a mistake or an attack."""
MAX_REFERENCED_FILES = 200
"""Most files one suite may read through references (chains included)."""

TEXT_KEYS = frozenset({"prompt", "system_prompt", "criteria", "rubric"})
"""Keys whose value, anywhere in a suite, may be a file reference."""
TEXT_KEYS_UNDER = {"semantic": frozenset({"expected"})}
"""Keys that take a reference only inside the named parent (list_f1's `expected` does not)."""
MESSAGES_SUFFIXES = (".json", ".yaml", ".yml")
VARS_SUFFIXES = (".json", ".yaml", ".yml", ".toml")
UNRESOLVED = "(unresolved file reference)"


@dataclass(frozen=True)
class Reference:
    """A file a suite depends on: its path relative to the repository root."""

    path: str
    digest: str | None
    """SHA-256 of the content read, None when it could not be read."""
    texts: tuple[str, ...] = field(default=(), repr=False, compare=False)
    """The pieces of text this file puts into requests (a prompt file's whole text)."""


@dataclass
class Resolved:
    data: Any
    references: list[Reference] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)


class ReferenceProblem(Exception):
    """A reference that cannot be followed; the message is for the user."""


def find_root(start: FsPath) -> FsPath:
    """The repository root above `start` (the nearest directory holding `.git`), else `start`."""
    start = start.resolve()
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start


def is_reference(value: Any) -> bool:
    return isinstance(value, dict) and list(value) == ["file"]


def resolve_references(data: Any, positions: Positions, file: str, directory: FsPath,
                       root: FsPath | None = None) -> Resolved:
    """`data` (a parsed suite) with every file reference replaced by what it names."""
    resolver = _Resolver(file, positions, directory, root or find_root(directory))
    resolved = resolver.walk(data, ())
    return Resolved(resolved, list(resolver.references.values()), resolver.diagnostics)


class _Resolver:
    def __init__(self, file: str, positions: Positions, directory: FsPath, root: FsPath) -> None:
        self.file = file
        self.positions = positions
        self.directory = directory.resolve()
        self.root = root.resolve()
        self.references: dict[str, Reference] = {}
        self.diagnostics: list[Diagnostic] = []
        self._texts: dict[str, str] = {}
        """Each file's text, read once: a prompt file every eval references is one string."""

    # -- walking the suite -------------------------------------------------------------

    def walk(self, value: Any, path: Path) -> Any:
        if isinstance(value, list):
            return [self.walk(item, (*path, index)) for index, item in enumerate(value)]
        if not isinstance(value, dict):
            return value
        parent = path[-1] if path else None
        text_keys = TEXT_KEYS | TEXT_KEYS_UNDER.get(str(parent), frozenset())
        out: dict[str, Any] = {}
        for key, item in value.items():
            where = (*path, key)
            if is_reference(item) and key in text_keys:
                out[key] = self.guarded(where, UNRESOLVED, self.text, item, self.directory, [])
            elif path == ("metadata",) and key == "messages" and is_reference(item):
                out[key] = self.guarded(where, [], self.messages, item, self.directory, [])
            elif path == ("metadata",) and key == "messages" and isinstance(item, list):
                out[key] = self.guarded(where, [], self.message_list, item, self.directory, [],
                                        "metadata.messages")
            elif key == "tools" and _declares_tools(path) and \
                    (is_reference(item) or isinstance(item, list)):
                out[key] = self.guarded(where, [], self.tools, item, self.directory)
            elif path == ("metadata",) and key == "vars" and is_reference(item):
                out[key] = self.guarded(where, {}, self.variables, item, self.directory)
            elif path == () and key == "cases" and is_reference(item):
                self.note(item)
                out[key] = item
            else:
                out[key] = self.walk(item, where)
        return out

    def guarded(self, where: Path, fallback: Any, follow: Callable[..., Any], *args: Any) -> Any:
        """What `follow` returns, or `fallback` (with a diagnostic) when it cannot be read.

        The fallback keeps the rest of the file validating normally; the suite is not run.
        """
        try:
            return follow(*args)
        except ReferenceProblem as problem:
            pos = self.positions.value(where)
            self.diagnostics.append(error(self.file, pos.line, pos.column, "invalid-reference",
                                          str(problem)))
            return fallback

    # -- following one reference -------------------------------------------------------

    def locate(self, value: Any, directory: FsPath, chain: list[str]) -> tuple[FsPath, str]:
        """The real location of a `{file: …}` value and its root-relative name."""
        name = value.get("file") if isinstance(value, dict) else None
        if not isinstance(name, str) or not name.strip():
            raise ReferenceProblem("a file reference is {file: PATH} with a non-empty PATH")
        pure = PurePosixPath(name)
        if pure.is_absolute() or "\\" in name or "\0" in name:
            raise ReferenceProblem(f'"{name}": a referenced file must be a relative path '
                                   "(relative to the file that references it)")
        target = FsPath(os.path.normpath(directory / pure))
        relative = self._inside_root(target, name)
        real = target.resolve()
        real_relative = self._inside_root(real, name, via_link=True)
        if real_relative in chain:
            cycle = " → ".join([*chain[chain.index(real_relative):], real_relative])
            raise ReferenceProblem(f"reference cycle: {cycle}")
        if len(self.references) >= MAX_REFERENCED_FILES:
            raise ReferenceProblem(f"more than {MAX_REFERENCED_FILES} referenced files")
        self.references.setdefault(relative, Reference(relative, None))
        return real, relative

    def _inside_root(self, target: FsPath, name: str, via_link: bool = False) -> str:
        try:
            return target.relative_to(self.root).as_posix()
        except ValueError:
            how = "a symlink that leads" if via_link else "a path"
            raise ReferenceProblem(f'"{name}" is {how} outside the repository '
                                   f"({self.root})") from None

    def note(self, value: Any) -> None:
        """Record a file another loader reads (a protocol's cases file); it reports problems."""
        with contextlib.suppress(ReferenceProblem):
            self.read(value, self.directory, [])

    def read(self, value: Any, directory: FsPath, chain: list[str]) -> tuple[str, FsPath, str]:
        real, relative = self.locate(value, directory, chain)
        text = self._texts.get(relative)
        if text is None:
            text = self._texts[relative] = read_bounded_text(real, relative)
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            self.references[relative] = Reference(relative, digest)
        return text, real, relative

    def text(self, value: Any, directory: FsPath, chain: list[str]) -> str:
        """The file's text; one final line break (which editors add) is not part of it."""
        text, _, relative = self.read(value, directory, chain)
        key = f"{relative}\0text"  # the same string for every reference, not a copy each
        if key in self._texts:
            return self._texts[key]
        text = self._texts[key] = text.removesuffix("\n").removesuffix("\r")
        known = self.references[relative]
        if text.strip():
            self.references[relative] = Reference(known.path, known.digest, (text.strip(),))
        return text

    def messages(self, value: Any, directory: FsPath, chain: list[str]) -> list[dict[str, str]]:
        text, real, relative = self.read(value, directory, chain)
        if real.suffix not in MESSAGES_SUFFIXES:
            raise ReferenceProblem(f"{relative}: a messages file is .json, .yaml or .yml")
        data = parse_data(text, relative)
        return self.message_list(data, real.parent, [*chain, relative], relative)

    def message_list(self, data: Any, directory: FsPath, chain: list[str],
                     where: str) -> list[dict[str, str]]:
        if not isinstance(data, list) or not data:
            raise ReferenceProblem(f"{where}: expected a non-empty list of "
                                   "{role, content} messages")
        out: list[dict[str, str]] = []
        for index, entry in enumerate(data):
            if is_reference(entry):
                out += self.messages(entry, directory, chain)
                continue
            out.append(self.message(entry, directory, chain, f"{where} message {index + 1}"))
        return out

    def message(self, entry: Any, directory: FsPath, chain: list[str],
                where: str) -> dict[str, str]:
        if not isinstance(entry, dict) or set(entry) != {"role", "content"}:
            raise ReferenceProblem(f"{where}: a message is {{role, content}} (or {{file: …}} "
                                   "to include another messages file)")
        role, content = entry["role"], entry["content"]
        if is_reference(content):
            content = self.text(content, directory, chain)
        if not isinstance(role, str) or not role or not isinstance(content, str) or not content:
            raise ReferenceProblem(f"{where}: role and content must be non-empty strings")
        return {"role": role, "content": content}

    def tools(self, value: Any, directory: FsPath) -> Any:
        """`tools: {file: PATH}` (a JSON/YAML list of tools, or one tool), or a list whose
        entries may each be `{file: PATH}` (spliced in the same way)."""
        if not is_reference(value):
            out: list[Any] = []
            for entry in value:
                out += self.tools(entry, directory) if is_reference(entry) else [entry]
            return out
        text, real, relative = self.read(value, directory, [])
        if real.suffix not in MESSAGES_SUFFIXES:
            raise ReferenceProblem(f"{relative}: a tools file is .json, .yaml or .yml")
        data = parse_data(text, relative)
        if isinstance(data, dict):
            return [data]
        if not isinstance(data, list) or not data:
            raise ReferenceProblem(f"{relative}: expected a tool or a non-empty list of tools")
        return data

    def variables(self, value: Any, directory: FsPath) -> dict[str, str]:
        text, real, relative = self.read(value, directory, [])
        if real.suffix not in VARS_SUFFIXES:
            raise ReferenceProblem(f"{relative}: a vars file is .json, .yaml, .yml or .toml")
        data = parse_data(text, relative, toml=real.suffix == ".toml")
        if not isinstance(data, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
            raise ReferenceProblem(f"{relative}: expected a mapping of names to strings")
        return data


def _declares_tools(path: Path) -> bool:
    """`metadata.tools` and an eval's `tools` take `{file: …}`."""
    return path == ("metadata",) or (len(path) == 2 and path[0] == "evals")


def read_text_reference(value: Any, directory: FsPath,
                        root: FsPath | None = None) -> tuple[str, Reference]:
    """The text a `{file: …}` value names, for loaders without YAML positions (TOML)."""
    resolver = _Resolver("", Positions(), directory, root or find_root(directory))
    text = resolver.text(value, resolver.directory, [])
    return text, next(iter(resolver.references.values()))


def read_bounded_text(real: FsPath, shown: str) -> str:
    """A regular file's UTF-8 text, refusing special files and anything over the cap.

    `real` is already resolved and checked to be inside the repository."""
    try:
        content = read_bytes_bounded(real, root=real.parent, limit=MAX_REFERENCED_BYTES)
    except FileNotFoundError:
        raise ReferenceProblem(f'"{shown}" does not exist') from None
    except FileRefused as exc:
        if exc.code == "file-too-large":
            raise ReferenceProblem(
                f'"{shown}" is larger than {MAX_REFERENCED_BYTES:,} bytes') from None
        if exc.code == "not-a-regular-file":
            raise ReferenceProblem(f'"{shown}" is not a regular file') from None
        raise ReferenceProblem(f'cannot read "{shown}": {exc.message}') from None
    except OSError as exc:
        raise ReferenceProblem(f'cannot read "{shown}": {exc.strerror}') from None
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        raise ReferenceProblem(f'"{shown}" is not UTF-8 text') from None


def parse_data(text: str, shown: str, toml: bool = False) -> Any:
    json_text = not toml and shown.endswith(".json")
    if toml or json_text:
        scan = toml_structure_problem if toml else json_structure_problem
        problem = scan(text)
        if problem is not None:
            raise ReferenceProblem(f"{shown}:{problem.line}:{problem.column}: {problem.message}")
    if toml:
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ReferenceProblem(f"{shown}: invalid TOML: {exc}") from None
    if json_text:
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ReferenceProblem(f"{shown}:{exc.lineno}:{exc.colno}: invalid JSON: "
                                   f"{exc.msg}") from None
    loaded = load_yaml(text, shown)
    if loaded.diagnostics:
        first = loaded.diagnostics[0]
        raise ReferenceProblem(f"{shown}:{first.line}:{first.column}: {first.message}")
    return loaded.data


def referenced_paths(suite: FsPath, root: FsPath) -> Iterator[Reference]:
    """The files `suite` references, directly or through other referenced files.

    Never raises: an unreadable suite references nothing (validation reports it).
    """
    try:
        text = read_bounded_text(suite.resolve(), suite.name)
    except ReferenceProblem:
        return
    loaded = load_yaml(text, suite.name)
    if loaded.data is None:
        return
    yield from resolve_references(loaded.data, loaded.positions, suite.name, suite.parent,
                                  root).references


def watch_globs(suite: FsPath) -> list[str]:
    """`metadata.watch` of a suite: globs (relative to the repository root) it also depends on."""
    try:
        text = read_bounded_text(suite.resolve(), suite.name)
    except ReferenceProblem:
        return []
    data = load_yaml(text, suite.name).data
    metadata = data.get("metadata") if isinstance(data, dict) else None
    watch = metadata.get("watch") if isinstance(metadata, dict) else None
    if not isinstance(watch, list):
        return []
    return [glob for glob in watch if isinstance(glob, str) and glob]
