"""flux.cli: what scripts import from Flux's command-line package (its plugins)."""
