"""Load and validate suite files with line-precise diagnostics.

The grammar (which mapping is a check, an `or` group or a follow-up) is
dispatched here by hand so that every error names the offending key at its
line and column; each node's own fields are then validated by its pydantic
model. An invalid eval is reported and skipped; the others survive.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import TYPE_CHECKING, Any

from turncheck.diagnostics import Diagnostic, error
from turncheck.formats import templates
from turncheck.formats.files import read_diagnostic, read_text_bounded
from turncheck.formats.references import Reference, resolve_references
from turncheck.formats.reporting import SuiteReporter
from turncheck.formats.suite import (
    APP_CHECK_TYPES,
    CHECK_TYPES,
    EVAL_FORMS,
    MAX_DEPTH,
    MAX_TURNS,
    Check,
    CheckList,
    Eval,
    FollowUp,
    Item,
    MaxToolCallsCheck,
    NeverCalledCheck,
    NoToolCallCheck,
    OrGroup,
    SimulatedUser,
    Suite,
    ToolCallCheck,
    ToolOrderCheck,
    ToolSequenceCheck,
    Turn,
    check_type,
    level_items,
)
from turncheck.formats.yamlsource import LoadedYaml, Path, Positions, load_yaml
from turncheck.gc_pause import gc_paused

if TYPE_CHECKING:
    # Loaded only for protocol suites (Jinja and their models: a third of `validate`'s
    # start-up for a plain suite).
    from turncheck.formats.protocol import ProtocolSuite

TOP_LEVEL_KEYS = ("metadata", "evals")
EVAL_KEYS = ("name", "prompt", "checks", "turns", "tools", "tool_choice", "tool_results",
             "target", "user", "success", "each_turn", "review")
TURN_KEYS = ("prompt", "checks")
SIMULATED_KEYS = ("success", "each_turn")
"""Check lists of an eval with a simulated user (no follow-ups: nothing is sent on failure)."""
TOOL_KEYS = ("tools", "tool_choice", "tool_results")


@dataclass
class SuiteFile:
    """The result of loading one suite file: the valid part and every problem."""

    path: str
    suite: Suite | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    location: FsPath | None = None
    """Where the file really is, when that differs from `path` (a base-commit copy)."""
    protocol: ProtocolSuite | None = None
    """Set instead of `suite` for a protocol suite (top-level `turns`; docs/protocols.md)."""
    references: list[Reference] = field(default_factory=list)
    """Files the suite's text comes from (`{file: …}` references), root-relative."""

    @property
    def source(self) -> FsPath:
        return self.location or FsPath(self.path)

    @property
    def has_errors(self) -> bool:
        return any(d.is_error for d in self.diagnostics)


def validate_max_depth(max_depth: int) -> int:
    if not 0 <= max_depth <= MAX_DEPTH:
        raise ValueError(f"max depth must be between 0 and {MAX_DEPTH}, got {max_depth}")
    return max_depth


class _SuiteValidator(SuiteReporter):
    def __init__(self, file: str, positions: Positions, max_depth: int) -> None:
        super().__init__(file, positions)
        self.max_depth = max_depth
        self.metadata_valid = False
        self.has_target = False
        self.simulator_model = False
        """The metadata pins a simulator model (`metadata.simulator.model`)."""
        self.unwalked_tool_or_app_checks = 0
        """Tool and app checks built since an eval's checks were last walked for them."""
        """An app target reports the tool calls it ran: its tool checks need no declaration."""

    # -- suite ---------------------------------------------------------------

    def suite(self, data: Any) -> Suite | None:
        if data is None:
            self.error_at_value((), "empty-file", "empty suite file: expected metadata and evals")
            return None
        if not isinstance(data, dict):
            self.error_at_value((), "invalid-structure", "a suite file must be a mapping")
            return None
        for key in data:
            if key not in TOP_LEVEL_KEYS:
                self.unknown_key((), key, TOP_LEVEL_KEYS)
        metadata = self.metadata(data.get("metadata"))
        self.metadata_valid = metadata is not None
        self.has_target = metadata is not None and metadata.target is not None
        self.simulator_model = metadata is not None and metadata.simulator is not None \
            and metadata.simulator.model is not None
        tools_ok = metadata is not None and self.metadata_tools(metadata)
        evals = self.evals(data.get("evals"))
        if metadata is None or not evals or not tools_ok:
            return None
        return Suite.model_construct(metadata=metadata, evals=evals)

    def evals(self, raw: Any) -> list[Eval]:
        path: Path = ("evals",)
        if not isinstance(raw, list) or not raw:
            self.error_at_value(path, "invalid-evals", "evals must be a non-empty list")
            return []
        evals: list[Eval] = []
        seen_names: dict[str, int] = {}
        for index, item in enumerate(raw):
            before = len(self.diagnostics)
            built = self.eval((*path, index), item)
            if built is None or any(d.is_error for d in self.diagnostics[before:]):
                continue
            if not self._unique_name(built, seen_names, (*path, index)):
                continue
            evals.append(built)
        return evals

    def _unique_name(self, built: Eval, seen: dict[str, int], path: Path) -> bool:
        base = built.name or " ".join(built.first_prompt.split())
        if built.name is not None and base in seen:
            self.error_at_value(
                (*path, "name"),
                "duplicate-eval-name",
                f'duplicate eval name "{base}" (first used at line {seen[base]})',
            )
            return False
        name, counter = base, 1
        while name in seen:
            counter += 1
            name = f"{base} #{counter}"
        seen[name] = self.positions.value((*path, "name")).line if built.name else built.line
        built.named(name)
        return True

    def eval(self, path: Path, raw: Any) -> Eval | None:
        if not isinstance(raw, dict):
            self.error_at_value(
                path, "invalid-eval", "an eval must be a mapping with prompt and checks"
            )
            return None
        for key in raw:
            if key not in EVAL_KEYS:
                self.unknown_key(path, key, EVAL_KEYS)
        self.templated_fields(path, raw, templates.EVAL_FIELDS)
        if "user" in raw:
            return self.simulated_eval(path, raw)
        for key in ("success", "each_turn", "review"):
            if key in raw:
                self.error_at_value((*path, key), "eval-form",
                                    f'"{key}" needs "user" (a simulated user): {EVAL_FORMS}')
        if "turns" in raw:
            return self.scripted_eval(path, raw)
        missing = next((key for key in ("prompt", "checks") if key not in raw), None)
        if missing is not None:
            self.error_at_value(path, "missing-key", f'missing required key "{missing}"'
                                ' (or list the eval\'s "turns")')
            return None
        checks = self.check_list((*path, "checks"), raw["checks"], depth=0)
        if checks is None:
            return None
        fields = {k: v for k, v in raw.items() if k in ("name", "prompt", "target", *TOOL_KEYS)}
        # An eval is placed at its prompt.
        built: Eval | None = self.build(Eval, {**fields, "checks": checks}, path,
                                        at=self.positions.value((*path, "prompt")))
        if built is not None:
            self.eval_tools(path, built)
        return built

    def scripted_eval(self, path: Path, raw: dict[str, Any]) -> Eval | None:
        """An eval of scripted `turns`: one form only, each turn a prompt and its checks."""
        mixed = [key for key in ("prompt", "checks") if key in raw]
        if mixed:
            self.error_at_key((*path, mixed[0]), "prompt-and-turns",
                              f'an eval has either "prompt" and "checks" or "turns", not both; '
                              f'move "{mixed[0]}" into a turn')
            return None
        turns_path = (*path, "turns")
        listed = raw["turns"]
        if not isinstance(listed, list) or not listed:
            self.error_at_value(turns_path, "invalid-turns",
                                "turns must be a non-empty list of {prompt, checks}")
            return None
        if len(listed) > MAX_TURNS:
            self.error_at_value((*turns_path, MAX_TURNS), "too-many-turns",
                                f"an eval has at most {MAX_TURNS} turns, got {len(listed)}")
            return None
        turns = [self.turn((*turns_path, index), item) for index, item in enumerate(listed)]
        if any(turn is None for turn in turns):
            return None
        fields = {k: v for k, v in raw.items() if k in ("name", "target", *TOOL_KEYS)}
        # Placed at its first turn's prompt, as a one-prompt eval is at its prompt.
        built: Eval | None = self.build(Eval, {**fields, "turns": turns}, path,
                                        at=self.positions.value((*turns_path, 0, "prompt")))
        if built is not None:
            self.eval_tools(path, built)
        return built

    def simulated_eval(self, path: Path, raw: dict[str, Any]) -> Eval | None:
        """An eval whose user is simulated: `user`, `success`, optional `each_turn`."""
        for key in ("prompt", "checks", "turns"):
            if key in raw:
                self.error_at_value((*path, key), "eval-form",
                                    f'"{key}" cannot be used with "user": {EVAL_FORMS}')
        if "success" not in raw:
            self.error_at_value(path, "missing-key",
                                'missing required key "success" (an eval with "user" is '
                                "judged by its success checks when the conversation ends)")
        lists: dict[str, CheckList] = {}
        for key in SIMULATED_KEYS:
            if key in raw:
                built_list = self.check_list((*path, key), raw[key], depth=0)
                if built_list is None:
                    return None
                lists[key] = built_list
                self._no_follow_ups((*path, key), built_list)
        user = raw["user"]
        if not isinstance(user, dict):
            self.error_at_value((*path, "user"), "invalid-user",
                                "user must be a mapping (persona, goal, max_turns, model …)")
            return None
        simulated = self.build(SimulatedUser, user, (*path, "user"))
        if simulated is None or "success" not in lists:
            return None
        if simulated.model is None and not self.simulator_model and self.metadata_valid:
            self.error_at_value((*path, "user"), "no-simulator-model",
                                "a simulated user needs its model: set metadata.simulator.model "
                                "(pinned for the suite) or this user's `model`")
            return None
        fields = {k: v for k, v in raw.items()
                  if k in ("name", "target", "review", *TOOL_KEYS)}
        built: Eval | None = self.build(Eval, {**fields, **lists, "user": simulated}, path,
                                        at=self.positions.value((*path, "user")))
        if built is not None:
            self.eval_tools(path, built)
        return built

    def turn(self, path: Path, raw: Any) -> Turn | None:
        if not isinstance(raw, dict):
            self.error_at_value(path, "invalid-turn",
                                "a turn must be a mapping with prompt and checks")
            return None
        for key in raw:
            if key not in TURN_KEYS:
                self.unknown_key(path, key, TURN_KEYS)
                return None
        missing = next((key for key in TURN_KEYS if key not in raw), None)
        if missing is not None:
            self.error_at_value(path, "missing-key", f'a turn needs "{missing}"')
            return None
        checks = self.check_list((*path, "checks"), raw["checks"], depth=0)
        if checks is None:
            return None
        built: Turn | None = self.build(Turn, {**raw, "checks": checks}, path,
                                        at=self.positions.value((*path, "prompt")))
        return built

    def _no_follow_ups(self, path: Path, checks: CheckList) -> None:
        items, _ = level_items(checks)
        for index, item in enumerate(items):
            if isinstance(item, FollowUp) or (
                    not isinstance(item, OrGroup) and item.follow_up is not None):
                self.error_at_value((*path, index), "no-follow-up",
                                    "a simulated user's checks take no follow-up: the "
                                    "simulator writes the next message")

    # -- tools ---------------------------------------------------------------

    def eval_tools(self, path: Path, built: Eval) -> None:
        """An eval's own tools override the metadata's; its tool checks must name them."""
        if built.tools is not None:
            declared = self.tool_setup(path, built.tools, built.tool_results, built.tool_choice)
        elif not self.metadata_valid:
            return  # what the metadata declares is unknown: its own errors are reported
        else:
            declared = self.declared_tools
            self.scripted(path, built.tool_results, built.tool_choice, declared)
        if not self.unwalked_tool_or_app_checks:
            return  # the eval has none: most evals, and walking their checks costs
        self.unwalked_tool_or_app_checks = 0
        # One walk of the eval's checks serves both questions.
        checks = list(_eval_checks(path, built, _is_tool_or_app_check))
        self.app_checks(built, checks)
        for check_path, check in checks:
            if not _is_tool_check(check):
                continue
            for name, where in _named_tools(check_path, check):
                if name == "*" and isinstance(check, NoToolCallCheck):
                    continue
                if declared is None and (self.has_target or built.target is not None):
                    continue
                if declared is None:
                    self.error_at_value(where, "no-tools",
                                        f'"{check_type(check)}" checks a tool call, but '
                                        "no tools are declared (metadata.tools or the eval's "
                                        "tools)")
                elif name not in declared:
                    self.unknown_tool(where, name, declared)

    def app_checks(self, built: Eval, checks: list[tuple[Path, Check]]) -> None:
        """Checks on what an app sent stand only where the conversation is with an app."""
        if self.has_target or built.target is not None:
            return
        for check_path, check in checks:
            if not _is_app_check(check):
                continue
            kind = check_type(check)
            key = "source" if kind not in APP_CHECK_TYPES else kind
            self.error_at_key((*check_path, key), "app-check-without-app",
                              f'"{kind}"{" with source: app" if key == "source" else ""} '
                              "checks the model calls an app target makes, but this "
                              "suite's conversations are with a model, not an app (add a "
                              "`target` to the metadata or the eval; docs/targets.md)")

    # -- checks --------------------------------------------------------------

    def check_list(self, path: Path, raw: Any, depth: int) -> CheckList | None:
        if isinstance(raw, dict):
            extra = [key for key in raw if key != "or"]
            if "or" not in raw or extra:
                self.error_at_value(
                    path,
                    "invalid-checks",
                    "checks must be a list of checks or a mapping {or: [...]}",
                )
                return None
            return self.or_group(path, raw, depth, whole_level=True)
        if not isinstance(raw, list) or not raw:
            self.error_at_value(path, "invalid-checks", "checks must be a non-empty list")
            return None
        items = self.items(path, raw, depth)
        return items if items is not None else None

    def items(self, path: Path, raw: list[Any], depth: int) -> list[Item] | None:
        built: list[Item] = []
        standalone: int | None = None  # index of the first standalone follow-up
        ok = True
        for index, raw_item in enumerate(raw):
            if _is_standalone_follow_up(raw_item):
                if standalone is not None:
                    first_line = self.positions.key((*path, standalone, "prompt")).line
                    self.error_at_key(
                        (*path, index, "prompt"),
                        "multiple-follow-ups",
                        "only one standalone follow-up is allowed per level "
                        f"(the first is at line {first_line})",
                    )
                    ok = False
                    continue
                standalone = index
            item = self.item((*path, index), raw_item, depth)
            if item is None:
                ok = False
                continue
            built.append(item)
        return built if ok else None

    def item(self, path: Path, raw: Any, depth: int) -> Item | None:
        if not isinstance(raw, dict):
            self.error_at_value(
                path,
                "invalid-check",
                f'a check must be a mapping such as match: "*x*", got {type(raw).__name__}',
            )
            return None
        kinds = [key for key in raw if key in CHECK_TYPES]
        if len(kinds) > 1:
            self.error_at_key(
                (*path, kinds[1]),
                "multiple-check-types",
                f'one item holds several checks ("{kinds[0]}" and "{kinds[1]}"); '
                "give each check its own list item",
            )
            return None
        if kinds:
            return self.check(path, raw, kinds[0], depth)
        if "or" in raw:
            for key in raw:
                if key != "or":
                    self.unknown_key(path, key, ("or",))
            return None if len(raw) > 1 else self.or_group(path, raw, depth, whole_level=False)
        if "prompt" in raw:
            return self.follow_up(path, raw, depth)
        self.unknown_check(path, raw)
        return None

    def unknown_check(self, path: Path, raw: dict[str, Any]) -> None:
        allowed = (*CHECK_TYPES, "or", "prompt")
        keys = list(raw)
        if keys:
            self.unknown_key(path, keys[0], allowed)
        else:
            self.error_at_value(path, "invalid-check", "empty check")

    def check(self, path: Path, raw: dict[str, Any], kind: str, depth: int) -> Check | None:
        data = dict(raw)
        has_prompt, has_checks = "prompt" in raw, "checks" in raw
        if has_prompt != has_checks:
            present, absent = ("prompt", "checks") if has_prompt else ("checks", "prompt")
            self.error_at_key(
                (*path, present),
                "incomplete-follow-up",
                f'an attached follow-up needs both "prompt" and "checks"; "{absent}" is missing',
            )
            return None
        if has_prompt:
            nested = self.nested(path, raw, depth)
            if nested is None:
                return None
            data["checks"] = nested
        built: Check | None = self.build(CHECK_TYPES[kind], data, path)
        if built is not None and _is_tool_or_app_check(built):
            self.unwalked_tool_or_app_checks += 1
        return built

    def follow_up(self, path: Path, raw: dict[str, Any], depth: int) -> FollowUp | None:
        for key in raw:
            if key not in ("prompt", "checks"):
                self.unknown_key(path, key, (*CHECK_TYPES, "prompt", "checks"))
                return None
        if "checks" not in raw:
            self.error_at_key(
                (*path, "prompt"), "incomplete-follow-up", 'a follow-up prompt needs "checks"'
            )
            return None
        nested = self.nested(path, raw, depth)
        if nested is None:
            return None
        # A follow-up is placed at its prompt key.
        built: FollowUp | None = self.build(FollowUp, {**raw, "checks": nested}, path,
                                            at=self.positions.key((*path, "prompt")))
        return built

    def nested(self, path: Path, raw: dict[str, Any], depth: int) -> CheckList | None:
        """Validate a follow-up's prompt and checks one level deeper."""
        if depth + 1 > self.max_depth:
            self.error_at_key(
                (*path, "prompt"),
                "max-depth",
                f"follow-up nested {depth + 1} levels deep; at most {self.max_depth} "
                f"nested levels are allowed (turn {depth + 2} would exceed "
                f"{self.max_depth + 1} turns)",
            )
            return None
        return self.check_list((*path, "checks"), raw["checks"], depth + 1)

    def or_group(
        self, path: Path, raw: dict[str, Any], depth: int, whole_level: bool
    ) -> OrGroup | None:
        members = raw["or"]
        or_path = (*path, "or")
        if not isinstance(members, list) or not members:
            self.error_at_value(or_path, "invalid-or", "or must be a non-empty list of checks")
            return None
        items = self.items(or_path, members, depth)
        if items is None:
            return None
        if all(isinstance(item, FollowUp) for item in items):
            self.error_at_key(
                (*path, "or"), "invalid-or", "or needs at least one check besides its follow-up"
            )
            return None
        group: OrGroup | None = self.build(OrGroup, {"or": items}, path)
        return group


def _checks(path: Path, checks: CheckList, wanted: Callable[[Check], bool]
            ) -> Iterator[tuple[Path, Check]]:
    """Every check of a check list that is `wanted`, nested follow-ups and `or` groups
    included, with its path in the file."""
    items, is_or = level_items(checks)
    base = (*path, "or") if is_or else path
    for index, item in enumerate(items):
        where = (*base, index)
        if isinstance(item, OrGroup):
            yield from _checks(where, item, wanted)
            continue
        nested = item.checks
        if not isinstance(item, FollowUp) and wanted(item):
            yield where, item
        if nested is not None:
            yield from _checks((*where, "checks"), nested, wanted)


def _is_tool_check(check: Check) -> bool:
    return isinstance(check, ToolCallCheck | NoToolCallCheck | ToolOrderCheck
                      | ToolSequenceCheck | NeverCalledCheck | MaxToolCallsCheck)


def _is_app_check(check: Check) -> bool:
    # A model's fields are in its __dict__; most checks have no `source`, and asking
    # pydantic for a missing attribute raises and catches.
    return check_type(check) in APP_CHECK_TYPES or check.__dict__.get("source") == "app"


def _is_tool_or_app_check(check: Check) -> bool:
    return _is_tool_check(check) or _is_app_check(check)


def _eval_checks(path: Path, built: Eval, wanted: Callable[[Check], bool]
                 ) -> Iterator[tuple[Path, Check]]:
    if built.checks is not None:
        yield from _checks((*path, "checks"), built.checks, wanted)
    for index, turn in enumerate(built.turns or ()):
        yield from _checks((*path, "turns", index, "checks"), turn.checks, wanted)
    for key in SIMULATED_KEYS:
        checks = getattr(built, key)
        if checks is not None:
            yield from _checks((*path, key), checks, wanted)



def _named_tools(path: Path, check: Check) -> Iterator[tuple[str, Path]]:
    if isinstance(check, ToolCallCheck):
        yield check.tool_call, (*path, "tool_call")
    elif isinstance(check, NoToolCallCheck):
        yield check.no_tool_call, (*path, "no_tool_call")
    elif isinstance(check, ToolOrderCheck | ToolSequenceCheck):
        names = check.tool_order if isinstance(check, ToolOrderCheck) else check.tool_sequence
        key = check_type(check)
        for index, name in enumerate(names):
            yield name, (*path, key, index)
    elif isinstance(check, NeverCalledCheck):
        yield check.never_called, (*path, "never_called")
    elif isinstance(check, MaxToolCallsCheck) and check.tool is not None:
        yield check.tool, (*path, "tool")


def _is_standalone_follow_up(raw: Any) -> bool:
    return (
        isinstance(raw, dict)
        and "prompt" in raw
        and "or" not in raw
        and not any(key in CHECK_TYPES for key in raw)
    )


def parse_suite(
    text: str, file: str, max_depth: int = MAX_DEPTH, directory: FsPath | None = None,
    root: FsPath | None = None,
) -> SuiteFile:
    """Validate suite text. Never raises on bad input.

    A file with top-level `turns` is a protocol suite; `directory` is where its cases
    file and referenced files are looked for (default: the directory of `file`), and
    `root` the repository root no reference may leave (default: found from `directory`).
    """
    validate_max_depth(max_depth)
    loaded = load_yaml(text, file)
    if loaded.diagnostics and loaded.data is None:
        return SuiteFile(file, None, loaded.diagnostics)
    if "file" not in text:  # no `{file: …}` anywhere: nothing to resolve (the common case)
        return _parse_loaded(loaded, text, file, max_depth, directory)
    resolved = resolve_references(loaded.data, loaded.positions, file,
                                  directory or FsPath(file).parent, root)
    loaded.data = resolved.data
    loaded.diagnostics += resolved.diagnostics
    parsed = _parse_loaded(loaded, text, file, max_depth, directory)
    parsed.references = resolved.references
    if resolved.diagnostics:  # never run a suite with text missing from it
        parsed.suite = parsed.protocol = None
    return parsed


def _parse_loaded(loaded: LoadedYaml, text: str, file: str, max_depth: int,
                  directory: FsPath | None) -> SuiteFile:
    if isinstance(loaded.data, dict) and "turns" in loaded.data:
        if "evals" in loaded.data:
            pos = loaded.positions.key(("turns",))
            both = error(file, pos.line, pos.column, "evals-and-turns",
                         'a suite has either "evals" or "turns" (a protocol suite), not both')
            return SuiteFile(file, None, [*loaded.diagnostics, both])
        from turncheck.formats.protocol_loader import parse_protocol

        protocol, found = parse_protocol(loaded.data, loaded.positions, text, file, directory)
        return SuiteFile(file, None, loaded.diagnostics + found, protocol=protocol)
    validator = _SuiteValidator(file, loaded.positions, max_depth)
    suite = validator.suite(loaded.data)
    diagnostics = loaded.diagnostics + validator.diagnostics
    return SuiteFile(file, suite, diagnostics)


def load_suite(path: FsPath, display: str | None = None, max_depth: int = MAX_DEPTH,
               root: FsPath | None = None) -> SuiteFile:
    """Read and validate a suite; `root` is the directory it must stay inside."""
    file = display or str(path)
    try:
        text = read_text_bounded(path, root=root)
    except UnicodeDecodeError as exc:
        return SuiteFile(file, None, [error(file, 1, 1, "read-error", f"not UTF-8 text: {exc}")])
    except OSError as exc:
        return SuiteFile(file, None, [read_diagnostic(file, exc)])
    with gc_paused():  # thousands of long-lived nodes: collections would find nothing
        loaded = parse_suite(text, file, max_depth, directory=path.parent, root=root)
    loaded.location = path
    return loaded
