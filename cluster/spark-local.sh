#!/usr/bin/env bash
# A Spark standalone cluster on this machine, everything on 127.0.0.1: one master and
# WORKERS workers (default 2) with one core each, for make cluster-demo, the cluster
# test and make cluster-bench.
#
#   cluster/spark-local.sh start RUN_DIR [WORKERS]   start; prints the master URL
#   cluster/spark-local.sh stop RUN_DIR              stop every JVM it started
#   cluster/spark-local.sh sockets RUN_DIR [PID...]  the listening TCP sockets of the
#       cluster's processes (the daemons' process groups: executors and Python workers
#       included) and of PID and its descendants (a driver); exit code 1 when one of
#       them is not on 127.0.0.1
#
# RUN_DIR holds what a run needs and leaves: master.url (spark://127.0.0.1:PORT),
# master-ui.url, pids (one "<name> <pid>" line per daemon; each daemon leads its own
# process group, which its executors and their Python workers join), conf/ (the
# SPARK_CONF_DIR of the daemons), logs/<name>.log and work/<name>/ (the workers'
# application directories: the executors' stdout and stderr).
#
# Nothing listens beyond loopback: SPARK_LOCAL_IP=127.0.0.1 binds the master's and the
# workers' RPC ports and web UIs (and those of the executors the workers launch, which
# inherit it) to 127.0.0.1, --host 127.0.0.1 is the address they advertise, and the
# master's REST submission server is off. A driver on this machine needs
# SPARK_LOCAL_IP=127.0.0.1 too (cluster/trawl_spark.py sets spark.driver.host and
# spark.driver.bindAddress from it).
#
# Ports are free ones picked at start. `stop` terminates each daemon's process group
# (SIGTERM, then SIGKILL after 10 s), so it also ends executors a worker could not stop;
# it works after a failed start and when the daemons died already.
#
# PYTHON (default .venv/bin/python) must have pyspark (make cluster-venv); its
# spark-class and Java (JAVA_HOME or java on PATH, 17 or newer) run the daemons.
# WORKER_MEMORY (default 1g) is each worker's memory for executors.
set -euo pipefail
PYTHON=${PYTHON:-.venv/bin/python}
WORKER_MEMORY=${WORKER_MEMORY:-1g}

usage() {
  echo "usage: $0 start RUN_DIR [WORKERS] | stop RUN_DIR | sockets RUN_DIR [PID...]" >&2
  exit 2
}

# A free TCP port on 127.0.0.1 (the kernel's pick; freed again before the daemon binds it).
free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Waits until FILE contains PATTERN or the process PID died; 60 s at most.
wait_for_log() {
  local file=$1 pattern=$2 pid=$3 what=$4
  for _ in $(seq 600); do
    if grep -q "$pattern" "$file" 2>/dev/null; then
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "spark-local: $what exited during start; its log, $file:" >&2
      tail -n 30 "$file" >&2 || true
      return 1
    fi
    sleep 0.1
  done
  echo "spark-local: $what did not start within 60 s; its log, $file:" >&2
  tail -n 30 "$file" >&2 || true
  return 1
}

# Starts a daemon in its own session (so its process group holds its children too).
# Prints its pid.
start_daemon() {
  local name=$1
  shift
  setsid "$SPARK_CLASS" "$@" >"$RUN/logs/$name.log" 2>&1 </dev/null &
  local pid=$!
  echo "$name $pid" >>"$RUN/pids"
  echo "$pid"
}

stop() {
  local pids=$RUN/pids
  [ -f "$pids" ] || { echo "spark-local: nothing to stop in $RUN (no pids file)"; return 0; }
  local name pid
  while read -r name pid; do
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  done <"$pids"
  for _ in $(seq 100); do
    local alive=0
    while read -r name pid; do
      if kill -0 -- "-$pid" 2>/dev/null; then alive=1; fi
    done <"$pids"
    [ "$alive" -eq 0 ] && break
    sleep 0.1
  done
  while read -r name pid; do
    if kill -0 -- "-$pid" 2>/dev/null; then
      echo "spark-local: $name (pid $pid) did not stop on SIGTERM; killing its process group" >&2
      kill -KILL -- "-$pid" 2>/dev/null || true
    fi
  done <"$pids"
  rm -f "$pids"
  echo "spark-local: stopped the cluster of $RUN"
}

# PID and its descendants, one a line.
descendants() {
  local pid=$1 child
  echo "$pid"
  for child in $(ps -o pid= --ppid "$pid" 2>/dev/null); do
    descendants "$child"
  done
}

sockets() {
  local groups=" " pids=" " name pid line p bad=0
  if [ -f "$RUN/pids" ]; then
    while read -r name pid; do groups+="$pid "; done <"$RUN/pids"
  fi
  for pid in "$@"; do
    for p in $(descendants "$pid"); do pids+="$p "; done
  done
  while read -r line; do
    for p in $(grep -o 'pid=[0-9]*' <<<"$line" | cut -d= -f2 | sort -u); do
      local pgid
      pgid=$(ps -o pgid= -p "$p" 2>/dev/null | tr -d ' ') || continue
      if [[ $groups == *" $pgid "* || $pids == *" $p "* ]]; then
        local addr
        addr=$(awk '{print $4}' <<<"$line")
        echo "$addr $(ps -o comm= -p "$p" 2>/dev/null) pid $p"
        if ! grep -q '127\.0\.0\.1' <<<"$addr"; then
          echo "spark-local: pid $p listens on $addr, beyond loopback" >&2
          bad=1
        fi
      fi
    done
  done < <(ss -ltnpH 2>/dev/null)
  return "$bad"
}

start() {
  local workers=$1
  if [ -f "$RUN/pids" ]; then
    echo "spark-local: $RUN/pids exists: a cluster of this run directory may still run; stop it first ($0 stop $RUN)" >&2
    exit 1
  fi
  command -v java >/dev/null || [ -n "${JAVA_HOME:-}" ] || {
    echo "spark-local: no Java found (java on PATH or JAVA_HOME); Spark needs Java 17 or newer" >&2
    exit 1
  }
  local bindir
  bindir=$(cd "$(dirname "$PYTHON")" && pwd)
  SPARK_CLASS=$bindir/spark-class
  # spark-class finds SPARK_HOME with the python3 on PATH, which may not be the venv's.
  SPARK_HOME=$("$PYTHON" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))' 2>/dev/null) || {
    echo "spark-local: $PYTHON cannot import pyspark: install it into the virtualenv (make cluster-venv)" >&2
    exit 1
  }
  export SPARK_HOME
  [ -x "$SPARK_CLASS" ] || {
    echo "spark-local: $SPARK_CLASS not found: install pyspark into the virtualenv (make cluster-venv)" >&2
    exit 1
  }
  mkdir -p "$RUN/logs" "$RUN/conf" "$RUN/work"
  # The daemons log at INFO into their files (the readiness lines below are INFO).
  cat >"$RUN/conf/log4j2.properties" <<'EOF'
rootLogger.level = info
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
EOF
  export SPARK_CONF_DIR=$RUN/conf SPARK_LOCAL_IP=127.0.0.1 SPARK_MASTER_HOST=127.0.0.1
  export SPARK_DAEMON_JAVA_OPTS="-Dspark.master.rest.enabled=false ${SPARK_DAEMON_JAVA_OPTS:-}"
  # A failed start leaves nothing running.
  trap 'stop >/dev/null 2>&1' ERR

  local port ui pid
  port=$(free_port)
  ui=$(free_port)
  pid=$(start_daemon master org.apache.spark.deploy.master.Master \
    --host 127.0.0.1 --port "$port" --webui-port "$ui")
  wait_for_log "$RUN/logs/master.log" "I have been elected leader" "$pid" "the master"
  local url=spark://127.0.0.1:$port
  echo "$url" >"$RUN/master.url"
  echo "http://127.0.0.1:$ui" >"$RUN/master-ui.url"

  local i
  for i in $(seq "$workers"); do
    ui=$(free_port)
    mkdir -p "$RUN/work/worker$i"
    pid=$(start_daemon "worker$i" org.apache.spark.deploy.worker.Worker \
      --host 127.0.0.1 --webui-port "$ui" --cores 1 --memory "$WORKER_MEMORY" \
      --work-dir "$RUN/work/worker$i" "$url")
    echo "worker$i $pid" >"$RUN/logs/worker$i.pid"
  done
  for i in $(seq "$workers"); do
    read -r _ pid <"$RUN/logs/worker$i.pid"
    wait_for_log "$RUN/logs/worker$i.log" "Successfully registered with master" "$pid" "worker $i"
  done
  trap - ERR
  echo "spark-local: master $url (web UI $(cat "$RUN/master-ui.url")), $workers workers of 1 core; logs in $RUN/logs"
}

[ $# -ge 2 ] || usage
RUN=$(mkdir -p "$2" && cd "$2" && pwd)
case $1 in
  start)
    workers=${3:-2}
    [[ $workers =~ ^[1-9][0-9]*$ ]] || usage
    start "$workers"
    ;;
  stop) stop ;;
  sockets)
    shift 2
    sockets "$@"
    ;;
  *) usage ;;
esac
