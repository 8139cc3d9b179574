package osfake

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// mapping is an index mapping: _routing, _meta, dynamic and the field
// properties. fields indexes every leaf field by its dotted path (with
// multi-field sub-fields such as "name.keyword") to its type.
type mapping struct {
	routingRequired bool
	meta            map[string]any // nil when absent
	dynamic         string         // "true" (default), "false" or "strict"
	properties      map[string]any
	fields          map[string]string
	join            *joinField
	// templates are the parsed dynamic_templates, rawTemplates the
	// array as given (nil when none were ever given).
	templates    []dynTemplate
	rawTemplates []any
	// objectDynamic is the dynamic setting of each object that has one,
	// by dotted path.
	objectDynamic map[string]string
}

// joinField is the index's join field: its name and relations, parent →
// children.
type joinField struct {
	name      string
	relations map[string][]string
}

// parentOf returns the parent relation of child, if it is a child.
func (j *joinField) parentOf(child string) (string, bool) {
	for p, cs := range j.relations {
		for _, c := range cs {
			if c == child {
				return p, true
			}
		}
	}
	return "", false
}

func (j *joinField) known(name string) bool {
	if _, ok := j.relations[name]; ok {
		return true
	}
	_, ok := j.parentOf(name)
	return ok
}

func (m *mapping) clone() mapping {
	b, _ := json.Marshal(m.toJSON())
	var raw map[string]any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	dec.Decode(&raw)
	var c mapping
	c.merge(raw)
	c.meta = m.meta
	if m.meta == nil {
		c.meta = nil
	}
	return c
}

// fieldTypes the emulator understands; others are stored and reported but
// searched as keyword.
var fieldTypes = map[string]bool{
	"keyword": true, "text": true, "long": true, "integer": true, "short": true, "byte": true,
	"double": true, "float": true, "half_float": true, "scaled_float": true, "boolean": true,
	"geo_point": true, "join": true, "date": true, "object": true, "nested": true,
}

// merge applies a put-mapping body: new fields are added, a changed field
// type is an error, a given _meta replaces the old one whole (the server
// does not merge _meta keys), _routing and dynamic are set if given.
func (m *mapping) merge(body map[string]any) *osError {
	for k, v := range body {
		switch k {
		case "_routing":
			r, ok := v.(map[string]any)
			if !ok {
				return &osError{Status: 400, Type: "mapper_parsing_exception", Reason: "[_routing] must be an object"}
			}
			if req, ok := r["required"]; ok {
				b, ok := req.(bool)
				if !ok {
					return &osError{Status: 400, Type: "mapper_parsing_exception", Reason: "[_routing.required] must be a boolean"}
				}
				m.routingRequired = b
			}
		case "_meta":
			meta, ok := v.(map[string]any)
			if !ok {
				return &osError{Status: 400, Type: "mapper_parsing_exception", Reason: "[_meta] must be an object"}
			}
			m.meta = meta
		case "dynamic":
			m.dynamic = scalarString(v)
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return &osError{Status: 400, Type: "mapper_parsing_exception", Reason: "[properties] must be an object"}
			}
			if m.properties == nil {
				m.properties = map[string]any{}
			}
			if err := m.mergeProps("", m.properties, props); err != nil {
				return err
			}
		case "dynamic_templates":
			ts, err := parseDynamicTemplates(v)
			if err != nil {
				return err
			}
			// A put mapping replaces the templates whole.
			m.templates, m.rawTemplates = ts, v.([]any)
		case "_source", "date_detection", "numeric_detection":
			// Accepted and ignored.
		default:
			return &osError{Status: 400, Type: "mapper_parsing_exception", Reason: "Root mapping definition has unsupported parameters:  [" + k + " : " + fmt.Sprint(v) + "]"}
		}
	}
	m.reindexFields()
	return nil
}

func (m *mapping) mergeProps(prefix string, dst, src map[string]any) *osError {
	names := make([]string, 0, len(src))
	for n := range src {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		spec, ok := src[name].(map[string]any)
		if !ok {
			return &osError{Status: 400, Type: "mapper_parsing_exception", Reason: "Expected map for property [fields] on field [" + name + "]"}
		}
		path := prefix + name
		typ, _ := spec["type"].(string)
		if typ == "" {
			if _, ok := spec["properties"]; ok {
				typ = "object"
			} else {
				return &osError{Status: 400, Type: "mapper_parsing_exception", Reason: "No type specified for field [" + path + "]"}
			}
		}
		if !fieldTypes[typ] {
			return &osError{Status: 400, Type: "mapper_parsing_exception", Reason: "No handler for type [" + typ + "] declared on field [" + path + "]"}
		}
		if old, ok := dst[name].(map[string]any); ok {
			oldType, _ := old["type"].(string)
			if oldType == "" {
				oldType = "object"
			}
			if oldType != typ {
				return illegalArgument("mapper [" + path + "] cannot be changed from type [" + oldType + "] to [" + typ + "]")
			}
			if typ == "object" || typ == "nested" {
				sub, _ := spec["properties"].(map[string]any)
				oldSub, _ := old["properties"].(map[string]any)
				if oldSub == nil {
					oldSub = map[string]any{}
					old["properties"] = oldSub
				}
				if err := m.mergeProps(path+".", oldSub, sub); err != nil {
					return err
				}
			}
			continue
		}
		if typ == "join" {
			if m.join != nil && m.join.name != path {
				return illegalArgument("Field [" + path + "] is defining a second join field [" + m.join.name + "] in the same mapping")
			}
		}
		dst[name] = spec
	}
	return nil
}

// reindexFields rebuilds the dotted-path index and the join field.
func (m *mapping) reindexFields() {
	m.fields = map[string]string{}
	m.objectDynamic = map[string]string{}
	var walk func(prefix string, props map[string]any)
	walk = func(prefix string, props map[string]any) {
		for name, v := range props {
			spec, _ := v.(map[string]any)
			path := prefix + name
			typ, _ := spec["type"].(string)
			if sub, ok := spec["properties"].(map[string]any); ok {
				walk(path+".", sub)
				if typ == "" {
					typ = "object"
				}
			}
			if d, ok := spec["dynamic"]; ok && isObjectType(typ) {
				m.objectDynamic[path] = scalarString(d)
			}
			m.fields[path] = typ
			if multi, ok := spec["fields"].(map[string]any); ok {
				for sn, sv := range multi {
					sspec, _ := sv.(map[string]any)
					st, _ := sspec["type"].(string)
					m.fields[path+"."+sn] = st
				}
			}
			if typ == "join" {
				j := &joinField{name: path, relations: map[string][]string{}}
				rel, _ := spec["relations"].(map[string]any)
				for p, c := range rel {
					switch x := c.(type) {
					case string:
						j.relations[p] = []string{x}
					case []any:
						for _, e := range x {
							if s, ok := e.(string); ok {
								j.relations[p] = append(j.relations[p], s)
							}
						}
					}
				}
				m.join = j
			}
		}
	}
	walk("", m.properties)
}

// fieldType returns the mapped type of a dotted field path, or "".
func (m *mapping) fieldType(path string) string { return m.fields[path] }

// toJSON renders the mapping as GET _mapping shows it.
func (m *mapping) toJSON() map[string]any {
	out := map[string]any{}
	if m.routingRequired {
		out["_routing"] = map[string]any{"required": true}
	}
	if m.meta != nil {
		out["_meta"] = m.meta
	}
	if m.dynamic != "" {
		out["dynamic"] = m.dynamic
	}
	if m.rawTemplates != nil {
		out["dynamic_templates"] = m.rawTemplates
	}
	if len(m.properties) > 0 {
		out["properties"] = m.properties
	}
	return out
}
