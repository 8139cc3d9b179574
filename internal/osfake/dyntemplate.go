package osfake

import (
	"encoding/json"
	"regexp"
	"strings"
)

// Dynamic templates: the mapping's dynamic_templates, tried in order for
// each field dynamic mapping adds, as RootObjectMapper.findTemplate does.
// A template matches on the value's JSON type (match_mapping_type), the
// field's name (match, unmatch) and its dotted path (path_match,
// path_unmatch), with * wildcards or, under match_pattern regex, regular
// expressions; the first that matches gives the field's mapping, with
// {name} and {dynamic_type} replaced.

// dynTemplate is one parsed dynamic template.
type dynTemplate struct {
	name                                   string
	match, unmatch, pathMatch, pathUnmatch *string
	regex                                  bool
	matchType                              string // "" for any
	mapping                                map[string]any
}

// templateTypes are the JSON types match_mapping_type names, in the
// server's order.
var templateTypes = []string{"object", "string", "long", "double", "boolean", "date", "binary"}

// parseDynamicTemplates parses a mapping's dynamic_templates: an array of
// objects, each holding one named template.
func parseDynamicTemplates(v any) ([]dynTemplate, *osError) {
	list, ok := v.([]any)
	if !ok {
		return nil, &osError{Status: 400, Type: "mapper_parsing_exception", Reason: "Dynamic template syntax error. An array of named objects is expected."}
	}
	out := make([]dynTemplate, 0, len(list))
	for _, e := range list {
		named, ok := e.(map[string]any)
		if !ok || len(named) != 1 {
			return nil, &osError{Status: 400, Type: "mapper_parsing_exception", Reason: "A dynamic template must be defined with a name"}
		}
		for name, body := range named {
			conf, ok := body.(map[string]any)
			if !ok {
				return nil, &osError{Status: 400, Type: "mapper_parsing_exception", Reason: "A dynamic template must be defined with a name"}
			}
			t, err := parseDynamicTemplate(name, conf)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
	}
	return out, nil
}

func parseDynamicTemplate(name string, conf map[string]any) (dynTemplate, *osError) {
	t := dynTemplate{name: name}
	pattern := ""
	for _, k := range sortedNames(conf) {
		v := conf[k]
		s := scalarString(v)
		switch k {
		case "match":
			t.match = &s
		case "unmatch":
			t.unmatch = &s
		case "path_match":
			t.pathMatch = &s
		case "path_unmatch":
			t.pathUnmatch = &s
		case "match_pattern":
			pattern = s
		case "match_mapping_type":
			if s != "*" {
				known := false
				for _, typ := range templateTypes {
					known = known || typ == s
				}
				if !known {
					return t, illegalArgument("No field type matched on [" + s + "], possible values are [" + strings.Join(templateTypes, ", ") + "]")
				}
				t.matchType = s
			}
		case "mapping":
			m, ok := v.(map[string]any)
			if !ok {
				return t, &osError{Status: 400, Type: "mapper_parsing_exception", Reason: "template must have mapping set"}
			}
			t.mapping = m
		default:
			return t, illegalArgument("Illegal dynamic template parameter: [" + k + "]")
		}
	}
	switch pattern {
	case "", "simple":
	case "regex":
		t.regex = true
		for _, p := range []*string{t.match, t.unmatch, t.pathMatch, t.pathUnmatch} {
			if p != nil {
				if _, err := regexp.Compile(*p); err != nil {
					return t, &osError{Status: 501, Type: "osfake_not_implemented", Reason: "osfake: match_pattern regex [" + *p + "] is not a regular expression Go reads"}
				}
			}
		}
	default:
		return t, illegalArgument("No matching pattern matched on [" + pattern + "]")
	}
	if t.mapping == nil {
		return t, &osError{Status: 400, Type: "mapper_parsing_exception", Reason: "template must have mapping set"}
	}
	return t, nil
}

// matches is DynamicTemplate.match for a field at path whose last name
// is name and whose value has the JSON type jsonType.
func (t *dynTemplate) matches(path, name, jsonType string) bool {
	switch {
	case t.pathMatch != nil && !t.patternMatch(*t.pathMatch, path),
		t.match != nil && !t.patternMatch(*t.match, name),
		t.pathUnmatch != nil && t.patternMatch(*t.pathUnmatch, path),
		t.unmatch != nil && t.patternMatch(*t.unmatch, name),
		t.matchType != "" && t.matchType != jsonType:
		return false
	}
	return true
}

func (t *dynTemplate) patternMatch(pattern, s string) bool {
	if t.regex {
		re, err := regexp.Compile("^(?:" + pattern + ")$")
		return err == nil && re.MatchString(s)
	}
	return simpleMatch(pattern, s)
}

// simpleMatch is Regex.simpleMatch: * matches any run of characters.
func simpleMatch(pattern, s string) bool {
	first, rest, wild := strings.Cut(pattern, "*")
	if !wild {
		return pattern == s
	}
	if !strings.HasPrefix(s, first) {
		return false
	}
	s = s[len(first):]
	if rest == "" {
		return true
	}
	for i := 0; i <= len(s); i++ {
		if simpleMatch(rest, s[i:]) {
			return true
		}
	}
	return false
}

// templateSpec is the mapping the template gives a field: placeholders
// replaced in keys and string values, and the default type of the value
// (defaultType) when the template names none.
func (t *dynTemplate) templateSpec(name, defaultType string) map[string]any {
	spec := substitute(t.mapping, name, defaultType).(map[string]any)
	if _, ok := spec["type"]; !ok {
		spec["type"] = defaultType
	}
	return spec
}

func substitute(v any, name, dynType string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[substitute(k, name, dynType).(string)] = substitute(e, name, dynType)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = substitute(e, name, dynType)
		}
		return out
	case string:
		x = strings.ReplaceAll(x, "{name}", name)
		x = strings.ReplaceAll(x, "{dynamic_type}", dynType)
		return strings.ReplaceAll(x, "{dynamicType}", dynType)
	}
	return v
}

// jsonFieldType is the XContentFieldType of a value and the field type
// dynamic mapping gives it by default (its {dynamic_type}).
func jsonFieldType(v any) (jsonType, defaultType string) {
	switch x := v.(type) {
	case map[string]any:
		return "object", "object"
	case string:
		return "string", "text"
	case bool:
		return "boolean", "boolean"
	case json.Number:
		if isIntegerLiteral(x) {
			return "long", "long"
		}
		return "double", "float"
	}
	return "", ""
}

// dynamicMapping is the mapping dynamic mapping gives a new field at
// path named name with value v (one value, not an array): the first
// matching template's, else the default: text with a keyword sub-field
// for a string, long for an integer, float for another number, boolean,
// object. typ is the mapping's type ("object" or "nested" for objects).
func (m *mapping) dynamicMapping(path, name string, v any) (spec map[string]any, typ string, err *osError) {
	jsonType, defaultType := jsonFieldType(v)
	for i := range m.templates {
		t := &m.templates[i]
		if !t.matches(path, name, jsonType) {
			continue
		}
		spec = t.templateSpec(name, defaultType)
		typ = scalarString(spec["type"])
		if !fieldTypes[typ] {
			return nil, "", &osError{Status: 400, Type: "mapper_parsing_exception", Reason: "failed to find type parsed [" + typ + "] for [" + name + "]"}
		}
		return spec, typ, nil
	}
	switch defaultType {
	case "text":
		return map[string]any{"type": "text", "fields": map[string]any{"keyword": map[string]any{"type": "keyword", "ignore_above": json.Number("256")}}}, "text", nil
	case "object":
		return map[string]any{"type": "object"}, "object", nil
	}
	return map[string]any{"type": defaultType}, defaultType, nil
}
