"""One module per study; each defines ``register(app: typer.Typer) -> None``."""
