package osfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// seedDoc is a document stored straight into the emulator's shards.
type seedDoc struct {
	id, routing, source string
}

// seed stores docs in an existing index white-box, the way an index
// request would place them (shardFor(routing, id), dynamic mapping), but
// without making them searchable: that takes a refresh, explicit or
// periodic. It lets the search tests run without _bulk.
func seed(tb testing.TB, s *Server, indexName string, docs ...seedDoc) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, ok := s.indices[indexName]
	if !ok {
		tb.Fatalf("seed: no index %q", indexName)
	}
	for _, sd := range docs {
		var fields map[string]any
		dec := json.NewDecoder(bytes.NewReader([]byte(sd.source)))
		dec.UseNumber()
		if err := dec.Decode(&fields); err != nil {
			tb.Fatalf("seed %s: %v", sd.id, err)
		}
		if err := ix.mapping.addDynamic(fields); err != nil {
			tb.Fatalf("seed %s: %v", sd.id, err)
		}
		sh := ix.shards[ix.shardFor(sd.routing, sd.id)]
		sh.put(&doc{id: sd.id, routing: sd.routing, source: json.RawMessage(sd.source), fields: fields, version: 1, term: 1})
	}
}

// unseed deletes documents white-box, as a delete request would.
func unseed(tb testing.TB, s *Server, indexName string, routing string, ids ...string) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	ix := s.indices[indexName]
	for _, id := range ids {
		ix.shards[ix.shardFor(routing, id)].remove(id, 2, s.now())
	}
}

// seedIndex creates an index with the given settings and mappings body,
// seeds docs and refreshes, and returns the index name. It needs the
// emulator.
func seedIndex(tg *target, base, body string, docs ...seedDoc) string {
	tg.t.Helper()
	tg.needFake()
	name := tg.name(base)
	tg.mustDo(200, "PUT", "/"+name, body)
	seed(tg.t, tg.fake.Server, name, docs...)
	tg.mustDo(200, "POST", "/"+name+"/_refresh", "")
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
