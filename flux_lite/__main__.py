"""`python -m flux_lite` runs the flux-lite command."""
from flux_lite.cli.main import main

main()
