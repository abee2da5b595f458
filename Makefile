# The front door. `make run` and `make test` install what is missing first.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX     ?= /usr/local
DATA_DIR   ?= ./firth-data

.PHONY: all build deps run quickstart test test-asan bench fuzz install clean

all: build

deps:
	@scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=$(PREFIX)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# Starts `firth server` on $(DATA_DIR) in the foreground (Ctrl-C stops it).
run: deps build
	@scripts/run-server.sh $(BUILD)/bin/firth $(DATA_DIR)

# The README's quickstart, embedded on $(DATA_DIR) (no server).
quickstart: deps build
	@scripts/quickstart.sh $(BUILD)/bin/firth $(DATA_DIR)

test: deps build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DFIRTH_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		ctest --output-on-failure -j $(JOBS)

bench: deps build
	@scripts/install-deps.sh --bench && bench/run.sh $(BUILD)

fuzz: deps
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DFIRTH_FUZZ=ON -DFIRTH_SANITIZE=ON
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	@echo "fuzz targets are in $(FUZZ_BUILD)/bin (run e.g. $(FUZZ_BUILD)/bin/fuzz_sql_parser tests/fuzz/corpus/sql_parser)"

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
