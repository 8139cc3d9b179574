package osfake

import (
	"strings"
)

// has_parent and has_child: the parent-join module's queries. A parent and
// its children live on one shard (the children are routed to their
// parent's), and the server joins them per shard: a child matches
// has_parent when its parent on that shard matches the inner query, a
// parent matches has_child when enough of its children on that shard
// match. The emulator binds the inner query, runs it over the shard's
// searchable documents once per request, and keeps the matching ids per
// shard. Scores are constant (score_mode and "score" are accepted and do
// not change the order), and the inner query sees the shards' current
// refreshed state even under a point in time.

type hasParentQuery struct {
	parentType     string
	inner          query
	ignoreUnmapped bool
}

type hasChildQuery struct {
	childType                string
	inner                    query
	minChildren, maxChildren int
	ignoreUnmapped           bool
}

func parseHasParent(body any) (query, *osError) {
	m, ok := body.(map[string]any)
	if !ok {
		return nil, parsingException("[has_parent] query malformed, no start_object after query name")
	}
	q := &hasParentQuery{}
	for _, k := range sortedNames(m) {
		v := m[k]
		switch k {
		case "parent_type", "type":
			q.parentType, _ = v.(string)
		case "query":
			inner, err := parseQuery(v)
			if err != nil {
				return nil, err
			}
			q.inner = inner
		case "ignore_unmapped":
			q.ignoreUnmapped = v == true
		case "score", "inner_hits", "boost", "_name":
		default:
			return nil, parsingException("[has_parent] query does not support [" + k + "]")
		}
	}
	if q.inner == nil {
		return nil, parsingException("[has_parent] query requires 'query' field")
	}
	if q.parentType == "" {
		return nil, parsingException("[has_parent] query requires 'parent_type' field")
	}
	return q, nil
}

func parseHasChild(body any) (query, *osError) {
	m, ok := body.(map[string]any)
	if !ok {
		return nil, parsingException("[has_child] query malformed, no start_object after query name")
	}
	q := &hasChildQuery{minChildren: 1}
	for _, k := range sortedNames(m) {
		v := m[k]
		switch k {
		case "type", "child_type":
			q.childType, _ = v.(string)
		case "query":
			inner, err := parseQuery(v)
			if err != nil {
				return nil, err
			}
			q.inner = inner
		case "ignore_unmapped":
			q.ignoreUnmapped = v == true
		case "min_children", "max_children":
			n, ok := toNum(v)
			if !ok || n.f < 0 || n.f != float64(int(n.f)) {
				return nil, parsingException("[has_child] [" + k + "] must be a non-negative integer")
			}
			if k == "min_children" {
				q.minChildren = int(n.f)
			} else {
				q.maxChildren = int(n.f)
			}
		case "score_mode", "inner_hits", "boost", "_name":
		default:
			return nil, parsingException("[has_child] query does not support [" + k + "]")
		}
	}
	if q.inner == nil {
		return nil, parsingException("[has_child] query requires 'query' field")
	}
	if q.childType == "" {
		return nil, parsingException("[has_child] query requires 'type' field")
	}
	if q.maxChildren > 0 && q.maxChildren < q.minChildren {
		return nil, &osError{Status: 400, Type: "illegal_argument_exception", Reason: "[has_child] 'max_children' is less than 'min_children'"}
	}
	return q, nil
}

func (q *hasParentQuery) score() float64 { return 1 }
func (q *hasChildQuery) score() float64  { return 1 }

// joinOf is a document's relation in the join field at path, and its
// parent's id for a child.
func joinOf(d *doc, path []string) (name, parent string) {
	walkPath(d.fields, path, func(v any) bool {
		switch x := v.(type) {
		case string:
			name = x
		case map[string]any:
			name, _ = x["name"].(string)
			parent = scalarString(x["parent"])
		}
		return false
	})
	return name, parent
}

func (q *hasParentQuery) bind(ix *index) (matcher, *osError) {
	j := ix.mapping.join
	if j == nil {
		return unmappedJoin(q.ignoreUnmapped, "[has_parent] no join field has been configured")
	}
	children, ok := j.relations[q.parentType]
	if !ok {
		return unmappedJoin(q.ignoreUnmapped, "[has_parent] join field ["+j.name+"] doesn't hold ["+q.parentType+"] as a parent")
	}
	inner, err := q.inner.bind(ix)
	if err != nil {
		return nil, err
	}
	path := strings.Split(j.name, ".")
	parents := make([]map[string]bool, len(ix.shards))
	for i := range parents {
		parents[i] = map[string]bool{}
	}
	eachJoined(ix, path, q.parentType, inner, func(shard int, id, _ string) { parents[shard][id] = true })
	isChild := map[string]bool{}
	for _, c := range children {
		isChild[c] = true
	}
	return func(d *doc) bool {
		name, parent := joinOf(d, path)
		return isChild[name] && parents[ix.shardFor(d.routing, d.id)][parent]
	}, nil
}

func (q *hasChildQuery) bind(ix *index) (matcher, *osError) {
	j := ix.mapping.join
	if j == nil {
		return unmappedJoin(q.ignoreUnmapped, "[has_child] no join field has been configured")
	}
	parentType, ok := j.parentOf(q.childType)
	if !ok {
		return unmappedJoin(q.ignoreUnmapped, "[has_child] join field ["+j.name+"] doesn't hold ["+q.childType+"] as a child")
	}
	inner, err := q.inner.bind(ix)
	if err != nil {
		return nil, err
	}
	path := strings.Split(j.name, ".")
	counts := make([]map[string]int, len(ix.shards))
	for i := range counts {
		counts[i] = map[string]int{}
	}
	eachJoined(ix, path, q.childType, inner, func(shard int, _, parent string) { counts[shard][parent]++ })
	return func(d *doc) bool {
		if name, _ := joinOf(d, path); name != parentType {
			return false
		}
		n := counts[ix.shardFor(d.routing, d.id)][d.id]
		return n >= max(q.minChildren, 1) && (q.maxChildren == 0 || n <= q.maxChildren)
	}, nil
}

// unmappedJoin answers a join query (has_parent, has_child, parent_id)
// whose index lacks the join field or relation it names: ignore_unmapped
// turns the server's shard failure into a query that matches nothing, so
// one search can span indices with and without the join.
func unmappedJoin(ignoreUnmapped bool, reason string) (matcher, *osError) {
	if ignoreUnmapped {
		return matchNone, nil
	}
	return nil, queryShardException(reason)
}

// eachJoined hands seen every searchable document of relation that inner
// matches, with its shard, id and parent id. The join is made shard by
// shard because a child is routed to its parent's shard: a match on one
// shard says nothing about the documents of another.
func eachJoined(ix *index, path []string, relation string, inner matcher, seen func(shard int, id, parent string)) {
	for i, sh := range ix.shards {
		for id, d := range sh.searchable {
			if name, parent := joinOf(d, path); name == relation && inner(d) {
				seen(i, id, parent)
			}
		}
	}
}
