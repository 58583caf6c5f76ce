"""The examples, one module per example, each holding its variants side by side.

Each module registers its `Example` and its `Variant`s on import (the registry imports
them on first lookup). The Julia kernels mirror them file for file: `julia/<stem>.jl`.
"""
