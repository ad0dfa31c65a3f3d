"""Jinja templates and `when` expressions of protocol suites: the environment and static checks.

Templates render in a sandboxed, strict environment (`sandboxed_environment`)
with the hierarchy filters. Before anything runs, every template and expression
is parsed and its references are checked against what will exist when it is
rendered: the case's fields and vars, the *earlier* turns and their scorers and
extracted values. Problems carry the line inside the template, so the loader
can report them at their line in the suite file.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import jinja2
from jinja2 import meta, nodes
from jinja2.parser import Parser

from turncheck.formats import hierarchy
from turncheck.formats.protocol import (
    CASE_FIELDS,
    MATCHED,
    TEMPLATE_NAMES,
    TURN_FIELDS,
    Case,
    Turn,
)
from turncheck.formats.templates import reserved_secret, secret_token
from turncheck.text.environment import sandboxed_environment
from turncheck.text.suggest import did_you_mean
from turncheck.text.template_limits import (
    COMPILE_LIMIT_ERRORS,
    TOO_DEEP,
    bounded_filters,
    limit_problems,
)

_CAPTURING = (nodes.AssignBlock, nodes.FilterBlock, nodes.Macro, nodes.CallBlock)
"""Blocks whose output becomes a value (that a filter or method could then transform)."""
_OPAQUE = (
    "may only be output whole, as {{{{ secret('{name}') }}}}: a filter, slice, method, "
    "comparison, concatenation, loop or assignment would expose a transformed form of it"
)
_GUARD_TESTS = ("defined", "undefined")
_NAMED_CASES = 5
"""How many of the cases lacking a value a warning names before "and N more"."""
Reference = tuple[str, ...]
"""A reference as its root name and constant keys: `case.vars.x` is ("case", "vars", "x")."""
Known = frozenset[Reference]
"""References a template's guards prove defined at some place of it."""


class SecretError(TypeError):
    """A template tried to look inside, transform or compare a secret."""


class SecretRef:
    """What `secret('NAME')` gives a protocol template: an opaque reference, not the value.

    It renders as the token `<SECRET:NAME>`, which the provider layer replaces with
    the value only inside the outgoing request. The static check (`check_template`)
    already rejects every use but `{{ secret('NAME') }}`; these methods are the
    runtime's second line: anything but rendering raises.
    """

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __str__(self) -> str:
        return secret_token(self._name)

    def _refuse(self, *_: object, **__: object) -> None:
        raise SecretError(f"secret('{self._name}') " + _OPAQUE.format(name=self._name))

    __getitem__ = __iter__ = __len__ = __add__ = __radd__ = __mul__ = __rmul__ = _refuse
    __mod__ = __rmod__ = __contains__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __bool__ = __int__ = __float__ = __reversed__ = _refuse

    def __eq__(self, other: object) -> bool:
        self._refuse()
        return False

    def __hash__(self) -> int:
        return hash(("secret", self._name))

    def __repr__(self) -> str:
        return str(self)


def _is_secret_call(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Call) and isinstance(node.node, nodes.Name) \
        and node.node.name == "secret"


def _output_secret_calls(node: nodes.Node, capturing: bool, found: set[int]) -> None:
    """Ids of the `secret(...)` calls that are output whole, outside capturing blocks."""
    if isinstance(node, nodes.Output) and not capturing:
        found.update(id(child) for child in node.nodes if _is_secret_call(child))
    inner = capturing or isinstance(node, _CAPTURING)
    for child in node.iter_child_nodes():
        _output_secret_calls(child, inner, found)


def _check_secret_uses(tree: nodes.Node, analysis: Analysis, *, may_output: bool) -> None:
    """Every use of `secret` but `{{ secret('NAME') }}` is an error at its line."""
    allowed: set[int] = set()
    if may_output:
        _output_secret_calls(tree, False, allowed)
    calls = {id(c.node): c for c in tree.find_all(nodes.Call) if _is_secret_call(c)}
    for name in tree.find_all(nodes.Name):
        if name.name != "secret" or name.ctx != "load":
            continue
        call = calls.get(id(name))
        if call is not None and id(call) in allowed:
            continue
        what = "secret(...)"
        if call is not None and call.args and isinstance(call.args[0], nodes.Const):
            what = f"secret('{call.args[0].value}')"
        shown = what[len("secret('"):-2] if what != "secret(...)" else "NAME"
        analysis.problems.append(Problem(
            name.lineno or 1, "secret-transformed",
            f"{what} " + _OPAQUE.format(name=shown)))
_GUARD_FILTERS = ("default", "d")


@lru_cache(maxsize=1)
def protocol_environment() -> jinja2.Environment:
    env = sandboxed_environment()
    env.filters.update(bounded_filters(hierarchy.FILTERS))
    env.filters = {name: _refusing_secrets(f) for name, f in env.filters.items()}
    return env


def _refusing_secrets(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, raising SecretError when given a secret (the runtime's second line)."""

    @functools.wraps(function)  # keeps Jinja's pass_context/pass_environment marks
    def guarded(*args: Any, **kwargs: Any) -> Any:
        for value in (*args, *kwargs.values()):
            if isinstance(value, SecretRef):
                value._refuse()
        return function(*args, **kwargs)

    return guarded


@dataclass(frozen=True)
class Problem:
    lineno: int
    """1-based line inside the template."""
    code: str
    message: str
    severity: str = "error"


@dataclass
class Scope:
    """What a template at one place of the suite may refer to."""

    turns: Sequence[Turn]
    """All turns, in order."""
    current: int
    """Index of the turn the template belongs to."""
    cases: Sequence[Case]
    allow_matched: bool = False
    invalid: set[str] = field(default_factory=set)
    """Ids of turns that are invalid themselves (references to them are not reported)."""

    def earlier(self) -> dict[str, Turn]:
        return {t.id: t for t in self.turns[: self.current]}


@dataclass
class Analysis:
    problems: list[Problem] = field(default_factory=list)
    secrets: set[str] = field(default_factory=set)


def _hint(name: str, known: Sequence[str]) -> str:
    return did_you_mean(name, known, f"; known: {', '.join(known)}" if known else "")


def _paths(node: nodes.Node) -> Known:
    """`node`'s reference as a one-path set, or none when it is not a plain reference."""
    keys: list[str] = []
    while isinstance(node, nodes.Getattr | nodes.Getitem):
        key = node.attr if isinstance(node, nodes.Getattr) else getattr(node.arg, "value", None)
        if not isinstance(key, str):
            return frozenset()
        keys.append(key)
        node = node.node
    if not isinstance(node, nodes.Name):
        return frozenset()
    return frozenset({(node.name, *reversed(keys))})


def _guarded_subject(node: nodes.Node) -> nodes.Node | None:
    """The reference `x is defined`, `x is undefined` or `x | default(...)` may find missing."""
    if isinstance(node, nodes.Test) and node.name in _GUARD_TESTS:
        return node.node
    if isinstance(node, nodes.Filter) and node.name in _GUARD_FILTERS:
        return node.node
    return None


def _guards(test: nodes.Node) -> tuple[Known, Known]:
    """(references proved defined when `test` is true, those proved when it is false).

    Follows Jinja's own tree: `is defined`, `is undefined`, `'name' in case.vars` (and
    `not in`), `not` (which `is not defined` parses to), `and` and `or`; any other test
    proves nothing.
    """
    if isinstance(test, nodes.Test) and test.name in _GUARD_TESTS:
        proved = _paths(test.node)
        return (proved, frozenset()) if test.name == "defined" else (frozenset(), proved)
    if isinstance(test, nodes.Compare):
        return _membership(test)
    if isinstance(test, nodes.Not):
        when_true, when_false = _guards(test.node)
        return when_false, when_true
    if isinstance(test, nodes.And | nodes.Or):
        left_true, left_false = _guards(test.left)
        right_true, right_false = _guards(test.right)
        if isinstance(test, nodes.And):
            return left_true | right_true, left_false & right_false
        return left_true & right_true, left_false | right_false
    return frozenset(), frozenset()


def _membership(test: nodes.Compare) -> tuple[Known, Known]:
    """`'name' in mapping` proves `mapping.name` when true; `not in`, when false."""
    if len(test.ops) != 1 or test.ops[0].op not in ("in", "notin"):
        return frozenset(), frozenset()
    key = test.expr.value if isinstance(test.expr, nodes.Const) else None
    mapping = _paths(test.ops[0].expr)
    if not isinstance(key, str) or not mapping:
        return frozenset(), frozenset()
    proved = frozenset({(*path, key) for path in mapping})
    return (proved, frozenset()) if test.ops[0].op == "in" else (frozenset(), proved)


def _some(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_NAMED_CASES])
    hidden = len(names) - _NAMED_CASES
    return f"{shown} and {hidden} more" if hidden > 0 else shown


class _Checker:
    def __init__(self, scope: Scope, analysis: Analysis) -> None:
        self.scope = scope
        self.analysis = analysis

    def problem(self, node: nodes.Node, code: str, message: str, severity: str = "error") -> None:
        self.analysis.problems.append(Problem(node.lineno or 1, code, message, severity))

    def visit(self, node: nodes.Node, known: Known = frozenset()) -> None:
        """Check `node`; `known` are the paths its guards prove defined where it runs."""
        if isinstance(node, nodes.If):
            self.branches(node, known)
            return
        if isinstance(node, nodes.CondExpr):
            self.conditional(node, known)
            return
        if isinstance(node, nodes.And | nodes.Or):
            self.short_circuit(node, known)
            return
        if isinstance(node, nodes.Getattr | nodes.Getitem):
            self.chain(node, known)
            return
        if isinstance(node, nodes.Call) and isinstance(node.node, nodes.Name):
            self.call(node)
        if isinstance(node, nodes.Name) and node.ctx == "load":
            self.path(node, node.name, [], known)
        subject = _guarded_subject(node)
        for child in node.iter_child_nodes():
            self.visit(child, known | _paths(child) if child is subject else known)

    def branches(self, node: nodes.If, known: Known) -> None:
        """`{% if %}…{% elif %}…{% else %}`: each branch knows what its test (and the
        failed tests before it) prove."""
        failed: Known = known
        for branch in (node, *node.elif_):
            self.visit(branch.test, failed)
            when_true, when_false = _guards(branch.test)
            for child in branch.body:
                self.visit(child, failed | when_true)
            failed = failed | when_false
        for child in node.else_:
            self.visit(child, failed)

    def conditional(self, node: nodes.CondExpr, known: Known) -> None:
        """`a if test else b`."""
        self.visit(node.test, known)
        when_true, when_false = _guards(node.test)
        self.visit(node.expr1, known | when_true)
        if node.expr2 is not None:
            self.visit(node.expr2, known | when_false)

    def short_circuit(self, node: nodes.And | nodes.Or, known: Known) -> None:
        """The right side of `and` runs only when the left is true; of `or`, when it is false."""
        self.visit(node.left, known)
        when_true, when_false = _guards(node.left)
        self.visit(node.right, known | (when_true if isinstance(node, nodes.And) else when_false))

    def call(self, node: nodes.Call) -> None:
        assert isinstance(node.node, nodes.Name)
        if node.node.name not in ("var", "secret"):
            return
        kind = node.node.name
        args = node.args
        if len(args) != 1 or not isinstance(args[0], nodes.Const) or not isinstance(
            args[0].value, str
        ):
            self.problem(node, "invalid-template", f"{kind}() takes one quoted name, e.g. "
                         f"{kind}('NAME')")
            return
        if kind == "secret":
            reason = reserved_secret(args[0].value)
            if reason is not None:
                self.problem(node, "reserved-secret", reason)
                return
            self.analysis.secrets.add(args[0].value)

    def chain(self, node: nodes.Getattr | nodes.Getitem, known: Known) -> None:
        keys: list[str] = []
        current: nodes.Node = node
        while True:
            if isinstance(current, nodes.Getattr):
                keys.append(current.attr)
                current = current.node
            elif isinstance(current, nodes.Getitem):
                arg = current.arg
                if isinstance(arg, nodes.Const) and isinstance(arg.value, str):
                    keys.append(arg.value)
                else:
                    keys.clear()  # what follows a dynamic subscript cannot be checked
                    self.visit(arg, known)
                current = current.node
            else:
                break
        if isinstance(current, nodes.Name):
            self.path(current, current.name, list(reversed(keys)), known)
        else:
            self.visit(current, known)

    def path(self, node: nodes.Node, root: str, keys: list[str], known: Known) -> None:
        if root == "case" and keys:
            self.case_path(node, keys, known)
        elif root == "turns" and keys:
            self.turn_path(node, keys)

    def case_path(self, node: nodes.Node, keys: list[str], known: Known) -> None:
        head = keys[0]
        if head not in CASE_FIELDS:
            self.problem(node, "unknown-reference",
                         f'unknown case field "case.{head}"{_hint(head, CASE_FIELDS)}')
            return
        if head == "id" or len(keys) < 2:
            return
        name, cases = keys[1], self.scope.cases
        having = [c for c in cases if name in getattr(c, head)]
        if not having:
            defined = sorted({k for c in cases for k in getattr(c, head)})
            where = "no case" if cases else "there are no cases, so no case"
            self.problem(node, "unknown-reference",
                         f'unknown variable "case.{head}.{name}": {where} defines it'
                         f"{_hint(name, defined)}")
        elif len(having) < len(cases) and ("case", head, name) not in known:
            lacking = [c.id for c in cases if name not in getattr(c, head)]
            self.problem(
                node, "missing-case-value",
                f'"case.{head}.{name}" is not set in case(s) {_some(lacking)}; '
                "those cases will end in an error unless the template guards it "
                f"(`{{% if case.{head}.{name} is defined %}}` or `| default(...)`)",
                severity="warning",
            )

    def turn_path(self, node: nodes.Node, keys: list[str]) -> None:
        turn_id = keys[0]
        all_ids = [t.id for t in self.scope.turns]
        position = all_ids.index(turn_id) if turn_id in all_ids else -1
        if position < 0 and turn_id in self.scope.invalid:
            return
        if position < 0:
            self.problem(node, "unknown-turn", f'unknown turn "{turn_id}"{_hint(turn_id, all_ids)}')
            return
        if position == self.scope.current:
            self.problem(node, "turn-order",
                         f'turn "{turn_id}" cannot refer to its own results; only to earlier '
                         "turns")
            return
        if position > self.scope.current:
            later = self.scope.turns[position]
            self.problem(node, "turn-order",
                         f'turn "{turn_id}" (line {later.line}) comes later; a template can only '
                         "refer to earlier turns")
            return
        if len(keys) < 2:
            return
        turn, attribute = self.scope.turns[position], keys[1]
        if attribute not in TURN_FIELDS:
            self.problem(node, "unknown-reference",
                         f'unknown field "turns.{turn_id}.{attribute}"'
                         f"{_hint(attribute, TURN_FIELDS)}")
            return
        if len(keys) < 3:
            return
        name = keys[2]
        if attribute in ("scores", "results"):
            scorer_ids = [s.id for s in turn.scorers]
            if name not in scorer_ids:
                self.problem(node, "unknown-reference",
                             f'turn "{turn_id}" has no scorer "{name}"{_hint(name, scorer_ids)}')
        elif attribute == "extracted" and name not in turn.extract:
            self.problem(node, "unknown-reference",
                         f'turn "{turn_id}" extracts no value "{name}"'
                         f"{_hint(name, list(turn.extract))}")


def _allowed(scope: Scope) -> set[str]:
    env = protocol_environment()
    return {*TEMPLATE_NAMES, *env.globals, *((MATCHED,) if scope.allow_matched else ())}


def _undeclared(tree: nodes.Template, scope: Scope, analysis: Analysis) -> None:
    unknown = meta.find_undeclared_variables(tree) - _allowed(scope)
    for name in sorted(unknown):
        first = next((n for n in tree.find_all(nodes.Name) if n.name == name), None)
        hint = ""
        if name == MATCHED:
            hint = "; `matched` exists only in a variant's prompt"
        else:
            hint = _hint(name, sorted(_allowed(scope) - set(protocol_environment().globals)))
        analysis.problems.append(
            Problem(first.lineno if first else 1, "unknown-reference",
                    f'unknown variable "{name}"{hint}')
        )


def _syntax(compile_it: Callable[[], object]) -> Problem | None:
    try:
        compile_it()
    except jinja2.TemplateSyntaxError as exc:
        return Problem(exc.lineno or 1, "template-syntax", f"template error: {exc.message}")
    except COMPILE_LIMIT_ERRORS:
        return Problem(1, "template-syntax", f"template error: {TOO_DEEP}")
    return None


def _check_limits(tree: nodes.Template, analysis: Analysis) -> None:
    """Operations refused whatever the data (`{{ 9**(9**9) }}`), reported before any run."""
    analysis.problems.extend(Problem(line, "template-limit", message)
                             for line, message in limit_problems(tree))


def check_template(source: str, scope: Scope) -> Analysis:
    """Syntax and reference problems of a prompt (or rubric, pattern) template."""
    env = protocol_environment()
    analysis = Analysis()
    problem = _syntax(lambda: env.from_string(source))
    if problem is not None:
        analysis.problems.append(problem)
        return analysis
    tree = env.parse(source)
    tree.set_environment(env)
    _undeclared(tree, scope, analysis)
    _Checker(scope, analysis).visit(tree)
    _check_secret_uses(tree, analysis, may_output=True)
    _check_limits(tree, analysis)
    return analysis


def check_expression(source: str, scope: Scope) -> Analysis:
    """Syntax and reference problems of a `when` (or data) expression."""
    env = protocol_environment()
    analysis = Analysis()
    problem = _syntax(lambda: env.compile_expression(source, undefined_to_none=False))
    if problem is not None:
        analysis.problems.append(problem)
        return analysis
    expression = Parser(env, source, state="variable").parse_expression()
    tree = nodes.Template([nodes.Output([expression], lineno=1)], lineno=1)
    tree.set_environment(env)
    _undeclared(tree, scope, analysis)
    _Checker(scope, analysis).visit(tree)
    _check_secret_uses(tree, analysis, may_output=False)
    _check_limits(tree, analysis)
    return analysis
