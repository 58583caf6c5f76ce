"""weanj's built-in examples, one module per example, each holding its variants side by
side (the gallery of what breaks ports).

Each module registers its `Example` and its variants on import; the registry imports
them (listed in `weanj._project.BUILTIN`) on first lookup when the project asks for the
built-ins (a root without `[tool.weanj]`, `builtin = true`, or weanj's own
`pyproject.toml`, which lists them). The Julia kernels mirror them file for file:
`julia/<stem>.jl`.
"""
