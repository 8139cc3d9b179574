package osfake

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The fast path of action-line parsing: a hand-written scanner for the
// ordinary line, an object holding one object of plain scalars. Anything
// else falls back to the token-by-token parser in bulk_parse.go.

// parseActionFast parses an action line made of an object holding one
// object of scalar values, with strings free of escapes. ok is false when
// the line is anything else.
func parseActionFast(d *dialect, line []byte, n int, def bulkDefaults) (o op, skip, ok bool, err *osError) {
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
	if o, good = actionOp(action, def); !good || !p.next('{') {
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
				if err := o.setMeta(d, key, tok, ln, &opType); err != nil {
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
