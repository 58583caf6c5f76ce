#!/usr/bin/env bash
# The device dimension on a real TPU (docs/devices.md), for the note of issue 49.
#
# On a machine with a TPU and this checkout, from the checkout's root:
#
#     PYTHONPATH=python OUT=/some/folder benchmarks/tpu_check.sh
#
# 1. `weanj check --device cpu --device tpu` on the built-in gallery, every output line
#    stamped with the time it came (what shows that no phase is silent for long);
# 2. a user project with a dense network over time steps (the correct ports, a planted
#    indexing bug, a port the bfloat16 pass breaks): `weanj check --device tpu`;
# 3. `weanj bench 02-gauss-seidel` on the CPU and the TPU, then `weanj plot`.
#
# Logs and PNGs go to $OUT (default: ./tpu-check-out). Nothing here is a stand-in: the
# stand-in's variable is unset, and the script stops where JAX sees no TPU.
set -u
OUT="${OUT:-$PWD/tpu-check-out}"
mkdir -p "$OUT"
unset WEANJ_STANDIN_DEVICE
PY="${PYTHON:-python}"
WORK="$(mktemp -d)"
REPO="$PWD"
export PYTHONPATH="$(cd "${PYTHONPATH:-python}" && pwd)"  # absolute: the script moves

stamp() { while IFS= read -r line; do printf '%s %s\n' "$(date -u +%H:%M:%S)" "$line"; done; }

"$PY" - <<'EOF' 2>&1 | tee "$OUT/device.txt"
import importlib.metadata as md, jax
print("jax", jax.__version__, "devices", jax.devices())
try:
    print("libtpu", md.version("libtpu"))
except md.PackageNotFoundError:
    print("libtpu not installed")
print("device_kind", jax.devices()[0].device_kind, "matmul precision",
      jax.config.jax_default_matmul_precision)
EOF
if ! "$PY" -c "import jax, sys; sys.exit(0 if jax.devices('tpu') else 1)" 2>/dev/null; then
    echo "no TPU visible to JAX here: nothing to check" | tee -a "$OUT/device.txt"
    exit 2
fi

# 1. the gallery
mkdir -p "$WORK/gallery" && cd "$WORK/gallery"
printf '[tool.weanj]\nbuiltin = true\nx64 = true\n' > pyproject.toml
"$PY" -m weanj inputs regenerate > /dev/null
{ echo "start"; "$PY" -m weanj check --device cpu --device tpu 2>&1; echo "exit $?"; } \
    | stamp | tee "$OUT/gallery-check.log"
for f in results/*/check.json; do cp "$f" "$OUT/$(basename "$(dirname "$f")")-check.json"; done

# 2. the dense user project
mkdir -p "$WORK/dense/kernels" && cd "$WORK/dense"
touch kernels/__init__.py
printf '[tool.weanj]\nexamples = ["kernels.dense"]\nx64 = true\n' > pyproject.toml
"$PY" - "$REPO" > kernels/dense.py <<'EOF'
import ast, pathlib, sys
# the project of tests/test_devices.py (DENSE), one source for the test and this check
tree = ast.parse(pathlib.Path(sys.argv[1], "tests", "test_devices.py").read_text())
for node in tree.body:
    if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "DENSE":
        print(ast.literal_eval(node.value))
EOF
"$PY" -m weanj inputs regenerate > /dev/null
{ echo "start"; "$PY" -m weanj check --device tpu 2>&1; echo "exit $?"; } \
    | stamp | tee "$OUT/dense-check.log"
cp results/20-dense/check.json "$OUT/dense-check.json" 2>/dev/null || true

# 3. benchmarks on the CPU and the TPU, drawn side by side
cd "$WORK/gallery"
for device in cpu tpu; do
    { "$PY" -m weanj bench 02-gauss-seidel --device "$device" --sizes 16 32 64 128 2>&1; \
      echo "exit $?"; } | stamp | tee "$OUT/bench-$device.log"
done
"$PY" -m weanj plot 02-gauss-seidel 2>&1 | stamp | tee "$OUT/plot.log"
cp results/02-gauss-seidel/bench/*.json results/02-gauss-seidel/plots/*.png "$OUT/" 2>/dev/null
echo "logs and figures in $OUT"
