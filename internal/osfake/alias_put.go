package osfake

import (
	"encoding/json"
	"net/http"
	"strings"
)

// handlePutAlias serves PUT|POST /{index}/_alias/{name}: an add action
// whose options come from the optional body. RestIndexPutAliasAction reads
// that body by hand, not with the _aliases parsers, so its errors are
// plain: "unknown field [x]" for any other key or a filter that is not an
// object, and the parser's own complaint for a boolean that is not one.
// "index" and "alias" in the body replace those of the path.
func (s *Server) handlePutAlias(w http.ResponseWriter, q *request) {
	var body map[string]any
	if err := decodeBody(q, &body); err != nil {
		writeError(w, err)
		return
	}
	indices, alias := strings.Split(q.vars["index"], ","), q.vars["name"]
	spec := map[string]any{}
	for _, k := range sortedNames(body) {
		v := body[k]
		_, isObject := v.(map[string]any)
		_, isArray := v.([]any)
		switch {
		case k == "filter" && isObject:
			spec[k] = v
		case isObject || isArray:
			writeError(w, illegalArgument("unknown field ["+k+"]"))
			return
		case k == "index":
			indices = strings.Split(scalarString(v), ",")
		case k == "alias":
			alias = scalarString(v)
		case k == "routing", k == "index_routing", k == "search_routing":
			if v != nil {
				spec[k] = scalarString(v)
			}
		case k == "is_write_index", k == "is_hidden":
			b, err := parserBoolean(s.dialect, v)
			if err != nil {
				writeError(w, err)
				return
			}
			spec[k] = b
		default:
			writeError(w, illegalArgument("unknown field ["+k+"]"))
			return
		}
	}
	if strings.Contains(scalarString(spec["routing"])+scalarString(spec["index_routing"]), ",") {
		writeError(w, severalIndexRoutings(alias))
		return
	}
	meta, err := parseAliasSpec(spec)
	if err != nil {
		writeError(w, err)
		return
	}
	s.applyAliasActions(w, []aliasAction{{kind: "add", indices: indices, aliases: []string{alias}, meta: meta}})
}

// parserBoolean is XContentParser.booleanValue: true, false or their
// strings; a number is Jackson's error.
func parserBoolean(d *dialect, v any) (bool, *osError) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		return strictBool(x)
	case json.Number:
		tok := "VALUE_NUMBER_INT"
		if strings.ContainsAny(x.String(), ".eE") {
			tok = "VALUE_NUMBER_FLOAT"
		}
		return false, d.notBoolean(tok)
	}
	return false, d.notBoolean(tokenName(v))
}
