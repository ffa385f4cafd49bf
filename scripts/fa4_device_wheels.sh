#!/usr/bin/env bash
# FlashAttention-4 and its CuTe DSL for a GPU machine without a package index (the H200 device),
# in two folders that each fit one `run` call's 64 MiB with the working tree:
#   .whl-fa4/1: the small wheels and the first part of nvidia-cutlass-dsl-libs-cu13 (92 MB)
#   .whl-fa4/2: the rest of it
# On the device, in two calls of one warm lease: call 1 carries [".whl-fa4/1"] and copies it to
# /tmp/fa4; call 2 carries [".whl-fa4/2"], joins the parts and installs everything:
#   mkdir -p /tmp/fa4 && cp .whl-fa4/1/* /tmp/fa4/                                    # call 1
#   cp .whl-fa4/2/* /tmp/fa4/ && cat /tmp/fa4/libs.part-* > /tmp/fa4/$(cat /tmp/fa4/libs.name) \
#     && rm /tmp/fa4/libs.part-* && python3 -m pip install -q --no-index --no-deps --target \
#     /tmp/site /tmp/fa4/*.whl                                                          # call 2
# The CuTe DSL's Python package sits in nvidia_cutlass_dsl/dsl_packages, put on sys.path by a
# .pth file, which a --target folder on PYTHONPATH does not read: device_call.sh adds it (all
# wheels go in with one pip command, since pip --target skips a folder that already exists).
# The pins are the ones sandboxes/blackwell/compose.yaml installs. Usage: bash scripts/fa4_device_wheels.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=.whl-fa4
rm -rf "$out" && mkdir -p "$out/1" "$out/2" "$out/all"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux2014_x86_64 \
  --platform any -d "$out/all" \
  flash-attn-4==4.0.0b36 nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1 \
  nvidia-cutlass-dsl-libs-cu13==4.8.1 nvidia-cutlass-dsl-libs-core==4.8.1 quack-kernels==0.6.5 apache-tvm-ffi==0.1.15.post2 \
  torch-c-dlpack-ext==0.1.5 'cuda-bindings>=13,<14' protobuf
libs=$(ls "$out"/all/nvidia_cutlass_dsl_libs_cu13-*.whl)
basename "$libs" > "$out/1/libs.name"
split -b 36M "$libs" "$out/all/libs.part-"
mv "$out"/all/libs.part-aa "$out/1/" && mv "$out"/all/libs.part-* "$out/2/" && rm "$libs"
mv "$out"/all/*.whl "$out/1/" && rmdir "$out/all"
du -sh "$out/1" "$out/2"
