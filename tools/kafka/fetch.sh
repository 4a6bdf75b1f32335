#!/usr/bin/env bash
# Fetch the Apache Kafka jars the compatibility tests run (tests/apache_kafka/), once per version, into
# .cache/kafka/<version>/ (ignored by git). A version whose directory holds the `.complete` stamp is skipped, so
# `make test` pays for Maven only on a fresh clone. Installs Maven and a JDK with apt-get where missing.
#
#   tools/kafka/fetch.sh              # every version in KAFKA_VERSIONS
#   tools/kafka/fetch.sh 4.4.0        # one version
#
# KAFKA_VERSIONS: the newest Kafka 4.x (KRaft) and the last 3.x (3.9, ZooKeeper mode too). Tests read the same
# variables (tests/apache_kafka/jars.py): keep the two lists in step.
set -euo pipefail
cd "$(dirname "$0")/../.."

KAFKA_VERSIONS=${KAFKA_VERSIONS:-"4.4.0 3.9.2"}
CACHE=${SAMSA_KAFKA_CACHE:-.cache/kafka}
versions=${*:-$KAFKA_VERSIONS}

need_fetch=""
for version in $versions; do
  [ -f "$CACHE/$version/.complete" ] || need_fetch="$need_fetch $version"
done
[ -n "$need_fetch" ] || exit 0

if ! command -v mvn >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1; then
  echo "installing Maven and a JDK"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq maven openjdk-17-jdk-headless >/dev/null
fi

for version in $need_fetch; do
  dir="$CACHE/$version"
  echo "fetching Apache Kafka $version jars into $dir"
  rm -rf "$dir.partial"
  mvn -q -B -Dstyle.color=never -f tools/kafka/pom.xml -Dkafka.version="$version" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$(realpath -m "$dir.partial")"
  touch "$dir.partial/.complete"
  rm -rf "$dir"
  mv "$dir.partial" "$dir"
done
