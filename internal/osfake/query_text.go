package osfake

import (
	"strings"
	"unicode"
)

// Full-text queries: match, and the emulator's analyser.

// matchQuery is an analysed match: on a text field the query text is
// tokenised and a document matches if it holds any token (operator "or")
// or all of them ("and"); on other fields it is a term query.
type matchQuery struct {
	field string
	text  any
	and   bool
}

func parseMatch(body any) (query, *osError) {
	field, spec, err := singleField("match", body)
	if err != nil {
		return nil, err
	}
	q := &matchQuery{field: field, text: spec}
	if m, ok := spec.(map[string]any); ok {
		q.text = m["query"]
		if q.text == nil {
			return nil, parsingException("No text specified for text query")
		}
		if op, _ := m["operator"].(string); strings.EqualFold(op, "and") {
			q.and = true
		}
	}
	return q, nil
}

func (q *matchQuery) score() float64 { return 1 }

func (q *matchQuery) bind(ix *index) (matcher, *osError) {
	f := resolveField(ix, q.field)
	if f.kind != kindText {
		return (&termQuery{field: q.field, values: []any{q.text}, kind: "match"}).bind(ix)
	}
	s, _ := toKeyword(q.text)
	want := tokens(s, nil)
	if len(want) == 0 {
		return matchNone, nil
	}
	return func(d *doc) bool {
		seen := make(map[string]bool, len(want))
		f.eachKey(d, func(k string) bool {
			for _, w := range want {
				if k == w {
					seen[w] = true
				}
			}
			done := !q.and && len(seen) > 0 || len(seen) == len(want)
			return !done
		})
		if q.and {
			return len(seen) == len(want)
		}
		return len(seen) > 0
	}, nil
}

// tokens is the emulator's analyser: lowercase, split on every rune that
// is not a letter or a digit.
func tokens(s string, dst []string) []string {
	start := -1
	for i, r := range s {
		word := unicode.IsLetter(r) || unicode.IsDigit(r)
		if word && start < 0 {
			start = i
		}
		if !word && start >= 0 {
			dst = append(dst, strings.ToLower(s[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		dst = append(dst, strings.ToLower(s[start:]))
	}
	return dst
}
