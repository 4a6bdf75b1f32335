#!/usr/bin/env bash
# Fetch the Apache Kafka jars the compatibility tests run (tests/apache_kafka/), once per version, into
# .cache/kafka/<version>/ (ignored by git). A version whose directory holds the `.complete` stamp is skipped, so
# `make test` pays for Maven only on a fresh clone. Installs Maven and a JDK with apt-get where missing.
#
#   tools/kafka/fetch.sh              # every version in KAFKA_VERSIONS
#   tools/kafka/fetch.sh 4.4.0        # one version
#   tools/kafka/fetch.sh spark        # Spark's Kafka connector only (samsa demo --connector kafka runs this)
#   tools/kafka/fetch.sh apps         # Kafka Streams and Connect only (tools/kafka/apps-pom.xml)
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
  [ "$version" = spark ] || [ "$version" = apps ] && continue
  [ -f "$CACHE/$version/.complete" ] || need_fetch="$need_fetch $version"
done
# Spark's own Kafka connector for the installed PySpark's Spark (tests/apache_kafka/test_spark_connector.py), into
# .cache/spark-kafka/<version>/: only its own jars and kafka-clients/commons-pool2 (PySpark ships Spark, Scala, Hadoop).
# Maven Central serves no connector 4.3.x for PySpark 4.3.0: the newest served, 4.2.0, is used.
SPARK_KAFKA_VERSION=${SPARK_KAFKA_VERSION:-4.2.0}
SPARK_CACHE=${SAMSA_SPARK_KAFKA_CACHE:-.cache/spark-kafka}
if [ $# = 0 ] || [[ " $* " == *" spark "* ]]; then
  [ -f "$SPARK_CACHE/$SPARK_KAFKA_VERSION/.complete" ] || need_fetch="$need_fetch spark"
fi
# Kafka Streams (with its examples) and Kafka Connect (with the file connectors), into .cache/kafka-apps/<version>/
APPS_VERSION=${KAFKA_APPS_VERSION:-4.3.1}  # tests/apache_kafka/jars.py has the same (KAFKA_APPS)
APPS_CACHE=${SAMSA_KAFKA_APPS_CACHE:-.cache/kafka-apps}
if [ $# = 0 ] || [[ " $* " == *" apps "* ]]; then
  [ -f "$APPS_CACHE/$APPS_VERSION/.complete" ] || need_fetch="$need_fetch apps"
fi
# a JDK even when nothing is to be fetched: tests/apache_kafka/AdminProbe.java runs as a single-file source program,
# which a JRE cannot compile
[ -n "$need_fetch" ] || command -v javac >/dev/null 2>&1 || need_fetch=" "
[ -n "$need_fetch" ] || exit 0

if ! command -v mvn >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
  echo "installing Maven and a JDK"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq maven openjdk-17-jdk-headless >/dev/null
fi

for version in $need_fetch; do
  if [ "$version" = apps ]; then
    dir="$APPS_CACHE/$APPS_VERSION"
    echo "fetching Kafka Streams and Connect $APPS_VERSION jars into $dir"
    rm -rf "$dir.partial"
    mvn -q -B -Dstyle.color=never -f tools/kafka/apps-pom.xml -Dkafka.version="$APPS_VERSION" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$(realpath -m "$dir.partial")"
    touch "$dir.partial/.complete"
    rm -rf "$dir"
    mv "$dir.partial" "$dir"
    continue
  fi
  if [ "$version" = spark ]; then
    dir="$SPARK_CACHE/$SPARK_KAFKA_VERSION"
    echo "fetching Spark's Kafka connector $SPARK_KAFKA_VERSION jars into $dir"
    rm -rf "$dir.partial"
    mvn -q -B -Dstyle.color=never -f tools/kafka/spark-pom.xml -Dspark.version="$SPARK_KAFKA_VERSION" \
      dependency:copy-dependencies -DincludeScope=runtime \
      -DincludeGroupIds=org.apache.spark,org.apache.kafka,org.apache.commons \
      -DoutputDirectory="$(realpath -m "$dir.partial")"
    touch "$dir.partial/.complete"
    rm -rf "$dir"
    mv "$dir.partial" "$dir"
    continue
  fi
  dir="$CACHE/$version"
  echo "fetching Apache Kafka $version jars into $dir"
  rm -rf "$dir.partial"
  mvn -q -B -Dstyle.color=never -f tools/kafka/pom.xml -Dkafka.version="$version" \
    dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$(realpath -m "$dir.partial")"
  touch "$dir.partial/.complete"
  rm -rf "$dir"
  mv "$dir.partial" "$dir"
done
