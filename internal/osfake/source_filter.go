package osfake

import (
	"encoding/json"
	"strings"
)

// _source filtering: the _source option of a search (off, or include and
// exclude patterns) and the filtered source a hit renders.

// sourceFilter is the _source option: off, or include and exclude
// patterns on dotted paths, where * matches any characters. A filtered
// source is re-encoded, so its keys come out sorted.
type sourceFilter struct {
	off                bool
	includes, excludes []string
}

func parseSourceFilter(v any) (sourceFilter, *osError) {
	strs := func(v any) ([]string, *osError) {
		switch x := v.(type) {
		case string:
			return []string{x}, nil
		case []any:
			out := make([]string, 0, len(x))
			for _, e := range x {
				s, ok := e.(string)
				if !ok {
					return nil, parsingException("[_source] patterns must be strings")
				}
				out = append(out, s)
			}
			return out, nil
		case nil:
			return nil, nil
		}
		return nil, parsingException("[_source] patterns must be strings")
	}
	switch x := v.(type) {
	case bool:
		return sourceFilter{off: !x}, nil
	case string, []any:
		inc, err := strs(x)
		return sourceFilter{includes: inc}, err
	case map[string]any:
		var f sourceFilter
		var err *osError
		for k, val := range x {
			switch k {
			case "includes", "include":
				f.includes, err = strs(val)
			case "excludes", "exclude":
				f.excludes, err = strs(val)
			default:
				err = parsingException("Unknown key for a " + tokenName(val) + " in [" + k + "].")
			}
			if err != nil {
				return f, err
			}
		}
		return f, nil
	}
	return sourceFilter{}, parsingException("[_source] must be a boolean, string, array or object")
}

func (f sourceFilter) render(d *doc) json.RawMessage {
	if f.off {
		return nil
	}
	if len(f.includes) == 0 && len(f.excludes) == 0 {
		return d.source
	}
	b, err := json.Marshal(f.object(d.fields, "", len(f.includes) == 0))
	if err != nil {
		return d.source
	}
	return b
}

func anyPattern(patterns []string, path string) bool {
	for _, p := range patterns {
		if wildcard(p, path) {
			return true
		}
	}
	return false
}

// mayIncludeBelow reports whether an include pattern could match a path
// under the object at path.
func (f sourceFilter) mayIncludeBelow(path string) bool {
	pre := path + "."
	for _, p := range f.includes {
		lit, _, star := strings.Cut(p, "*")
		if strings.HasPrefix(lit, pre) || star && strings.HasPrefix(pre, lit) {
			return true
		}
	}
	return false
}

func (f sourceFilter) object(m map[string]any, prefix string, all bool) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		path := prefix + k
		if anyPattern(f.excludes, path) {
			continue
		}
		in := all || anyPattern(f.includes, path)
		if !in && !f.mayIncludeBelow(path) {
			continue
		}
		if fv, keep := f.value(v, path, in); keep {
			out[k] = fv
		}
	}
	return out
}

func (f sourceFilter) value(v any, path string, in bool) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		sub := f.object(x, path+".", in)
		return sub, in || len(sub) > 0
	case []any:
		var out []any
		for _, e := range x {
			if fv, keep := f.value(e, path, in); keep {
				out = append(out, fv)
			}
		}
		return out, in || len(out) > 0
	}
	return v, in
}
