"""Line-precise problem reporting shared by the suite and protocol validators.

A validator walks plain data loaded by `yamlsource.load_yaml` and reports each
problem at the line and column of the offending key or value.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ValidationError

from turncheck.diagnostics import Diagnostic, error, warning
from turncheck.formats import templates
from turncheck.formats.model_families import family_warnings
from turncheck.formats.suite import Metadata
from turncheck.formats.target import session_warnings
from turncheck.formats.tools import Tool, ToolChoice, ToolResults
from turncheck.formats.yamlsource import Path, Pos, Positions
from turncheck.text.suggest import did_you_mean


class Reporter:
    def __init__(self, file: str, positions: Positions) -> None:
        self.file = file
        self.positions = positions
        self.diagnostics: list[Diagnostic] = []

    def error_at(self, pos: Pos, code: str, message: str) -> None:
        self.diagnostics.append(error(self.file, pos.line, pos.column, code, message))

    def warning_at(self, pos: Pos, code: str, message: str) -> None:
        self.diagnostics.append(warning(self.file, pos.line, pos.column, code, message))

    def error_at_key(self, path: Path, code: str, message: str) -> None:
        self.error_at(self.positions.key(path), code, message)

    def error_at_value(self, path: Path, code: str, message: str) -> None:
        self.error_at(self.positions.value(path), code, message)

    def unknown_key(self, path: Path, key: str, allowed: tuple[str, ...]) -> None:
        suggestion = did_you_mean(key, allowed, f"; allowed: {', '.join(allowed)}")
        self.error_at_key((*path, key), "unknown-key", f'unknown key "{key}"{suggestion}')

    def pydantic_errors(self, path: Path, exc: ValidationError) -> None:
        for problem in exc.errors():
            loc = (*path, *problem["loc"])
            dotted = ".".join(str(part) for part in problem["loc"]) or "value"
            if problem["type"] == "extra_forbidden":
                self.error_at_key(loc, "unknown-key", f'unknown key "{problem["loc"][-1]}"')
            elif problem["type"] == "missing":
                self.error_at_value(loc[:-1], "missing-key", f'missing required key "{dotted}"')
            elif problem["type"] == "value_error" and not problem["loc"]:  # a model's own rule
                self.error_at_value(loc, "invalid-value", str(problem["ctx"]["error"]))
            else:
                self.error_at_value(loc, "invalid-value", f"{dotted}: {explain(problem)}")

    def build(self, model: type[BaseModel], data: dict[str, Any], path: Path,
              at: Pos | None = None) -> Any:
        """`model` validated from `data`, placed `at` (default: where `path`'s value starts);
        None (reported) if invalid."""
        try:
            node = model.model_validate(data)
        except ValidationError as exc:
            self.pydantic_errors(path, exc)
            return None
        pos = at or self.positions.value(path)
        node.at(pos.line, pos.column)  # type: ignore[attr-defined]
        return node

    def errors_since(self, before: int) -> bool:
        return any(d.is_error for d in self.diagnostics[before:])


def explain(problem: Any) -> str:
    """pydantic's message, plus the YAML pitfall when a string came out as another type."""
    value = problem.get("input")
    if problem["type"] == "string_type" and isinstance(value, bool | int | float):
        kind = "a boolean" if isinstance(value, bool) else "a number"
        return f'expected a string, but YAML read this value as {kind}; quote it, e.g. "yes"'
    return str(problem["msg"])


class SuiteReporter(Reporter):
    """A `Reporter` that also knows the metadata block, its tools and `{{var()}}` templates."""

    declared_tools: set[str] | None = None
    """Names of the metadata's tools (None: the suite declares none)."""

    def templates_in(self, path: Path, text: str) -> None:
        problem = templates.check_syntax(text)
        if problem is not None:
            self.error_at_value(path, "template-syntax", str(problem))

    def no_templates_in(self, path: Path, value: Any) -> None:
        """A `{{var()}}`/`{{secret()}}` in a field that is never rendered is an error."""
        if isinstance(value, str):
            if templates.has_template(value):
                keys = [str(part) for part in path if isinstance(part, str)]
                key = ".".join(keys[-2:]) if keys[-2:-1] == ["vars"] else keys[-1]
                self.error_at_value(path, "template-not-allowed",
                                    templates.not_allowed_message(key))
        elif isinstance(value, dict | list):
            self.templated_fields(path, value, ())

    def templated_fields(self, path: Path, value: Any, rendered: tuple[str, ...]) -> None:
        """Check templates where `rendered` keys hold them; reject them everywhere else.

        Every string of every suite passes through here, so strings without `{{` (nearly
        all) are skipped inline, a mapping or list is looked into only when its text (its
        repr, which keeps every `{` of its strings) has one, and a path is built only for
        what is looked into.
        """
        if isinstance(value, dict):
            children: Any = value.items()
        elif isinstance(value, list):
            children = enumerate(value)
        else:
            self.no_templates_in(path, value)
            return
        for part, item in children:
            if isinstance(item, str):
                if "{{" not in item:
                    continue
                if part in rendered:
                    self.templates_in((*path, part), item)
                else:
                    self.no_templates_in((*path, part), item)
            elif isinstance(item, list) and part in rendered:  # a list of rendered texts
                for index, text in enumerate(item):
                    if isinstance(text, str) and "{{" in text:
                        self.templates_in((*path, part, index), text)
            elif isinstance(item, dict | list) and "{{" in repr(item):
                self.templated_fields((*path, part), item, rendered)

    def metadata(self, raw: Any, model: type[Metadata] = Metadata) -> Metadata | None:
        path: Path = ("metadata",)
        if not isinstance(raw, dict):
            what = "missing" if raw is None else "must be a mapping"
            self.error_at_value(path, "invalid-metadata", f"metadata {what} (needs name and model)")
            return None
        for key in raw:
            if key not in model.model_fields:
                self.warning_at(
                    self.positions.key((*path, key)),
                    "unknown-metadata-key",
                    f'unknown metadata key "{key}" is ignored'
                    + did_you_mean(str(key), model.model_fields),
                )
        known = {k: v for k, v in raw.items() if k in model.model_fields}
        self.templated_fields(path, {k: v for k, v in known.items() if k != "messages"},
                              templates.METADATA_FIELDS)
        self.templated_fields((*path, "messages"), known.get("messages"),
                              templates.MESSAGE_FIELDS)
        try:
            metadata = model.model_validate(known)
        except ValidationError as exc:
            self.pydantic_errors(path, exc)
            return None
        metadata.remember_lines({key: self.positions.value((*path, key)).line
                                 for key in (*templates.METADATA_FIELDS, "messages")
                                 if key in known})
        for key, message in family_warnings(metadata):
            self.warning_at(self.positions.value((*path, key)), "model-family", message)
        for message in session_warnings(getattr(metadata, "target", None)):
            self.warning_at(self.positions.value((*path, "target", "session")),
                            "unseen-session", message)
        return metadata

    # -- tools ---------------------------------------------------------------

    def metadata_tools(self, metadata: Metadata) -> bool:
        """Check the metadata's tools (remembering their names); False when they are invalid:
        no eval may then run."""
        before = len(self.diagnostics)
        self.declared_tools = self.tool_setup(("metadata",), metadata.tools,
                                              metadata.tool_results, metadata.tool_choice)
        return not self.errors_since(before)

    def tool_setup(self, path: Path, tools: list[Tool] | None,
                   results: ToolResults | None, choice: ToolChoice | None) -> set[str] | None:
        """Check one tool declaration (metadata's or an eval's); the tool names it declares."""
        names = None if tools is None else self.tool_names(path, tools)
        self.scripted(path, results, choice, names)
        return names

    def tool_names(self, path: Path, tools: list[Tool]) -> set[str]:
        names: dict[str, int] = {}
        for index, tool in enumerate(tools):
            if tool.name in names:
                first = self.positions.value(
                    (*path, "tools", names[tool.name], "function", "name")).line
                self.error_at_value((*path, "tools", index, "function", "name"),
                                    "duplicate-tool-name", f'duplicate tool name "{tool.name}" '
                                    f"(first declared at line {first})")
            names.setdefault(tool.name, index)
        return set(names)

    def scripted(self, path: Path, results: ToolResults | None, choice: ToolChoice | None,
                 names: set[str] | None) -> None:
        """`tool_results` and a forced `tool_choice` must name declared tools."""
        if names is None:
            for key, value in (("tool_results", results), ("tool_choice", choice)):
                if value is not None:
                    self.error_at_key((*path, key), "no-tools",
                                      f"{key} is set, but no tools are declared")
            return
        for name in results or {}:
            if name not in names:
                self.unknown_tool((*path, "tool_results", name), name, names, key=True)
        if not isinstance(choice, str) and choice is not None \
                and choice.function.name not in names:
            self.unknown_tool((*path, "tool_choice", "function", "name"),
                              choice.function.name, names)

    def unknown_tool(self, path: Path, name: str, declared: Iterable[str],
                     key: bool = False) -> None:
        known = sorted(declared)
        suggestion = did_you_mean(name, known, f"; declared: {', '.join(known) or 'none'}")
        report = self.error_at_key if key else self.error_at_value
        report(path, "unknown-tool", f'unknown tool "{name}"{suggestion}')
