"""Reading a vcrpy cassette one interaction at a time, from libyaml's event stream.

Parsing the whole file first (vcrpy's `deserialize`: a node tree, then every object)
held about 100 bytes of memory per byte of cassette: 415 MiB to replay a 13 MB
recording, 1.35 GB for a hostile 13.5 MB file of 99,000 tiny interactions. Here the
events are turned into objects as they arrive, and each interaction is handed to the
caller as soon as it is complete, so only the caller's compact form of the
interactions stays in memory. The same pass refuses nesting deeper than `max_depth`,
more than `max_aliases` aliases and more than `max_interactions` interactions, before
building anything beyond the limit.

Scalars are resolved and constructed exactly as PyYAML's safe loader does (its
resolver and `SafeConstructor`), so every file vcrpy writes reads the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from turncheck.formats.yamlsource import is_parser_nesting_limit

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_STR_TAG = "tag:yaml.org,2002:str"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
RawInteraction = tuple[dict[Any, Any], dict[Any, Any]]
"""(request mapping, response mapping) as vcrpy stores them."""


class CassetteShapeError(ValueError):
    """The cassette is not YAML, breaks a limit, or is not shaped like a vcrpy cassette."""


@dataclass(frozen=True, slots=True)
class ReadLimits:
    max_depth: int
    max_aliases: int
    max_interactions: int


@dataclass(slots=True)
class _Open:
    """A mapping or sequence being built; a mapping waits for a value when `key` is set."""

    value: dict[Any, Any] | list[Any]
    anchor: str | None
    key: Any = None
    has_key: bool = False
    holds_interactions: bool = False


@dataclass(slots=True)
class _Builder:
    limits: ReadLimits
    stack: list[_Open] = field(default_factory=list)
    anchors: dict[str, Any] = field(default_factory=dict)
    aliases: int = 0
    interactions: int = 0
    root: Any = None
    done: list[RawInteraction] = field(default_factory=list)


_constructor = SafeConstructor()
_resolver = Resolver()


def iter_raw_interactions(data: bytes, limits: ReadLimits) -> Iterator[RawInteraction]:
    """The interactions of a cassette's text, each as soon as it has been read."""
    builder = _Builder(limits)
    loader = _LOADER(data)
    try:
        while loader.check_event():
            event = loader.get_event()
            _HANDLERS.get(type(event), _ignore)(builder, event)
            if builder.done:
                yield from builder.done
                builder.done.clear()
    except CassetteShapeError:
        raise
    except Exception as exc:  # the parser and constructors raise many types
        reason = " ".join(str(exc).split())[:300]
        if isinstance(exc, yaml.YAMLError) and is_parser_nesting_limit(exc):
            reason = f"nests deeper than {limits.max_depth}"  # libyaml's own, deeper, limit
        raise CassetteShapeError(reason) from None
    finally:
        loader.dispose()
    _check_root(builder.root)


def _check_root(root: Any) -> None:
    if not isinstance(root, dict) or not isinstance(root.get("interactions"), list):
        raise CassetteShapeError("no `interactions` list at the top level")


def _on_scalar(builder: _Builder, event: yaml.ScalarEvent) -> None:
    _place(builder, _scalar(event), event.anchor)


def _on_alias(builder: _Builder, event: yaml.AliasEvent) -> None:
    builder.aliases += 1
    if builder.aliases > builder.limits.max_aliases:
        raise CassetteShapeError(f"more than {builder.limits.max_aliases} YAML aliases")
    if event.anchor not in builder.anchors:
        raise CassetteShapeError(f"unknown YAML alias *{event.anchor}")
    _place(builder, builder.anchors[event.anchor], None)


def _on_document(builder: _Builder, event: yaml.DocumentStartEvent) -> None:
    if builder.root is not None:
        raise CassetteShapeError("more than one YAML document")


def _ignore(builder: _Builder, event: yaml.Event) -> None:
    pass


def _open(builder: _Builder, event: yaml.MappingStartEvent | yaml.SequenceStartEvent) -> None:
    if len(builder.stack) >= builder.limits.max_depth:
        raise CassetteShapeError(f"nests deeper than {builder.limits.max_depth}")
    is_map = isinstance(event, yaml.MappingStartEvent)
    expected = _MAP_TAG if is_map else _SEQ_TAG
    if event.tag not in (None, "!", expected):
        raise CassetteShapeError(f"unsupported YAML tag {event.tag}")
    parent = builder.stack[-1] if builder.stack else None
    holds = (not is_map and parent is not None and len(builder.stack) == 1
             and parent.has_key and parent.key == "interactions")
    value: dict[Any, Any] | list[Any] = {} if is_map else []
    builder.stack.append(_Open(value, event.anchor, holds_interactions=holds))


def _close(builder: _Builder) -> None:
    finished = builder.stack.pop()
    if finished.has_key:
        raise CassetteShapeError("a mapping key without a value")
    _place(builder, finished.value, finished.anchor)


def _place(builder: _Builder, value: Any, anchor: str | None) -> None:
    """Put a finished value into the open container (or make it the document)."""
    if anchor is not None:
        builder.anchors[anchor] = value
    if not builder.stack:
        builder.root = value
        return
    parent = builder.stack[-1]
    if parent.holds_interactions:
        builder.interactions += 1
        if builder.interactions > builder.limits.max_interactions:
            raise CassetteShapeError(
                f"more than {builder.limits.max_interactions:,} interactions"
            )
        builder.done.append(_split(value, builder.interactions))
        if anchor is not None:
            del builder.anchors[anchor]  # an interaction is never shared
        return
    if isinstance(parent.value, list):
        parent.value.append(value)
    elif parent.has_key:
        parent.value[parent.key] = value
        parent.has_key = False
    else:
        if isinstance(value, dict | list):
            raise CassetteShapeError("a mapping or list used as a mapping key")
        parent.key, parent.has_key = value, True


def _split(item: Any, number: int) -> RawInteraction:
    if not isinstance(item, dict):
        raise CassetteShapeError(f"interaction {number} is not a mapping")
    request, response = item.get("request"), item.get("response")
    if not isinstance(request, dict) or not isinstance(response, dict):
        raise CassetteShapeError(f"interaction {number} lacks its request or response")
    return request, response


_PLAIN_CACHE_LIMIT = 4096
_plain_values: dict[str, Any] = {}


def _scalar(event: yaml.ScalarEvent) -> Any:
    """The scalar's value as the safe loader builds it (quoted text and repeated plain
    scalars, the bulk of a cassette, without the resolver)."""
    if event.tag is None and event.style in ("'", '"'):
        return event.value
    if event.tag is None and not event.style and event.value in _plain_values:
        return _plain_values[event.value]
    value = _constructed(event)
    if (event.tag is None and not event.style and len(_plain_values) < _PLAIN_CACHE_LIMIT
            and isinstance(value, str | int | float | bool | None)):
        _plain_values[event.value] = value
    return value


def _constructed(event: yaml.ScalarEvent) -> Any:
    tag = event.tag
    if tag is None or tag == "!":
        plain = event.implicit[0] and not event.style
        resolve: Any = _resolver.resolve  # untyped in types-PyYAML
        tag = resolve(yaml.ScalarNode, event.value, (plain, False)) if plain else _STR_TAG
    make = SafeConstructor.yaml_constructors.get(tag)
    if make is None or tag in (_MAP_TAG, _SEQ_TAG):
        raise CassetteShapeError(f"unsupported YAML tag {tag}")
    return make(_constructor, yaml.ScalarNode(tag, event.value, style=event.style))


_HANDLERS: dict[type, Any] = {
    yaml.ScalarEvent: _on_scalar,
    yaml.MappingStartEvent: _open,
    yaml.SequenceStartEvent: _open,
    yaml.MappingEndEvent: lambda builder, event: _close(builder),
    yaml.SequenceEndEvent: lambda builder, event: _close(builder),
    yaml.AliasEvent: _on_alias,
    yaml.DocumentStartEvent: _on_document,
}
