package osfake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
)

// seedDoc is a document a test writes before it searches.
type seedDoc struct {
	id, routing, source string
}

// bulkBody is the NDJSON of index actions for docs. Sources may be
// written over several lines for readability; they are compacted (which
// keeps every value's spelling).
func bulkBody(docs []seedDoc) (string, error) {
	var b strings.Builder
	for _, sd := range docs {
		meta := map[string]string{"_id": sd.id}
		if sd.routing != "" {
			meta["routing"] = sd.routing
		}
		action, _ := json.Marshal(map[string]any{"index": meta})
		var src bytes.Buffer
		if err := json.Compact(&src, []byte(sd.source)); err != nil {
			return "", fmt.Errorf("source of %s: %w", sd.id, err)
		}
		b.Write(action)
		b.WriteByte('\n')
		b.Write(src.Bytes())
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// seed writes docs to an existing index through POST /{index}/_bulk with
// the real client, so the tests that use it run against a real cluster
// too. refresh is the bulk's refresh parameter: "true" makes the documents
// searchable at once; "" leaves them invisible until the next refresh,
// periodic or explicit. Any failed item fails the test.
func seed(tg *target, index, refresh string, docs ...seedDoc) {
	tg.t.Helper()
	body, err := bulkBody(docs)
	if err != nil {
		tg.t.Fatalf("seed %s: %v", index, err)
	}
	sendBulk(tg, index, refresh, body)
}

// unseed deletes documents through _bulk, as seed writes them.
func unseed(tg *target, index, refresh, routing string, ids ...string) {
	tg.t.Helper()
	var b strings.Builder
	for _, id := range ids {
		meta := map[string]string{"_id": id}
		if routing != "" {
			meta["routing"] = routing
		}
		action, _ := json.Marshal(map[string]any{"delete": meta})
		b.Write(action)
		b.WriteByte('\n')
	}
	sendBulk(tg, index, refresh, b.String())
}

// sendBulk sends an NDJSON body and fails the test unless every item
// succeeded.
func sendBulk(tg *target, index, refresh, body string) {
	tg.t.Helper()
	resp, err := tg.client.Bulk(context.Background(), opensearchapi.BulkReq{Index: index, Body: strings.NewReader(body),
		Params: opensearchapi.BulkParams{Refresh: refresh}})
	var partial *opensearchapi.PartialBulkError
	switch {
	case errors.As(err, &partial):
		tg.t.Fatalf("bulk to %s: %v; first failure: %s", index, err, itemError(partial.FailedItems[0]))
	case err != nil:
		tg.t.Fatalf("bulk to %s: %v", index, err)
	case resp.Errors:
		tg.t.Fatalf("bulk to %s: errors in %d items", index, len(resp.Items))
	}
}

// seedIndex creates an index with the given settings and mappings body,
// writes docs with refresh=true, and returns the index name.
func seedIndex(tg *target, base, body string, docs ...seedDoc) string {
	tg.t.Helper()
	name := tg.name(base)
	tg.mustDo(200, "PUT", "/"+name, body)
	seed(tg, name, "true", docs...)
	return name
}

// cellDocs is n restaurants spread over cells distinct geo_cell keys
// (cell-00, cell-01, …, doc i in cell i mod cells), each with a unique
// doc_id keyword for sorting on.
func cellDocs(n, cells int) []seedDoc {
	docs := make([]seedDoc, n)
	for i := range docs {
		id := fmt.Sprintf("r%05d", i)
		docs[i] = seedDoc{id: id, source: fmt.Sprintf(`{"doc_id":%q,"geo_cell":"cell-%02d","price_cents":%d,"open":%t}`,
			id, i%cells, 100+i, i%2 == 0)}
	}
	return docs
}

const cellMapping = `{"settings":{"number_of_shards":%d,"number_of_replicas":0},
	"mappings":{"properties":{"doc_id":{"type":"keyword"},"geo_cell":{"type":"keyword"},"price_cents":{"type":"long"},"open":{"type":"boolean"}}}}`

// hitIDs returns the _id of every hit in a search response.
func hitIDs(out map[string]any) []string {
	hits, _ := dig(out, "hits", "hits").([]any)
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = str(dig(h, "_id"))
	}
	return ids
}
