"""`python -m flux_lite` runs the flux-lite command."""
from flux_lite.cli.launch import main

main()
