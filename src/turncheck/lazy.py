"""Modules loaded on first use, to keep `turncheck run` of a replayed suite quick to start
(issue 25): a replay never opens a network connection, so aiohttp need not load."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """`name`, imported on its first attribute access (Python's `importlib.util.LazyLoader`
    recipe); the module itself when it is already loaded."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}")
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


def submodules_without_package_init(package: str, *names: str) -> list[ModuleType]:
    """Submodules of `package` imported without running the package's `__init__` yet.

    vcrpy's `__init__` imports `vcr.patch`, which imports every HTTP client it can find
    (aiohttp, requests, tornado, boto3 …) to patch them: most of a replay's start-up,
    while turncheck uses only vcrpy's cassette format. The package is registered with a
    module `__getattr__` (PEP 562) that runs the real `__init__` on first use of anything
    else than a submodule, so `import vcr; vcr.VCR` still works afterwards. genai-prices'
    `__init__` likewise loads its price-update thread and httpx2, which pricing from the
    bundled snapshot never uses.
    """
    if package not in sys.modules:
        spec = importlib.util.find_spec(package)
        if spec is None or spec.loader is None:
            raise ImportError(f"no module named {package!r}")
        module = importlib.util.module_from_spec(spec)
        loader = spec.loader

        def load_the_rest(attribute: str) -> object:
            submodule = f"{package}.{attribute}"
            # `from . import types` inside a submodule asks the package for the attribute
            # first: a submodule loads on its own, without the rest of the package.
            if submodule in sys.modules or importlib.util.find_spec(submodule) is not None:
                return importlib.import_module(submodule)
            del module.__dict__["__getattr__"]
            loader.exec_module(module)
            return getattr(module, attribute)

        module.__dict__["__getattr__"] = load_the_rest
        sys.modules[package] = module
    return [importlib.import_module(f"{package}.{name}") for name in names]


class _OptionalSubmoduleSkipper(importlib.abc.MetaPathFinder):
    """Reports `skipped` as not installed while its package's `__init__` runs."""

    def __init__(self, skipped: str) -> None:
        self.skipped = skipped
        self.package = skipped.rpartition(".")[0]

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname == self.skipped and self._package_initializing():
            raise ModuleNotFoundError(f"{fullname} skipped by turncheck", name=fullname)
        return None

    def _package_initializing(self) -> bool:
        package = sys.modules.get(self.package)
        spec = getattr(package, "__spec__", None)
        return bool(getattr(spec, "_initializing", False))


def skip_optional_submodule(skipped: str) -> None:
    """Let the package of `skipped` load without it, where the package's `__init__` imports
    it under `try: … except ImportError` (an extra's feature).

    httpx's `__init__` tries its command-line client, `httpx._main`, which imports click,
    pygments and rich (the `httpx[cli]` extra; without rich it fails after loading the
    other two): up to a fifth of a replay's start-up, for a `main` turncheck never calls.
    Only the package's own first import is affected: an explicit `import httpx._main`
    afterwards behaves as usual."""
    if any(isinstance(f, _OptionalSubmoduleSkipper) and f.skipped == skipped
           for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _OptionalSubmoduleSkipper(skipped))


def package_face(package: str, homes: dict[str, str], namespace: dict[str, object]
                 ) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """A package face's `__getattr__` and `__dir__` (PEP 562): each name in `homes` is
    imported from its module on first use and kept, so importing the package loads none
    of them (a replay's start-up reads no comparison models)."""

    def get(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    def names() -> list[str]:
        return sorted(homes)

    return get, names
