"""flux-lite's `flux` package: Flux's Python API over a flux-lite instance.

Put on sys.path only by `flux python`, `flux-lite env` and `flux-lite start
COMMAND` (see flux_lite/bindings.py), never installed as a top-level package,
so it cannot shadow a real Flux's bindings. Importing it is cheap: the
instance is opened by the first request a handle makes.
"""

from flux.core.handle import Flux

__all__ = ["Flux"]
