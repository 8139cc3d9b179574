package osfake

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Index settings: the flat "index.*" form the server stores, their
// validation and application to an index, and GET and PUT _settings.

// staticSettings cannot change once the index exists.
var staticSettings = map[string]bool{
	"index.number_of_shards":         true,
	"index.number_of_routing_shards": true,
	"index.routing_partition_size":   true,
	"index.codec":                    true,
	"index.provided_name":            true,
	"index.creation_date":            true,
	"index.uuid":                     true,
	"index.version.created":          true,
}

// flattenSettings turns {"index":{"refresh_interval":"1s"}},
// {"refresh_interval":"1s"} and {"index.refresh_interval":"1s"} alike into
// {"index.refresh_interval":"1s"}, values as strings (as the server stores
// them). A null value resets the setting to its default.
func flattenSettings(prefix string, v any, out map[string]*string) *osError {
	m, ok := v.(map[string]any)
	if !ok {
		return parseError("settings must be an object")
	}
	for k, val := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		switch x := val.(type) {
		case map[string]any:
			if err := flattenSettings(key, x, out); err != nil {
				return err
			}
			continue
		case nil:
			out[normSetting(key)] = nil
			continue
		}
		s := scalarString(val)
		out[normSetting(key)] = &s
	}
	return nil
}

func normSetting(k string) string {
	if !strings.HasPrefix(k, "index.") {
		return "index." + k
	}
	return k
}

// parseTimeValue parses an OpenSearch time value: "-1", "0", or a number
// with a unit nanos, micros, ms, s, m, h or d.
func parseTimeValue(setting, v string) (time.Duration, *osError) {
	if v == "-1" {
		return -1, nil
	}
	if v == "0" {
		return 0, nil
	}
	units := []struct {
		suffix string
		d      time.Duration
	}{{"nanos", time.Nanosecond}, {"micros", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			if n, err := strconv.ParseFloat(num, 64); err == nil && n >= 0 {
				return time.Duration(n * float64(u.d)), nil
			}
			break
		}
	}
	return 0, illegalArgument(fmt.Sprintf("failed to parse setting [%s] with value [%s] as a time value: unit is missing or unrecognized", setting, v))
}

func parsePositiveInt(setting, v string, min int) (int, *osError) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, illegalArgument(fmt.Sprintf("Failed to parse value [%s] for setting [%s]", v, setting))
	}
	if n < min {
		return 0, illegalArgument(fmt.Sprintf("Failed to parse value [%s] for setting [%s] must be >= %d", v, setting, min))
	}
	return n, nil
}

// applySettings validates and applies flat settings to ix. creating allows
// static settings.
func (ix *index) applySettings(set map[string]*string, creating bool) *osError {
	var static []string
	for k := range set {
		if staticSettings[k] && !creating {
			static = append(static, k)
		}
	}
	if len(static) > 0 {
		sort.Strings(static)
		return illegalArgument(fmt.Sprintf("Can't update non dynamic settings [[%s]] for open indices [[%s/%s]]",
			strings.Join(static, ", "), ix.name, ix.uuid))
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		pv := set[k]
		if pv == nil {
			delete(ix.settings, k)
		}
		val := ""
		if pv != nil {
			val = *pv
		}
		var err *osError
		switch k {
		case "index.number_of_shards":
			if pv != nil {
				ix.numShards, err = parsePositiveInt(k, val, 1)
				if err == nil && ix.numShards > 1024 {
					err = illegalArgument(fmt.Sprintf("Failed to parse value [%s] for setting [%s] must be <= 1024", val, k))
				}
			}
		case "index.number_of_routing_shards":
			if pv != nil {
				ix.rns, err = parsePositiveInt(k, val, 1)
			}
		case "index.number_of_replicas":
			ix.replicas = defaultNumberOfReplicas
			if pv != nil {
				ix.replicas, err = parsePositiveInt(k, val, 0)
			}
		case "index.refresh_interval":
			ix.refreshIntv = defaultRefreshInterval
			if pv != nil {
				ix.refreshIntv, err = parseTimeValue(k, val)
			}
		case "index.gc_deletes":
			ix.gcDeletes = defaultGCDeletes
			if pv != nil {
				ix.gcDeletes, err = parseTimeValue(k, val)
			}
		case "index.blocks.write":
			ix.blockWrite = pv != nil && val == "true"
		case "index.routing_partition_size":
			if pv != nil && val != "1" {
				err = illegalArgument("osfake: index.routing_partition_size other than 1 is not emulated")
			}
		}
		if err != nil {
			return err
		}
		if pv != nil {
			ix.settings[k] = val
		}
	}
	return nil
}

// settingsJSON renders settings nested ({"index":{"number_of_shards":"1"}})
// or flat, all values strings, as the server does.
func (ix *index) settingsJSON(flat bool) map[string]any {
	return settingsObject(ix.settings, flat)
}

// settingsObject renders flat settings as an answer gives them: as they
// are with flat_settings, else nested at each dot.
func settingsObject(set map[string]string, flat bool) map[string]any {
	if flat {
		out := map[string]any{}
		for k, v := range set {
			out[k] = v
		}
		return out
	}
	root := map[string]any{}
	for k, v := range set {
		parts := strings.Split(k, ".")
		m := root
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = v
	}
	return root
}

func (s *Server) handleGetSettings(w http.ResponseWriter, q *request) {
	s.writeEachIndex(w, orAll(q.vars["index"]), func(ix *index) map[string]any {
		return map[string]any{"settings": ix.settingsJSON(q.boolParam("flat_settings"))}
	})
}

func (s *Server) handlePutSettings(w http.ResponseWriter, q *request) {
	var body map[string]any
	if err := requireBody(q, &body); err != nil {
		writeError(w, err)
		return
	}
	if inner, ok := body["settings"]; ok && len(body) == 1 {
		body, _ = inner.(map[string]any)
	}
	set := map[string]*string{}
	if err := flattenSettings("", body, set); err != nil {
		writeError(w, err)
		return
	}
	s.updateEachIndex(w, q.vars["index"], func(ix *index) *osError {
		probe := *ix
		probe.settings = map[string]string{}
		return probe.applySettings(set, false)
	}, func(ix *index) {
		ix.applySettings(set, false)
		ix.settings["index.number_of_replicas"] = strconv.Itoa(ix.replicas)
	})
}
