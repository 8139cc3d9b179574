# geoshard — build, test, benchmark, lint.
GO ?= go

.PHONY: build test bench lint fixtures fuzz

build:
	$(GO) build ./...

test:
	$(GO) test -race -count=1 ./...

# Benchmarks for every hot path; -run '^$$' skips the tests.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Regenerate the derived fixtures under testdata/ from the bundled city data.
fixtures:
	$(GO) run ./internal/datagen/cmd/gendata -out testdata

# A short run of every fuzz target.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 30s ./router
	$(GO) test -run '^$$' -fuzz '^FuzzParseToken$$' -fuzztime 30s ./router
