package bulk

import (
	"context"
	"encoding/json"
	"net/http"
)

// Index writes one document with a single-document index request (not
// _bulk), creating or replacing it, with refresh=true so that a search
// that follows sees it. It is meant for small bookkeeping documents, such
// as the state and heartbeats of a migration, not for ingest.
func (a *Admin) Index(ctx context.Context, index, id string, body []byte) error {
	return a.do(ctx, http.MethodPut, "/"+esc(index)+"/_doc/"+esc(id)+"?refresh=true", json.RawMessage(body), nil)
}
