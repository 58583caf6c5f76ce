"""`weanj plot`: PNG figures from every stored benchmark file, and its errors."""

from __future__ import annotations

import struct
import sys

import pytest

from weanj import write_results
from weanj._cli import main

from .helpers import assert_one_line_error, bench_record

FIGURES = {"time_vs_n", "grad_forward_ratio", "compile_vs_n", "memory_vs_n", "memory_vs_K"}


def _png_size(path) -> tuple[int, int]:
    """Width and height from a PNG's header, after checking its signature."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", path
    return struct.unpack(">II", head[16:24])


def _record(variant, device, n, K, sweep="n", mem=1000):
    timed = sweep == "n"
    return bench_record(
        variant,
        n,
        K,
        device=device,
        sweep=sweep,
        forward_s=1e-3 * n if timed else None,
        grad_s=3e-3 * n if timed else None,
        compile_s=0.5 if timed else None,
        peak_mem_bytes=mem * n * n if mem is not None else None,
    )


def test_plot_writes_pngs_from_every_backend_and_device(project, capsys):
    env = {"note": "written by a test"}
    jax_cpu = [_record("jax-jacobi", "cpu", n, 10) for n in (8, 16, 32)]
    jax_cpu += [_record("jax-jacobi", "cpu", 16, K, sweep="K") for K in (10, 100)]
    jax_gpu = [_record("jax-jacobi", "gpu", n, 10) for n in (8, 16, 32)]
    # A backend without XLA memory figures (as Julia's records are): times only.
    other = [_record("julia-jacobi", "cpu", n, 10, mem=None) for n in (8, 16)]
    write_results("01-jacobi", "jax", "cpu", jax_cpu, env=env)
    write_results("01-jacobi", "jax", "gpu", jax_gpu, env=env)
    write_results("01-jacobi", "julia", "cpu", other, env=env)

    assert main(["plot", "01-jacobi"]) == 0
    plots = project / "results" / "01-jacobi" / "plots"
    assert {p.stem for p in plots.glob("*.png")} == FIGURES
    out = capsys.readouterr().out
    for stem in FIGURES:
        assert f"wrote {plots / stem}.png" in out
        width, height = _png_size(plots / f"{stem}.png")
        assert width > 300 and height > 200


def test_plot_after_a_real_bench(project):
    assert (
        main(
            [
                "bench",
                "01-jacobi",
                "--variants",
                "jax-jacobi",
                "--sizes",
                "4",
                "--K",
                "2",
                "--samples",
                "1",
                "--memory-over",
                "K",
                "2",
            ]
        )
        == 0
    )
    assert main(["plot", "01-jacobi"]) == 0
    plots = project / "results" / "01-jacobi" / "plots"
    assert {p.stem for p in plots.glob("*.png")} == FIGURES


def test_no_results_is_one_line_and_exit_2(project, capsys):
    assert main(["plot", "01-jacobi"]) == 2
    err = capsys.readouterr().err.strip()
    assert_one_line_error(err, "weanj bench 01-jacobi")


@pytest.mark.parametrize(
    "text", ["{not json", '{"records": [{"variant": "jax-jacobi"}]}'], ids=["json", "fields"]
)
def test_corrupt_results_file_is_one_line_and_exit_2(project, capsys, text):
    bench = project / "results" / "01-jacobi" / "bench"
    bench.mkdir(parents=True)
    (bench / "jax-cpu.json").write_text(text)
    assert main(["plot", "01-jacobi"]) == 2
    err = capsys.readouterr().err.strip()
    assert_one_line_error(err, "jax-cpu.json")


def test_missing_matplotlib_is_one_line_and_exit_2(project, capsys, monkeypatch):
    write_results("01-jacobi", "jax", "cpu", [_record("jax-jacobi", "cpu", 8, 10)], env={})
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    assert main(["plot", "01-jacobi"]) == 2
    err = capsys.readouterr().err.strip()
    assert_one_line_error(err, "pip install 'weanj[plot]'")
