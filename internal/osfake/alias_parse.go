package osfake

import (
	"encoding/json"
	"maps"
	"strings"
)

// Parsing the body of POST /_aliases the way IndicesAliasesRequest's
// ObjectParsers do, errors included. The server's parser nests its
// failures: whatever goes wrong inside the actions array is an
// x_content_parse_exception "[aliases] failed to parse field [actions]";
// inside an action object it is also "[alias_action] failed to parse
// field [add]"; and a value a field's setter rejects adds "[add] failed to
// parse field [x]" around the setter's exception. The root cause is the
// innermost parser exception (see rootcause.go). The [line:column]
// positions the server puts before each reason are left out.

// aliasActionFields are the fields each action accepts and how their
// values are read.
var aliasActionFields = map[string]map[string]aliasFieldKind{
	"add": {"index": fieldString, "indices": fieldStrings, "alias": fieldString, "aliases": fieldStrings,
		"filter": fieldObject, "routing": fieldRouting, "index_routing": fieldRouting, "search_routing": fieldRouting,
		"is_write_index": fieldBool, "is_hidden": fieldBool},
	"remove": {"index": fieldString, "indices": fieldStrings, "alias": fieldString, "aliases": fieldStrings,
		"must_exist": fieldBool},
	"remove_index": {"index": fieldString, "indices": fieldStrings, "alias": fieldString, "aliases": fieldStrings},
}

type aliasFieldKind int

const (
	fieldString  aliasFieldKind = iota // a string
	fieldStrings                       // a string or an array of scalars
	fieldObject                        // an object
	fieldRouting                       // a string or a number
	fieldBool                          // a boolean, or "true" or "false"
)

func xContentError(reason string) *osError {
	return &osError{Status: 400, Type: "x_content_parse_exception", Reason: reason}
}

// inActions is a failure inside the actions array.
func inActions(cause *osError) *osError {
	e := xContentError("[aliases] failed to parse field [actions]")
	e.CausedBy = cause
	return e
}

// inAction is a failure inside the object of one action.
func inAction(kind string, cause *osError) *osError {
	e := xContentError("[alias_action] failed to parse field [" + kind + "]")
	e.CausedBy = cause
	return inActions(e)
}

// inField is a value that the setter of an action's field rejects.
func inField(kind, field string, cause *osError) *osError {
	e := xContentError("[" + kind + "] failed to parse field [" + field + "]")
	e.CausedBy = cause
	return inAction(kind, e)
}

func unsupportedValue(parser, field string, v any) *osError {
	return xContentError("[" + parser + "] " + field + " doesn't support values of type: " + tokenName(v))
}

// nullAction is what the server answers for an action entry that names
// no action: its parser yields null and the request's validation trips
// over it.
var nullAction = &osError{Status: 400, Type: "null_pointer_exception",
	Reason: `Cannot invoke "org.opensearch.action.admin.indices.alias.IndicesAliasesRequest$AliasActions.validate()" because "aliasAction" is null`}

// parseAliasActions reads the body of POST /_aliases.
func parseAliasActions(body map[string]any) ([]aliasAction, *osError) {
	for _, k := range sortedNames(body) {
		if k != "actions" {
			return nil, xContentError("[aliases] unknown field [" + k + "]")
		}
	}
	var entries []any
	switch x := body["actions"].(type) {
	case nil:
		if _, given := body["actions"]; given {
			return nil, unsupportedValue("aliases", "actions", nil)
		}
	case []any:
		entries = x
	case map[string]any:
		entries = []any{x}
	default:
		return nil, unsupportedValue("aliases", "actions", x)
	}
	var acts []aliasAction
	for i := 0; i < len(entries); i++ {
		entry, ok := entries[i].(map[string]any)
		if !ok {
			// The array parser steps over a scalar and wants an object
			// next; an array it cannot read at all.
			if _, isArray := entries[i].([]any); isArray {
				return nil, inActions(&osError{Status: 400, Type: "illegal_state_exception", Reason: "expected value but got [START_ARRAY]"})
			}
			next := "END_ARRAY"
			if i+1 < len(entries) {
				next = tokenName(entries[i+1])
			}
			if next != "START_OBJECT" {
				return nil, inActions(xContentError("[alias_action] Expected START_OBJECT but was: " + next))
			}
			i++
			entry = entries[i].(map[string]any)
		}
		if len(entry) == 0 {
			return nil, inActions(nullAction)
		}
		kinds := sortedNames(entry)
		for _, kind := range kinds {
			if _, ok := aliasActionFields[kind]; !ok {
				return nil, inActions(xContentError("[alias_action] unknown field [" + kind + "]"))
			}
		}
		if len(kinds) > 1 {
			e := xContentError("Failed to build [alias_action] after last required field arrived")
			e.CausedBy = illegalArgument("Too many operations declared on operation entry")
			return nil, inActions(e)
		}
		a, err := parseAliasAction(kinds[0], entry[kinds[0]])
		if err != nil {
			return nil, err
		}
		acts = append(acts, a)
	}
	if len(acts) == 0 {
		return nil, illegalArgument("No action specified")
	}
	return acts, nil
}

// parseAliasAction reads one action object. Fields are read in name
// order: the server reads them in document order, so with several bad
// fields it may name another.
func parseAliasAction(kind string, spec any) (aliasAction, *osError) {
	a := aliasAction{kind: kind}
	fields := aliasActionFields[kind]
	m, ok := spec.(map[string]any)
	if !ok {
		return a, inActions(unsupportedValue("alias_action", kind, spec))
	}
	var err *osError
	for _, k := range sortedNames(m) {
		v := m[k]
		fk, ok := fields[k]
		if !ok {
			return a, inAction(kind, xContentError("["+kind+"] unknown field ["+k+"]"))
		}
		if err := checkAliasValue(kind, k, fk, v); err != nil {
			return a, err
		}
		switch k {
		case "index", "indices":
			if a.indices != nil {
				return a, inField(kind, k, illegalArgument("Only one of [index] and [indices] is supported"))
			}
			a.indices, err = aliasNames(kind, k, v)
		case "alias", "aliases":
			if kind == "remove_index" {
				return a, inField(kind, k, illegalArgument("["+k+"] is unsupported for [REMOVE_INDEX]"))
			}
			if a.aliases != nil {
				return a, inField(kind, k, illegalArgument("Only one of [alias] and [aliases] is supported"))
			}
			a.aliases, err = aliasNames(kind, k, v)
		case "must_exist":
			a.mustExist, _ = toBool(v)
		}
		if err != nil {
			return a, err
		}
	}
	// AliasActions.validate runs as the parser adds the action to the
	// request, so its IllegalArgumentException is a parse error too.
	if len(a.indices) == 0 {
		return a, inActions(illegalArgument("One of [index] or [indices] is required"))
	}
	if kind != "remove_index" && len(a.aliases) == 0 {
		return a, inActions(illegalArgument("One of [alias] or [aliases] is required"))
	}
	for _, k := range []string{"routing", "index_routing"} {
		if v, ok := m[k]; ok && strings.Contains(scalarString(v), ",") {
			return a, severalIndexRoutings(a.aliases[0])
		}
	}
	if kind == "add" {
		spec := maps.Clone(m)
		for _, k := range []string{"is_write_index", "is_hidden"} {
			if b, ok := toBool(spec[k]); ok {
				spec[k] = b
			}
		}
		meta, err := parseAliasSpec(spec)
		if err != nil {
			return a, err
		}
		a.meta = meta
	}
	return a, nil
}

// checkAliasValue rejects a value of the wrong JSON type for its field,
// as the field's declaration does, and a boolean string other than
// "true" or "false", as its setter does.
func checkAliasValue(kind, field string, fk aliasFieldKind, v any) *osError {
	ok := false
	switch fk {
	case fieldString:
		_, ok = v.(string)
	case fieldStrings:
		switch v.(type) {
		case string, []any:
			ok = true
		}
	case fieldObject:
		_, ok = v.(map[string]any)
	case fieldRouting:
		switch v.(type) {
		case string, json.Number:
			ok = true
		}
	case fieldBool:
		switch x := v.(type) {
		case bool:
			ok = true
		case string:
			if x != "true" && x != "false" {
				return inField(kind, field, illegalArgument("Failed to parse value ["+x+"] as only [true] or [false] are allowed."))
			}
			ok = true
		}
	}
	if !ok {
		return inAction(kind, unsupportedValue(kind, field, v))
	}
	return nil
}

// aliasNames reads the value of index, indices, alias or aliases (already
// of the right JSON type): numbers in an array are read as their text.
func aliasNames(kind, field string, v any) ([]string, *osError) {
	empty := func(what string) *osError {
		return inField(kind, field, illegalArgument("["+field+"] "+what))
	}
	switch x := v.(type) {
	case string:
		if strings.TrimSpace(x) == "" {
			if field == "index" || field == "alias" {
				return nil, empty("can't be empty string")
			}
			return nil, empty("can't be empty")
		}
		return []string{x}, nil
	case []any:
		if len(x) == 0 {
			return nil, empty("can't be empty")
		}
		out := make([]string, len(x))
		for i, e := range x {
			switch e.(type) {
			case []any, map[string]any:
				return nil, inField(kind, field, &osError{Status: 400, Type: "illegal_state_exception",
					Reason: "expected value but got [" + tokenName(e) + "]"})
			}
			s := scalarString(e)
			if strings.TrimSpace(s) == "" {
				return nil, empty("can't contain empty string")
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, nil
}

// aliasesNotFound is AliasesNotFoundException: "aliases [a, b] missing".
func aliasesNotFound(names []string) *osError {
	var id any = names
	if len(names) == 1 {
		id = names[0]
	}
	return &osError{Status: 404, Type: "aliases_not_found_exception",
		Reason: "aliases [" + strings.Join(names, ", ") + "] missing",
		Extra:  map[string]any{"resource.type": "aliases", "resource.id": id}}
}
