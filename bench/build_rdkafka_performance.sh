#!/bin/sh
# Build librdkafka's examples/rdkafka_performance (the C client bench_broker.py --c-client runs) against the
# librdkafka that the installed confluent-kafka wheel bundles, from a librdkafka source tree given as $1: the source
# of that version or the nearest (`apt-get source librdkafka`, or a checkout of confluentinc/librdkafka at a tag).
# Only the example is compiled; its source's own headers are used, and the wheel's library is linked with an rpath.
# Nothing is installed. Used on 2026-11-28: the v2.15.0 tag (the newest tag in the stored mirror) against the
# wheel's librdkafka 2.16.0; the example uses only the public API, which 2.16 keeps.
#
#   sh bench/build_rdkafka_performance.sh /path/to/librdkafka [out=/tmp/rdkafka_performance]
set -eu
src=${1:?usage: build_rdkafka_performance.sh LIBRDKAFKA_SOURCE_DIR [OUT]}
out=${2:-/tmp/rdkafka_performance}
python=${PYTHON:-.venv/bin/python}
libs=$("$python" -c 'import confluent_kafka, os; print(os.path.join(os.path.dirname(confluent_kafka.__file__), os.pardir, "confluent_kafka.libs"))')
lib=$(ls "$libs"/librdkafka-*.so* | head -n 1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# rd.h includes ../config.h, written by librdkafka's configure; the example needs none of its feature checks
mkdir -p "$work/src"
printf '#define _GNU_SOURCE 1\n' > "$work/config.h"
cc -O2 -I"$src/src" -I"$work/src" -o "$out" "$src/examples/rdkafka_performance.c" \
  "$lib" -Wl,-rpath,"$(cd "$libs" && pwd)" -lpthread -lm
"$out" -h 2>&1 | grep -i "librdkafka version" || true
echo "built $out"
