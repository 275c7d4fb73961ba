# Thin wrapper over CMake. `make demo` runs the main job; `make test` builds and runs ctest.
# Both first check the Debian packages (scripts/deps.sh): installed when run as root,
# otherwise the missing ones are printed with the apt-get line that installs them.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build build-qkt test demo install clean

all: build

deps:
	@sh scripts/deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# Only the qkt program (not the tests, fuzz replays or float64 libraries).
build-qkt: configure
	@cmake --build $(BUILD) -j $(JOBS) --target qkt

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE slow

# The sqrt(d_k) study on its embedded synthetic task: runs/quick/report.md, report.html and plots.
demo: build-qkt
	@$(BUILD)/qkt ablate --preset quick

# The library (libqkt, libqkt64), headers, pkg-config files, CMake package and the qkt program.
PREFIX ?= /usr/local
install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
