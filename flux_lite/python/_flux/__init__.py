"""flux-lite's stand-in for Flux's compiled bindings (``_flux``): only what
Flux's Python broker modules call directly (see ``_flux._core``)."""
