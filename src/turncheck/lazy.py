"""Modules loaded on first use, to keep `turncheck run` of a replayed suite quick to start
(issue 25): a replay never opens a network connection, so aiohttp need not load."""

from __future__ import annotations

import importlib.util
import sys
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
    else, so `import vcr; vcr.VCR` still works afterwards.
    """
    if package not in sys.modules:
        spec = importlib.util.find_spec(package)
        if spec is None or spec.loader is None:
            raise ImportError(f"no module named {package!r}")
        module = importlib.util.module_from_spec(spec)
        loader = spec.loader

        def load_the_rest(attribute: str) -> object:
            del module.__dict__["__getattr__"]
            loader.exec_module(module)
            return getattr(module, attribute)

        module.__dict__["__getattr__"] = load_the_rest
        sys.modules[package] = module
    return [importlib.import_module(f"{package}.{name}") for name in names]
