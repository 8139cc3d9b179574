package osfake

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// _bulk: the NDJSON body is parsed exactly as BulkRequestParser parses
// it, validated as BulkRequest.validate does (any error fails the whole
// request, nothing applied), and then each item is applied on its own
// through the write path in docs.go, with its own status in the response.

// bulkDefaults are the URL's defaults for every item.
type bulkDefaults struct {
	index, routing, pipeline string
	requireAlias             bool
}

// parseBulk reads action and source lines. Line numbers in errors count
// every line, blank ones included; a blank action line is skipped; a
// source line has a trailing '\r' trimmed; delete has no source line.
func parseBulk(body []byte, def bulkDefaults) ([]op, *osError) {
	ops := make([]op, 0, bytes.Count(body, []byte{'\n'})/2+1)
	line, from := 0, 0
	for {
		next, err := nextMarker(body, from)
		if err != nil {
			return nil, err
		}
		if next < 0 {
			break
		}
		line++
		action := body[from:next]
		from = next + 1
		o, skip, err := parseAction(action, line, def)
		if err != nil {
			return nil, err
		}
		if skip {
			continue
		}
		if o.kind != opDelete {
			if next, err = nextMarker(body, from); err != nil {
				return nil, err
			}
			if next < 0 {
				break // an action without its source line is dropped, as on the server
			}
			line++
			src := body[from:next]
			if len(src) > 0 && src[len(src)-1] == '\r' {
				src = src[:len(src)-1]
			}
			from = next + 1
			if o.kind == opUpdate {
				if o.version != versionMatchAny || o.vtype != versionInternal {
					return nil, illegalArgument("Update requests do not support versioning. Please use `if_seq_no` and `if_primary_term` instead")
				}
				if o.upd, err = parseUpdateBody(src); err != nil {
					return nil, err
				}
			} else {
				o.source = src
			}
		}
		ops = append(ops, o)
	}
	return ops, nil
}

func nextMarker(body []byte, from int) (int, *osError) {
	if i := bytes.IndexByte(body[from:], '\n'); i >= 0 {
		return from + i, nil
	}
	if from != len(body) {
		return -1, illegalArgument(`The bulk request must be terminated by a newline [\n]`)
	}
	return -1, nil
}

// parseAction parses {"<action>": {<metadata>}}. skip is set for a blank
// line. Ordinary lines take the fast path; anything it does not handle
// (escapes, objects, bad syntax) is parsed token by token, which reports
// errors the way the server does.
func parseAction(line []byte, n int, def bulkDefaults) (o op, skip bool, err *osError) {
	if o, skip, ok, err := parseActionFast(line, n, def); ok {
		return o, skip, err
	}
	return parseActionSlow(line, n, def)
}

// parseActionSlow parses an action line token by token.
func parseActionSlow(line []byte, n int, def bulkDefaults) (o op, skip bool, err *osError) {
	ln := strconv.Itoa(n)
	malformed := func(what string) *osError {
		return illegalArgument("Malformed action/metadata line [" + ln + "], " + what)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	tok, jerr := dec.Token()
	if jerr == io.EOF {
		return o, true, nil
	}
	if jerr != nil {
		return o, false, jsonParseError(jerr)
	}
	if tok != json.Delim('{') {
		return o, false, malformed("expected START_OBJECT but found [" + xToken(tok) + "]")
	}
	if tok, jerr = dec.Token(); jerr != nil {
		return o, false, jsonParseError(jerr)
	}
	action, ok := tok.(string)
	if !ok {
		return o, false, malformed("expected FIELD_NAME but found [" + xToken(tok) + "]")
	}
	switch action {
	case "index":
		o = newOp(opIndex)
	case "create":
		o = newOp(opCreate)
	case "update":
		o = newOp(opUpdate)
	case "delete":
		o = newOp(opDelete)
	default:
		return o, false, malformed("expected one of [create, delete, index, update] but found [" + action + "]")
	}
	o.index, o.routing, o.pipeline, o.requireAlias = def.index, def.routing, def.pipeline, def.requireAlias
	if tok, jerr = dec.Token(); jerr != nil {
		return o, false, jsonParseError(jerr)
	}
	if tok == json.Delim('}') {
		return o, false, nil
	}
	if tok != json.Delim('{') {
		return o, false, malformed("expected START_OBJECT or END_OBJECT but found [" + xToken(tok) + "]")
	}
	var opType string
	for {
		if tok, jerr = dec.Token(); jerr != nil {
			return o, false, jsonParseError(jerr)
		}
		if tok == json.Delim('}') {
			break
		}
		key, _ := tok.(string)
		if tok, jerr = dec.Token(); jerr != nil {
			return o, false, jsonParseError(jerr)
		}
		switch tok {
		case nil:
			continue // a null value is ignored, even for an unknown key
		case json.Delim('['):
			return o, false, malformed("expected a simple value for field [" + key + "] but found [START_ARRAY]")
		case json.Delim('{'):
			if key != "_source" {
				return o, false, malformed("expected a simple value for field [" + key + "] but found [START_OBJECT]")
			}
			if jerr = skipValue(dec); jerr != nil {
				return o, false, jsonParseError(jerr)
			}
			continue
		}
		if err := o.setMeta(key, tok, ln, &opType); err != nil {
			return o, false, err
		}
	}
	if o.kind == opIndex && opType == "create" {
		o.kind = opCreate
	}
	return o, false, nil
}

// parseActionFast parses an action line made of an object holding one
// object of scalar values, with strings free of escapes. ok is false when
// the line is anything else.
func parseActionFast(line []byte, n int, def bulkDefaults) (o op, skip, ok bool, err *osError) {
	p := lineScanner{b: line}
	if p.skipSpace(); p.i == len(p.b) {
		return o, true, true, nil
	}
	if !p.next('{') {
		return o, false, false, nil
	}
	action, good := p.plainString()
	if !good || !p.next(':') {
		return o, false, false, nil
	}
	switch action {
	case "index":
		o = newOp(opIndex)
	case "create":
		o = newOp(opCreate)
	case "update":
		o = newOp(opUpdate)
	case "delete":
		o = newOp(opDelete)
	default:
		return o, false, false, nil
	}
	o.index, o.routing, o.pipeline, o.requireAlias = def.index, def.routing, def.pipeline, def.requireAlias
	if !p.next('{') {
		return o, false, false, nil
	}
	ln := ""
	var opType string
	if !p.next('}') {
		for {
			key, good := p.plainString()
			if !good || !p.next(':') {
				return o, false, false, nil
			}
			tok, good := p.scalar()
			if !good {
				return o, false, false, nil
			}
			if tok != nil {
				if ln == "" {
					ln = strconv.Itoa(n)
				}
				if err := o.setMeta(key, tok, ln, &opType); err != nil {
					return o, false, true, err
				}
			}
			if p.next(',') {
				continue
			}
			if p.next('}') {
				break
			}
			return o, false, false, nil
		}
	}
	if o.kind == opIndex && opType == "create" {
		o.kind = opCreate
	}
	return o, false, true, nil
}

// lineScanner reads the simple JSON of an ordinary action line.
type lineScanner struct {
	b []byte
	i int
}

func (p *lineScanner) skipSpace() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\r' || p.b[p.i] == '\n') {
		p.i++
	}
}

// next consumes c after optional whitespace.
func (p *lineScanner) next(c byte) bool {
	p.skipSpace()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// plainString reads a string without escapes or control characters.
func (p *lineScanner) plainString() (string, bool) {
	if !p.next('"') {
		return "", false
	}
	start := p.i
	for ; p.i < len(p.b); p.i++ {
		switch c := p.b[p.i]; {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			return string(s), utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return "", false
		}
	}
	return "", false
}

// scalar reads a plain string, a number, true, false or null.
func (p *lineScanner) scalar() (json.Token, bool) {
	p.skipSpace()
	if p.i == len(p.b) {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '"':
		return p.plainString()
	case c == '-' || c >= '0' && c <= '9':
		start := p.i
		for p.i < len(p.b) && strings.IndexByte("+-.eE0123456789", p.b[p.i]) >= 0 {
			p.i++
		}
		num := p.b[start:p.i]
		return json.Number(num), json.Valid(num)
	}
	for _, lit := range [...]struct {
		word string
		tok  json.Token
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if bytes.HasPrefix(p.b[p.i:], []byte(lit.word)) {
			p.i += len(lit.word)
			return lit.tok, true
		}
	}
	return nil, false
}

// setMeta applies one metadata key.
func (o *op) setMeta(key string, tok json.Token, line string, opType *string) *osError {
	var err *osError
	switch key {
	case "_index":
		o.index = tokenText(tok)
	case "_id":
		o.id, o.hasID = tokenText(tok), true
	case "routing":
		o.routing = tokenText(tok)
	case "op_type":
		*opType = tokenText(tok)
	case "version":
		o.version, err = tokenLong(tok)
	case "version_type":
		o.vtype, err = parseVersionType(tokenText(tok))
	case "if_seq_no":
		if o.ifSeqNo, err = tokenLong(tok); err == nil && o.ifSeqNo < 0 && o.ifSeqNo != unassignedSeqNo {
			err = illegalArgument("sequence numbers must be non negative. got [" + strconv.FormatInt(o.ifSeqNo, 10) + "].")
		}
	case "if_primary_term":
		if o.ifTerm, err = tokenLong(tok); err == nil && o.ifTerm < 0 {
			err = illegalArgument("primary term must be non negative. got [" + strconv.FormatInt(o.ifTerm, 10) + "]")
		}
	case "retry_on_conflict":
		var n int64
		n, err = tokenLong(tok)
		o.retryOnConflict = int(n)
	case "pipeline":
		o.pipeline = tokenText(tok)
	case "_source":
		// Selects the source an update item returns; not emulated.
	case "require_alias":
		o.requireAlias, err = strictBool(tokenText(tok))
	default:
		return illegalArgument("Action/metadata line [" + line + "] contains an unknown parameter [" + key + "]")
	}
	return err
}

// skipValue consumes the rest of an object or array whose opening
// delimiter was just read.
func skipValue(dec *json.Decoder) error {
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

// xToken is the XContentParser.Token name of a decoded token.
func xToken(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return "START_OBJECT"
		case '}':
			return "END_OBJECT"
		case '[':
			return "START_ARRAY"
		}
		return "END_ARRAY"
	}
	return xValueToken(tok)
}

func xValueToken(v any) string {
	switch x := v.(type) {
	case string:
		return "VALUE_STRING"
	case json.Number:
		return "VALUE_NUMBER"
	case bool:
		if x {
			return "VALUE_TRUE"
		}
		return "VALUE_FALSE"
	case nil:
		return "VALUE_NULL"
	case map[string]any:
		return "START_OBJECT"
	case []any:
		return "START_ARRAY"
	}
	return "VALUE_EMBEDDED_OBJECT"
}

// tokenText is parser.text() of a scalar.
func tokenText(tok json.Token) string {
	switch t := tok.(type) {
	case string:
		return t
	case json.Number:
		return t.String()
	case bool:
		return strconv.FormatBool(t)
	}
	return ""
}

// tokenLong is parser.longValue(): numbers and numeric strings, decimals
// truncated.
func tokenLong(tok json.Token) (int64, *osError) {
	if b, ok := tok.(bool); ok {
		return 0, &osError{Status: 400, Type: "json_parse_exception",
			Reason: "Current token (" + xValueToken(b) + ") not numeric, can not use numeric value accessors"}
	}
	return parseLong(tokenText(tok))
}

func parseLong(s string) (int64, *osError) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return int64(f), nil
	}
	return 0, &osError{Status: 400, Type: "number_format_exception", Reason: "For input string: \"" + s + "\""}
}

func strictBool(s string) (bool, *osError) {
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, illegalArgument("Failed to parse value [" + s + "] as only [true] or [false] are allowed.")
}

// jsonParseError is the exception Jackson raises for bad JSON: its
// JsonEOFException for input that ends early (rendered
// json_e_o_f_exception), JsonParseException otherwise. The reason is Go's
// wording, not Jackson's.
func jsonParseError(err error) *osError {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return &osError{Status: 400, Type: "json_e_o_f_exception", Reason: "Unexpected end-of-input: " + err.Error()}
	}
	return &osError{Status: 400, Type: "json_parse_exception", Reason: err.Error()}
}

// parseUpdateBody is UpdateRequest.fromXContent: doc, upsert,
// doc_as_upsert, detect_noop, script; other keys are ignored.
func parseUpdateBody(src []byte) (*updateSpec, *osError) {
	u := &updateSpec{detectNoop: true}
	if len(bytes.TrimSpace(src)) == 0 {
		return u, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(src, &m); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return nil, &osError{Status: 400, Type: "x_content_parse_exception", Reason: "[UpdateRequest] the update request must be an object"}
		}
		return nil, jsonParseError(err)
	}
	for k, raw := range m {
		if string(raw) == "null" {
			continue
		}
		var err *osError
		switch k {
		case "doc", "upsert":
			if !isObject(raw) {
				return nil, &osError{Status: 400, Type: "x_content_parse_exception", Reason: "[UpdateRequest] [" + k + "] must be an object"}
			}
			if k == "doc" {
				u.doc = raw
			} else {
				u.upsert = raw
			}
		case "doc_as_upsert":
			u.docAsUpsert, err = strictBool(strings.Trim(string(raw), `"`))
		case "detect_noop":
			u.detectNoop, err = strictBool(strings.Trim(string(raw), `"`))
		case "script":
			u.script = true
		}
		if err != nil {
			return nil, err
		}
	}
	return u, nil
}

// refreshPolicy is WriteRequest.RefreshPolicy.
type refreshPolicy uint8

const (
	refreshNone refreshPolicy = iota
	refreshImmediate
	refreshWaitFor
)

func parseRefresh(q *request) (refreshPolicy, *osError) {
	v, ok := q.query["refresh"]
	switch {
	case !ok || v == "false":
		return refreshNone, nil
	case v == "" || v == "true":
		return refreshImmediate, nil
	case v == "wait_for":
		return refreshWaitFor, nil
	}
	return refreshNone, illegalArgument("Unknown value for refresh: [" + v + "].")
}

// finishWrites refreshes the shards a request wrote to, for refresh=true
// and refresh=wait_for. wait_for does not wait for the periodic refresh:
// the emulator refreshes at once, which a client cannot tell from a
// refresh interval that happened to end just then. Callers hold mu.
func (wc *writeCtx) finishWrites(p refreshPolicy) {
	if p == refreshNone {
		return
	}
	for sh := range wc.shards {
		sh.refresh()
	}
}

func (s *Server) handleBulk(w http.ResponseWriter, q *request) {
	start := time.Now()
	refresh, err := parseRefresh(q)
	if err != nil {
		writeError(w, err)
		return
	}
	def := bulkDefaults{index: q.vars["index"], routing: q.param("routing"), pipeline: q.param("pipeline")}
	if def.requireAlias, err = requireAliasParam(q); err != nil {
		writeError(w, err)
		return
	}
	if len(q.body) == 0 {
		writeError(w, parseError("request body is required"))
		return
	}
	ops, err := parseBulk(q.body, def)
	if err != nil {
		writeError(w, err)
		return
	}
	var msgs []string
	if len(ops) == 0 {
		msgs = append(msgs, "no requests added")
	}
	for i := range ops {
		msgs = ops[i].validate(msgs)
	}
	if len(msgs) > 0 {
		writeError(w, validationError(msgs))
		return
	}
	if d := s.bulkLatency(ops); d > 0 {
		time.Sleep(d)
	}

	s.mu.Lock()
	wc := s.newWriteCtx(true)
	results := make([]itemResult, len(ops))
	for i := range ops {
		results[i] = s.apply(&ops[i], wc)
	}
	wc.finishWrites(refresh)
	drop := s.faults.takeDrop()
	s.mu.Unlock()

	b := renderBulk(time.Since(start), results, refresh == refreshImmediate)
	if drop {
		writeTruncated(w, 200, json.RawMessage(b))
		return
	}
	writeRaw(w, 200, b)
}

// requireAliasParam reads ?require_alias; an empty value is the default,
// false (RestRequest.paramAsBoolean with a null default).
func requireAliasParam(q *request) (bool, *osError) {
	if v := q.param("require_alias"); v != "" {
		return strictBool(v)
	}
	return false, nil
}

// bulkLatency is the injected delay of a bulk: for each index, the set of
// shards its items write to, and the largest delay over them. It takes
// the lock briefly; the caller sleeps without it. Auto ids are chosen here
// so that the shard is known.
func (s *Server) bulkLatency(ops []op) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.faults.f.ShardLatency) == 0 {
		return 0
	}
	touched := map[string]map[int]bool{}
	for i := range ops {
		o := &ops[i]
		name, shardNum := o.index, 0 // a missing index is created with one shard
		routing := o.routing
		if s.indices[name] != nil || s.aliasExists(name) {
			ix, alias, err := s.resolveWrite(name, false)
			if err != nil {
				continue
			}
			if alias != nil && alias.IndexRouting != "" {
				routing = alias.IndexRouting
			}
			id := o.id
			if !o.hasID {
				if o.autoID == "" {
					o.autoID = s.newID()
				}
				id = o.autoID
			}
			name, shardNum = ix.name, ix.shardFor(routing, id)
		}
		if touched[name] == nil {
			touched[name] = map[int]bool{}
		}
		touched[name][shardNum] = true
	}
	var d time.Duration
	for name, shards := range touched {
		d = max(d, s.faults.latency(name, shards))
	}
	return d
}

// --- response rendering --------------------------------------------------
//
// Items are written by hand, in the server's key order, with the stored
// values as they are: a 1,000-item response costs one buffer.

func renderBulk(took time.Duration, results []itemResult, forced bool) []byte {
	b := make([]byte, 0, 64+len(results)*200)
	errs := false
	for i := range results {
		errs = errs || results[i].err != nil
	}
	b = append(b, `{"took":`...)
	b = strconv.AppendInt(b, took.Milliseconds(), 10)
	b = append(b, `,"errors":`...)
	b = strconv.AppendBool(b, errs)
	b = append(b, `,"items":[`...)
	for i := range results {
		if i > 0 {
			b = append(b, ',')
		}
		r := &results[i]
		r.forced = forced && r.err == nil
		b = append(b, `{"`...)
		b = append(b, r.kind.String()...)
		b = append(b, `":`...)
		b = r.appendJSON(b, true)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}
