#!/usr/bin/env bash
# Unpack llama-cpp-python's source distribution into DIR with its x86-64 CPU kernels cut to VARIANTS.
#
# Why: llama.cpp's GGML_CPU_ALL_VARIANTS builds fourteen x86 variants of its CPU kernels (half an hour
# on 2 cores) and CMake has no switch to build fewer. Three cover the CPUs we run on: haswell (AVX2:
# AMD Zen 2/3, Intel since 2013), skylakex (AVX-512) and zen4 (AVX-512 with VNNI, VBMI and BF16: AMD
# Zen 4/5 and Intel since Sapphire Rapids, less AMX, whose kernels have crashed). The other variants'
# lines are commented out of ggml's CMakeLists before the build; llm/llama_backends.py loads the best
# variant left at run time.
#
# usage: llama_cpp_source.sh REQUIREMENT DIR "VARIANT ..."   (prints the unpacked source folder)
set -euo pipefail
requirement=$1 dir=$2 variants=$3
rm -rf "$dir" && mkdir -p "$dir"
python -m pip download --quiet --no-deps --no-binary :all: -d "$dir" "$requirement" >&2
tar -xzf "$dir"/*.tar.gz -C "$dir"
source=$(find "$dir" -mindepth 1 -maxdepth 1 -type d | head -n 1)
cmake_lists="$source/vendor/llama.cpp/ggml/src/CMakeLists.txt"
keep=$(echo "$variants" | tr -s ' ' '|')
# Calls of the variant function (not its definition, not the _impl it calls): keep the chosen x86 ones.
sed -E -i "/^[[:space:]]*ggml_add_cpu_backend_variant\((${keep})[[:space:])]/! s/^([[:space:]]*)(ggml_add_cpu_backend_variant\()/\1# \2/" "$cmake_lists"
built=$(grep -cE "^[[:space:]]*ggml_add_cpu_backend_variant\(" "$cmake_lists" || true)
wanted=$(echo "$variants" | wc -w)
if [ "$built" -ne "$wanted" ]; then
  echo "llama_cpp_source.sh: $built of the $wanted variants ($variants) found in $cmake_lists" >&2
  exit 1
fi
echo "$source"
