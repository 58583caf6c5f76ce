"""Ships the Julia kernels inside the wheel.

The checkout keeps them in the top-level `julia/` (beside `python/`), outside the Python
package; a wheel carries a copy as `weanj/julia/`, where the juliacall bridge
(`weanj/_julia.py`) looks when there is no checkout. Everything else is configured in
pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

JULIA_SOURCES = Path(__file__).resolve().parent / "julia"


class build_py_with_julia(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout's julia/ itself
        target = Path(self.build_lib) / "weanj" / "julia"
        # The package WeanJ (src/WeanJ.jl and the kernels it includes), its Project.toml
        # (so that a wheel's copy can be added to a Julia environment by path) and the docs.
        shipped = [*JULIA_SOURCES.glob("*.jl"), *JULIA_SOURCES.glob("src/*.jl")]
        shipped += [JULIA_SOURCES / "README.md", JULIA_SOURCES / "Project.toml"]
        for source in sorted(shipped):
            if source.is_file():
                destination = target / source.relative_to(JULIA_SOURCES)
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, destination)


setup(cmdclass={"build_py": build_py_with_julia})
