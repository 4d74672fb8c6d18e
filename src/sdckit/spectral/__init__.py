"""spectral: see the package docstring of sdckit."""

__all__: list[str] = []
