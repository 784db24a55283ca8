# trawl: build, crawl, test, benchmark. `make help` lists the targets.
#
# Everything crawls only the project's own local test web on loopback.

CARGO     ?= cargo
CONFIG    ?= data/trawl.toml
CRAWL_DIR ?= crawl
ROUNDS    ?= 3
BIN       := target/release
VENV      := .venv
PYTHON    := $(VENV)/bin/python

# The local test web: where it listens (the one place to change its port: `make web`,
# the demo and every stage run by make map *.web.test there) and which web it serves
# (the demo's, so that `make web` + `make round` or `make crawl` go on with a demo crawl).
WEB_ADDR  ?= 127.0.0.1:18080
WEB_FLAGS ?= --seed 42 --hosts 20 --pages 40 --sitemaps

# Stage binaries read these (clap flags override them).
STAGE_ENV := TRAWL_CONFIG=$(CONFIG) TRAWL_CRAWL_DIR=$(CRAWL_DIR) TRAWL_SET='fetch.resolve.*.web.test=$(WEB_ADDR)'

.PHONY: help build round crawl demo web test test-rust test-queries bench lint docs clean test-python cluster-venv cluster-demo cluster-bench chromium poppler java docsites

help:
	@echo "make build   - build trawl (one executable; every stage also runs under its own name, a link to it) and the test web and benchmarks"
	@echo "make demo    - start the local test web, inject its seeds, run $(ROUNDS) rounds, print what was crawled"
	@echo "make round   - one round, the one crawl runs (each step as trawl plan next gives it), each stage a process, on CRAWL_DIR=$(CRAWL_DIR)"
	@echo "make crawl   - the crawl driver: ROUNDS=$(ROUNDS) rounds on CRAWL_DIR=$(CRAWL_DIR) (SEEDS=FILE to inject first), stops when nothing is due"
	@echo "make web     - serve the demo's test web in the foreground on WEB_ADDR=$(WEB_ADDR) (what make round/crawl crawl)"
	@echo "make test    - unit and integration tests, then the README's DuckDB queries against a demo crawl"
	@echo "make bench   - benchmarks (fetch, parse, crawldb, graph, the scale pipeline vs DuckDB), printing figures"
	@echo "make cluster-demo  - the demo on a Spark standalone cluster (master + 2 workers on 127.0.0.1), compared with one process"
	@echo "make cluster-bench - one process vs Spark with 1 and 2 workers (updatedb, parse, linkdb) and Spark's per-task overhead"
	@echo "make cluster-venv  - install pyspark into the virtualenv (make test and the cluster targets do it)"
	@echo "make lint    - cargo fmt --check and clippy -D warnings"
	@echo "make docs    - rewrite the docs tables generated from the command registry (README's commands, the locks)"
	@echo "make clean   - remove build output, crawls and the Python virtualenv"

# One executable, `trawl`; `trawl --install-links` names every stage after it in
# $(BIN) (inject, fetch, ...: links to trawl), so the stage names run as before.
build:
	$(CARGO) build --release --bins
	$(BIN)/trawl --install-links

# round.sh exits 3 when nothing was due (not an error for make), any other non-zero
# code when a stage failed (make stops with an error).
round: build
	@$(STAGE_ENV) scripts/round.sh || { rc=$$?; if [ $$rc -eq 3 ]; then echo "make round: no URLs were due (round.sh exit code 3)"; else exit $$rc; fi; }

crawl: build
	$(STAGE_ENV) $(BIN)/crawl --rounds $(ROUNDS) $(if $(SEEDS),--seeds $(SEEDS))

demo: build
	$(STAGE_ENV) DEMO_ADDR=$(WEB_ADDR) WEB_FLAGS="$(WEB_FLAGS)" scripts/demo.sh

web: build
	$(BIN)/testweb serve --addr $(WEB_ADDR) $(WEB_FLAGS)

# The Python virtualenv with DuckDB (and warcio), used by the query tests.
$(PYTHON):
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check duckdb warcio

# moto's S3 server (tests/it/object_store.rs runs it on loopback as the crawl directory's
# object store); moto 5.2 honours conditional creates (If-None-Match: *).
MOTO := $(VENV)/bin/moto_server
$(MOTO): $(PYTHON)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check "moto[server]>=5.2,<6"

# The Delta Lake readers an analyst uses on a crawl on object storage (deltalake, the
# Python package of delta-rs; polars; pyarrow): tests/it/object_store.rs reads the crawl
# on moto's S3 with them (scripts/read_delta.py), no trawl code.
DELTA := $(VENV)/.delta-readers-installed
$(DELTA): $(PYTHON)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check 'deltalake>=1,<2' 'polars>=1,<3' 'pyarrow>=14'
	touch $@

# pyspark (4.x) for the Spark driver, cluster/trawl_spark.py, and the local cluster.
PYSPARK := $(VENV)/.pyspark-installed
$(PYSPARK): $(PYTHON)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check 'pyspark>=4,<5'
	touch $@

cluster-venv: $(PYSPARK)

# The peers of the main-text benchmark (articlebench, bench/peers/extract.py):
# trafilatura and readability-lxml from PyPI, one after the other (pip 23's resolver
# trips over their shared lxml[html-clean] extra when asked for both at once).
PEERS := $(VENV)/.article-peers-installed
$(PEERS): $(PYTHON)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check 'trafilatura>=2,<3'
	$(VENV)/bin/pip install --quiet --disable-pip-version-check 'readability-lxml>=0.8,<1'
	touch $@

cluster-demo: build $(PYSPARK)
	PYTHON=$(PYTHON) BIN=$(BIN) scripts/cluster-demo.sh

cluster-bench: build $(PYSPARK)
	PYTHON=$(PYTHON) BIN=$(BIN) scripts/cluster-bench.sh

test: test-rust test-python test-queries

# The Spark driver's own unit tests (no Spark needed).
test-python: $(PYSPARK)
	$(PYTHON) -m unittest discover -s cluster

# Headless Chromium for the browser tests (tests/it/search_web.rs, tests/it/render.rs) and
# the rendering benchmark (renderbench): Debian's package, installed when
# /usr/bin/chromium is missing and make runs as root with apt-get (the CI); otherwise
# they are skipped with a message saying how to install it.
chromium:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "make: installing Debian's chromium for the browser tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "make: /usr/bin/chromium is missing and this is not root: tests/it/search_web.rs and tests/it/render.rs will be skipped (install it with: sudo apt-get install -y chromium)"; \
	  fi; \
	fi

# Java for the Spark tests (tests/it/cluster.rs): Debian's headless JRE, installed when
# `java` is missing and make runs as root with apt-get; otherwise those tests are
# skipped (and fail under CI=true).
java:
	@if ! command -v java >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "make: installing Debian's default-jre-headless for the Spark tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq default-jre-headless >/dev/null; \
	  else \
	    echo "make: java is missing and this is not root: tests/it/cluster.rs will be skipped (sudo apt-get install -y default-jre-headless)"; \
	  fi; \
	fi

# Debian's Python and PostgreSQL documentation, the relevance benchmark's second tuning
# site and its held-out site (docs/search.md, "Measured on more sites"): installed when
# missing and make runs as root with apt-get; otherwise relbench skips them, and the
# ranking's regression test (tests/it/relevance.rs, on the PostgreSQL manual) is
# skipped (it fails under CI=true).
docsites:
	@if [ ! -f /usr/share/doc/python3.11-doc/html/index.html ] || [ ! -f /usr/share/doc/postgresql-doc-15/html/index.html ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "make: installing python3.11-doc and postgresql-doc-15 for the relevance benchmark"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3.11-doc postgresql-doc-15 >/dev/null; \
	  else \
	    echo "make: python3.11-doc or postgresql-doc-15 is missing and this is not root: relbench skips them (sudo apt-get install -y python3.11-doc postgresql-doc-15)"; \
	  fi; \
	fi

# poppler-utils' pdftotext, the reference of the document benchmark (docbench): installed
# when missing and make runs as root with apt-get; otherwise that benchmark is skipped.
poppler:
	@if ! command -v pdftotext >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "make: installing poppler-utils for the document benchmark"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq poppler-utils >/dev/null; \
	  else \
	    echo "make: pdftotext is missing and this is not root: the document benchmark will be skipped (sudo apt-get install -y poppler-utils)"; \
	  fi; \
	fi

# The Rust tests use the virtualenv's warcio to read trawl's WARC files back, its moto
# server as an S3 endpoint, (tests/it/cluster.rs) its pyspark: a Spark standalone
# cluster on 127.0.0.1, skipped when no Java is installed, and (tests/it/search_web.rs,
# tests/it/render.rs) headless Chromium.
# Every test that runs against a real component (Spark, the S3 server, Chromium,
# warcio, the shared corpora) adds a line to target/tmp/real-components.txt, printed
# after the tests; under CI=true a test whose component is missing fails instead of
# skipping.
test-rust: $(PYTHON) $(MOTO) $(DELTA) $(PYSPARK) chromium java docsites
	@rm -f target/tmp/real-components.txt
	$(CARGO) test --release
	@echo "make test: tests that ran against real components:"
	@sort -u target/tmp/real-components.txt 2>/dev/null | awk -F'\t' '{print "  " $$1 ": " $$2}' || true

test-queries: build $(PYTHON)
	$(STAGE_ENV) DEMO_ADDR=$(WEB_ADDR) WEB_FLAGS="$(WEB_FLAGS)" scripts/demo.sh
	$(PYTHON) scripts/check_queries.py README.md $(CRAWL_DIR)

# The scale benchmark compares inject and generate with DuckDB from the virtualenv.
bench: build $(PYTHON) $(PEERS) poppler chromium docsites
	PYTHON=$(PYTHON) scripts/bench.sh

# The tables of README.md and docs/architecture.md generated from the registry
# (cli::COMMANDS); `make test` fails while they differ.
docs:
	UPDATE_DOCS=1 $(CARGO) test --release --test it docs_the_

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

clean:
	$(CARGO) clean
	rm -rf $(VENV) bench-out
	@if [ -f $(CRAWL_DIR)/.trawl-demo ]; then rm -rf $(CRAWL_DIR); fi
