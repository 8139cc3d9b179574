package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"

	"github.com/geoshard/geoshard/bulk"
)

// The commands' first word with OpenSearch: which engine and version the
// nodes run (bulk.Admin.Engine), refused unless geoshard runs on it
// (bulk.CheckEngine), before the command does anything else.
//
// A node that cannot say is not a refusal: a user without the cluster
// monitor permission gets 401 or 403 from GET /, and the command logs
// that the version went unchecked and goes on, as the rest of its work
// may need no such permission. A node that does not answer is what the
// command would meet with its own first request: CheckEngine fails with
// the request's error, as reshard and search do on their first request;
// AwaitEngine waits for it, as ingest waits for OpenSearch at start.

// awaitEngineBackoff spaces AwaitEngine's attempts, as ingest spaces the
// start-up's waits for the brokers.
var awaitEngineBackoff = bulk.Backoff{Initial: 250 * time.Millisecond, Max: 10 * time.Second}

// CheckEngine reads the engine the nodes run, once, and logs it at Info.
// It refuses an engine geoshard does not run on with an error of one line
// that names it and what is supported; an OpenSearch newer than tested is
// logged as a warning instead when --allow-untested-opensearch is set. A
// request that fails (no answer, or a status other than 401 and 403) is
// returned, wrapped.
func (cf *ClientFlags) CheckEngine(ctx context.Context, client *opensearch.Client, log *slog.Logger) error {
	e, err := bulk.NewAdmin(client).Engine(ctx)
	return cf.judge(e, err, log)
}

// AwaitEngine is CheckEngine for a command that waits for OpenSearch at
// start: while the nodes do not answer, or answer 429 or a 5xx
// (bulk.Transient), it asks again with backoff, logging each failure,
// until they answer or ctx ends.
func (cf *ClientFlags) AwaitEngine(ctx context.Context, client *opensearch.Client, log *slog.Logger) error {
	admin := bulk.NewAdmin(client)
	var e bulk.Engine
	attempt := 0
	err := bulk.Retry(ctx, awaitEngineBackoff, bulk.Transient,
		func(err error, wait time.Duration) {
			attempt++
			log.Warn("request failed; retrying", "step", "read the engine's version", "attempt", attempt, "in", wait, "error", err)
		},
		func() (err error) {
			e, err = admin.Engine(ctx)
			return err
		})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return cf.judge(e, err, log)
}

// judge decides on the engine e read, or on the error of reading it.
func (cf *ClientFlags) judge(e bulk.Engine, err error, log *slog.Logger) error {
	nodes := strings.Join(cf.c.Addresses, ",")
	var ae *bulk.APIError
	if errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden) {
		log.Warn("cannot read the OpenSearch version (GET / needs the cluster monitor permission); going on unchecked",
			"nodes", nodes, "status", ae.Status, "error", err)
		return nil
	}
	if err == nil {
		err = bulk.CheckEngine(e)
	}
	var ee *bulk.EngineError
	switch {
	case err == nil:
		log.Info("talking to OpenSearch", "version", e.Version, "nodes", nodes)
		return nil
	case !errors.As(err, &ee):
		return fmt.Errorf("read the engine's version at %s: %w", nodes, err)
	case ee.Problem != bulk.EngineUntested:
		return fmt.Errorf("--opensearch %s: %w", nodes, err)
	case !cf.allowUntested:
		return fmt.Errorf("--opensearch %s: %w; --allow-untested-opensearch runs on it anyway", nodes, err)
	}
	log.Warn("OpenSearch is newer than geoshard is tested with; going on as --allow-untested-opensearch asks",
		"version", e.Version, "supported", bulk.SupportedEngines(), "nodes", nodes)
	return nil
}
