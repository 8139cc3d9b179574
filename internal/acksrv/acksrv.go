// Package acksrv is a minimal HTTP server that acknowledges every _bulk
// item without storing anything: the fastest possible OpenSearch, used to
// measure a bulk client's own overhead. It reads each request body once,
// counts its action lines, and answers a well-formed bulk response in
// which every item is created (status 201). Test machinery only.
package acksrv

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Server is an acknowledging bulk endpoint.
type Server struct {
	*httptest.Server
	// Items counts the action lines received.
	Items atomic.Int64
	// Requests counts the bulk requests received.
	Requests atomic.Int64
	// Delay, in nanoseconds, is how long each bulk request waits before
	// it is answered (0: none), as a slow cluster would take.
	Delay atomic.Int64
}

var bufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Start listens on a random loopback port.
func Start() *Server {
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/" {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"name":"ack","cluster_name":"ack","version":{"distribution":"opensearch","number":"2.19.1"},"tagline":"The OpenSearch Project: https://opensearch.org/"}`))
		return
	}
	in := bufs.Get().(*bytes.Buffer)
	out := bufs.Get().(*bytes.Buffer)
	in.Reset()
	out.Reset()
	defer bufs.Put(in)
	defer bufs.Put(out)
	in.ReadFrom(r.Body)
	if d := s.Delay.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	out.WriteString(`{"took":1,"errors":false,"items":[`)
	n := 0
	body := in.Bytes()
	var num [20]byte
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		if len(line) == 0 {
			continue
		}
		// An action line starts with {"<action>":
		action := []byte("index")
		if len(line) > 3 {
			if end := bytes.IndexByte(line[2:], '"'); end > 0 {
				action = line[2 : 2+end]
			}
		}
		isDelete := string(action) == "delete"
		if !isDelete { // skip the source line
			if i := bytes.IndexByte(body, '\n'); i >= 0 {
				body = body[i+1:]
			} else {
				body = nil
			}
		}
		if n > 0 {
			out.WriteByte(',')
		}
		out.WriteString(`{"`)
		out.Write(action)
		out.WriteString(`":{"_index":"i","_id":"`)
		out.Write(strconv.AppendInt(num[:0], int64(n), 10))
		if isDelete {
			out.WriteString(`","_version":1,"result":"deleted","_shards":{"total":1,"successful":1,"failed":0},"_seq_no":0,"_primary_term":1,"status":200}}`)
		} else {
			out.WriteString(`","_version":1,"result":"created","_shards":{"total":1,"successful":1,"failed":0},"_seq_no":0,"_primary_term":1,"status":201}}`)
		}
		n++
	}
	out.WriteString(`]}`)
	s.Items.Add(int64(n))
	s.Requests.Add(1)
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Write(out.Bytes())
}
