"""flux-lite: Flux's control plane (job manager, RFC 27 scheduler protocol,
admin commands) on one machine, with jobs running in simulated time.

The library never prints and never imports click; the command line lives in
flux_lite.cli (the cli/ folder of the checkout).
"""

__version__ = "0.1.0"
