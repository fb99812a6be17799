# attnbook: the two commands of the README are `make book` and `make test`.
#   make book     create .venv, install, execute every chapter (quick profile) into book/, render _build/html
#   make test     create .venv, install, run the test suite
#   make bench    speed and memory benchmarks (ratios measured in one run) -> benchmarks/results/
#   make pdf      print the executed book to _build/pdf/attnbook.pdf (published beside the HTML)
# Variables: PROFILE (smoke|quick|paper), ATTNBOOK_DATA (data directory), PYTHON (interpreter for the venv).

PYTHON ?= python3
VENV ?= .venv
PROFILE ?= quick
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The environment as a named Jupyter kernel, "attnbook (.venv)": the chapters' notebooks ask for it by name
# (metadata.kernelspec), so JupyterLab started from this .venv runs them with this environment's Python and packages.
# Registered inside the .venv (--sys-prefix): nothing is written outside the checkout, and two checkouts never
# overwrite each other's kernel. A Jupyter installed elsewhere (VS Code, a system JupyterLab) sees it after
#   .venv/bin/python -m ipykernel install --user --name attnbook --display-name "attnbook (.venv)"
KERNEL := $(VENV)/share/jupyter/kernels/attnbook/kernel.json

# The data directory: $ATTNBOOK_DATA if set; else ./data (where `attnbook fetch` puts it);
# else a shared/data folder beside the checkout (as on the project's own machines and CI).
ifeq ($(strip $(ATTNBOOK_DATA)),)
  ATTNBOOK_DATA := $(if $(wildcard data/wiki),$(CURDIR)/data,$(if $(wildcard ../shared/data/wiki),$(abspath ../shared/data),$(CURDIR)/data))
endif
export ATTNBOOK_DATA
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false
export PYDEVD_DISABLE_FILE_VALIDATION ?= 1

.PHONY: install kernel browser data book pdf test bench chapter constraints clean lab

install: $(STAMP) $(KERNEL)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check -q torch==2.13.0
	$(BIN)/pip install --disable-pip-version-check -q -c constraints.txt -e ".[dev]"
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (attnbook)" >/dev/null
	touch $(STAMP)

kernel: $(KERNEL)

$(KERNEL): $(STAMP)
	$(BIN)/python -m ipykernel install --sys-prefix --name attnbook --display-name "attnbook (.venv)" >/dev/null

# The book's datasets: fetched from their original public sources only when a dataset folder is missing
# (on machines with a shared data folder nothing is downloaded).
DATASETS := wiki ud_ewt coref glue arct framenet glove

data: install
	@missing=""; for d in $(DATASETS); do test -d "$(ATTNBOOK_DATA)/$$d" || missing="$$missing $$d"; done; \
	if [ -n "$$missing" ]; then echo "[make] fetching$$missing into $(ATTNBOOK_DATA)"; \
	  $(BIN)/attnbook fetch --dest "$(ATTNBOOK_DATA)" $$missing; fi

book: data
	@echo "[make] data directory: $(ATTNBOOK_DATA)"
	$(BIN)/attnbook build --profile $(PROFILE) --times-json book/results/_times-$(PROFILE).json

# the whole book as one PDF (_build/pdf/attnbook.pdf, also copied beside the HTML), from the executed book/
pdf: install browser
	$(BIN)/attnbook build --no-execute --pdf

# the page checks drive a headless Chromium: Debian's (as root) or Playwright's (tools/ensure-browser)
browser: install
	@tools/ensure-browser $(BIN)/python

test: install browser
	@echo "[make] data directory: $(ATTNBOOK_DATA)"
	$(BIN)/pytest -q

bench: install
	$(BIN)/python benchmarks/run.py

# one chapter: make chapter CH=01 PROFILE=quick
chapter: install
	$(BIN)/attnbook run $(CH) --profile $(PROFILE)

# JupyterLab on the chapters' notebooks, with the attnbook kernel (install registers it)
lab: install
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) notebooks/

constraints:
	$(BIN)/pip freeze --exclude-editable | grep -v -e '^attnbook' -e ' @ ' | sed 's/^torch==.*/torch==2.13.0/' > constraints.txt.new
	mv constraints.txt.new constraints.txt

clean:
	rm -rf _build book/_failed book/results book/0*.ipynb
